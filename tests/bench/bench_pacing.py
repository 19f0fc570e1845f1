"""Benchmark of pacing: paced_burst.

N invitations to one simulated chat (a real `python -m hosts.sim chat`, which drops what
the real receiver drops), sent by coordinator passes run back to back (0.1 s apart), on
the real clock. The figure is the time from the first pass until the chat has received
every one; the baseline is the receiver's own limit, measured in the same run: the time
a burst of 30 (all its bucket holds) takes to be received, plus 2 s for each frame
beyond 30. The run fails if the chat dropped anything or an envelope did not arrive.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox
from hosts.mac.local import LocalHost
from hosts.sim.launch import SimChat, SimFleet
from tests.bench.common import report, run_main

BURST = 30
RECEIVER_INTERVAL = 2.0  # the receiver's bucket refills one frame every 2 s
SIZES = (36, 40)
PASS_GAP = 0.1
TIMEOUT = 120.0


def _quiet(_: str) -> None:
    pass


def _dropped(chat: SimChat) -> list[str]:
    """The chat's drop notices (a torn last line is skipped)."""
    found = []
    for line in chat.transcript.read_text().splitlines() if chat.transcript.exists() else []:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("subtype") == "informational" and "Dropped" in str(entry.get("content")):
            found.append(str(entry["content"]))
    return found


def _received_in(count: int) -> float:
    """Seconds from the first pass until a fresh chat has received ``count`` invitations."""
    root = Path(tempfile.mkdtemp(prefix="pace", dir="/tmp"))
    db = open_ledger(root / "home")
    engine = Engine(db)
    fleet = SimFleet(root / "claude")
    try:
        chat = fleet.start("--answer", "silent")
        host = LocalHost("office", config_dir=fleet.config_dir, managed_dir=root / "managed")
        coordinator = Coordinator(engine, {"office": host}, _quiet)
        ids = []
        for n in range(count):
            todo = engine.add_todo(f"Benchmark todo {n}")["id"]
            ids.append(engine.invite(todo, chat.ref, "office")["outbox"])
        waiting = Outbox.select().where(Outbox.id.in_(ids) & (Outbox.state != "delivered"))
        started = time.perf_counter()
        while waiting.count():
            if time.perf_counter() - started > TIMEOUT:
                raise RuntimeError(f"{waiting.count()} of {count} not received in {TIMEOUT}s")
            coordinator.tick()
            time.sleep(PASS_GAP)
        elapsed = time.perf_counter() - started
        if _dropped(chat):
            raise RuntimeError(f"the chat dropped frames: {_dropped(chat)}")
        return elapsed
    finally:
        fleet.stop_all()
        db.close()


def paced_burst() -> bool:
    burst = _received_in(BURST)
    results = []
    for size in SIZES:
        paced = _received_in(size)
        ideal = burst + (size - BURST) * RECEIVER_INTERVAL
        results.append(
            report(
                "paced_burst",
                paced / ideal,
                maximum=1.2,
                envelopes=size,
                received_s=paced,
                ideal_s=ideal,
                burst_of_30_s=burst,
            )
        )
    return all(results)


if __name__ == "__main__":
    run_main([paced_burst])
