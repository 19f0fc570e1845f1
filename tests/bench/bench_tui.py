"""Benchmark of the app: tui_scale.

The real app (headless, 160x48) over a ledger of 1,000 sessions and 100,000 outbox rows,
against the same ledger with 100 outbox rows: the time to first paint (mounted, the
outbox pane showing rows) and the time to apply one new event (an invitation committed
by another writer: from the ledger's signal until its row is in the pane). The history
must not cost: the pane shows a window of the newest envelopes, read through an index,
in one DataTable, a new envelope is added as one row and a changed one patched in place,
and the header's counts are read from the ledger's indexes (queries.status.header_counts:
grouping all 100,000 rows took about 0.06 s per event, most of what an event cost
more than at 100). What the pane and the ledger do per event is counted, at 100 and
10,000 envelopes, by tests/tui/test_scale.py. Each size is started five times,
alternating, and the medians compared.

    python -m tests.bench.bench_tui
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import peewee as pw

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.office import Office
from coop_engine.models import Event, Outbox, Session, Todo, database
from coop_tui.app import CoopApp
from coop_tui.messages import LedgerChanged
from hosts.fleet import Fleet
from tests.bench.common import report, run_main

SESSIONS = 1_000
SMALL, LARGE = 100, 100_000
ROUNDS = 5
EVENTS = 5
STATES = ("delivered", "delivered", "delivered", "expired", "pending", "uncertain", "cancelled")
T0 = 1_777_000_000.0


def build(home: Path, envelopes: int) -> None:
    """A ledger with SESSIONS chats and `envelopes` outbox rows (and an enqueue event
    each), written in bulk in one transaction: no engine command per row."""
    db = open_ledger(home)
    with db.atomic():
        Session.insert_many(
            {
                "vendor": "claude",
                "host": "office" if n % 3 else "laptop",
                "native_id": str(uuid.UUID(int=n + 1)),
                "mode": "managed",
                "surface": "native",
                "status": "idle",
                "name": f"chat-{n}",
                "created_at": T0,
                "updated_at": T0,
            }
            for n in range(SESSIONS)
        ).execute()
        Todo.insert(title="Benchmark", state="open", created_at=T0).execute()
        rows = (
            {
                "id": str(uuid.UUID(int=(1 << 64) + n)),
                "session": 1 + n % SESSIONS,
                "generation": 1,
                "kind": "invitation" if n % 2 else "work",
                "payload": {"todo": 1, "text": f"Envelope {n}"},
                "state": STATES[n % len(STATES)],
                "created_at": T0 + n,
                "updated_at": T0 + n,
            }
            for n in range(envelopes)
        )
        for batch in pw.chunked(rows, 500):
            Outbox.insert_many(batch).execute()
        events = (
            {
                "at": T0 + n,
                "who": "coop",
                "command": "enqueue",
                "subject": f"outbox:{uuid.UUID(int=(1 << 64) + n)}",
                "to_state": "pending",
            }
            for n in range(envelopes)
        )
        for batch in pw.chunked(events, 500):
            Event.insert_many(batch).execute()
    db.close()


def run_app(home: Path, paints: list[float], applies: list[float]) -> None:
    """One start of the app: its first paint, then EVENTS new invitations applied."""
    app = CoopApp(home, Office(Fleet("office", {})), coordinator="none", clock=lambda: T0 + LARGE)

    async def run() -> None:
        started = time.perf_counter()
        async with app.run_test(size=(160, 48)) as pilot:
            while app.outbox_pane.row_count == 0:
                await pilot.pause(0.001)
            paints.append(time.perf_counter() - started)
            while app._observer is None:
                await pilot.pause(0.001)
            # The signal is sent by hand, after the commit: what is measured is the
            # cost of applying a change, not when watchdog happens to notice it.
            app._observer.stop()
            await pilot.pause(0.3)
            for _ in range(EVENTS):
                applies.append(await one_event(app, pilot))

    asyncio.run(run())


async def one_event(app: CoopApp, pilot: Any) -> float:
    """Commit one invitation from another thread (as another writer would), then
    signal the app; the time from the signal until its row is in the outbox pane."""
    done = threading.Event()
    result: dict[str, Any] = {}

    def invite() -> None:
        engine = Engine(database.obj, clock=lambda: T0 + LARGE, actor="dad")
        result["id"] = engine.invite(1, f"claude:{uuid.UUID(int=7)}", "office")["outbox"]
        done.set()

    threading.Thread(target=invite).start()
    while not done.is_set():
        await pilot.pause(0.001)
    started = time.perf_counter()
    app.post_message(LedgerChanged())
    while result["id"] not in app.outbox_pane.rows_by_key:
        await pilot.pause(0.001)
    took = time.perf_counter() - started
    await pilot.pause(0.05)
    return took


def tui_scale() -> bool:
    root = Path(tempfile.mkdtemp(prefix="bench-tui-"))
    try:
        paints: dict[int, list[float]] = {SMALL: [], LARGE: []}
        applies: dict[int, list[float]] = {SMALL: [], LARGE: []}
        for envelopes in (SMALL, LARGE):
            started = time.perf_counter()
            build(root / f"home-{envelopes}", envelopes)
            print(f"# {envelopes} envelopes built in {time.perf_counter() - started:.1f}s")
        for _ in range(ROUNDS):  # alternated, so that a busy moment hits both sizes
            for envelopes in (SMALL, LARGE):
                run_app(root / f"home-{envelopes}", paints[envelopes], applies[envelopes])
    finally:
        shutil.rmtree(root, ignore_errors=True)
    paint_small, paint_large = (statistics.median(paints[n]) for n in (SMALL, LARGE))
    event_small, event_large = (statistics.median(applies[n]) for n in (SMALL, LARGE))
    paint_ratio = paint_large / paint_small
    event_ratio = event_large / event_small
    return report(
        "tui_scale",
        max(paint_ratio, event_ratio),
        maximum=3,
        sessions=SESSIONS,
        paint_100_s=paint_small,
        paint_100k_s=paint_large,
        paint_ratio=paint_ratio,
        event_100_s=event_small,
        event_100k_s=event_large,
        event_ratio=event_ratio,
    )


if __name__ == "__main__":
    run_main([tui_scale])
