"""`coop serve` as a real process: it delivers without `coop tick`, stops cleanly on
SIGTERM, and a SIGKILL at any moment loses nothing and sends nothing twice."""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from officekit import Office
from serving import started_serve
from waiting import wait_until

COOP = str(Path(sys.executable).with_name("coop"))
DAY = 86400  # the longest --interval serve takes


def coop_json(office: Office, *args: str) -> list[dict]:
    result = subprocess.run(
        [COOP, *args, "--json"], capture_output=True, text=True, env=office.env(), timeout=30
    )
    assert result.returncode == 0, result.stderr
    rows: list[dict] = json.loads(result.stdout)
    return rows


def serve(office: Office, log: Path, interval: str = "0.5") -> subprocess.Popen[bytes]:
    return started_serve([COOP, "serve", "--interval", interval], log, office.env())


def test_serve_delivers_a_new_invitation_at_once_not_at_its_next_interval(
    office: Office, tmp_path: Path
) -> None:
    """The invitation's write to the ledger wakes serve: with a day between its passes,
    the frame still arrives (and the acceptance is answered) within the hang bound."""
    chat = office.macs["office"].start()
    office.engine.add_todo("Fix the importer")
    log = tmp_path / "serve.log"
    server = serve(office, log, interval=str(DAY))
    try:
        invited = subprocess.run(
            [COOP, "invite", "1", "--session", chat.ref],
            capture_output=True,
            text=True,
            env=office.env(),
        )
        assert invited.returncode == 0, invited.stderr
        wait_until(
            chat.frames, "the invitation's frame, woken by coop invite", detail=log.read_text
        )
        wait_until(
            lambda: len([r for r in coop_json(office, "outbox") if r["state"] == "delivered"]) >= 2,
            "the invitation and the work delivered",
            detail=log.read_text,
        )
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0
    said = log.read_text()
    assert "invitation sent" in said and "accepted" in said and said.rstrip().endswith("stopped")


@pytest.mark.kill
def test_serve_killed_at_random_moments_sends_nothing_twice(office: Office, tmp_path: Path) -> None:
    chats = [office.macs["office"].start("--think", "0.05") for _ in range(3)]
    log = tmp_path / "serve.log"
    rng = random.Random(7)
    invited = 0
    for _kill in range(12):
        for chat in chats:
            invited += 1
            todo = office.engine.add_todo(f"todo {invited}")["id"]
            office.engine.invite(todo, chat.ref, "office")
        server = serve(office, log)
        time.sleep(rng.uniform(0.0, 0.6))
        server.kill()
        server.wait()
        rows = {row["id"]: row for row in coop_json(office, "outbox")}
        for chat in chats:
            counts = Counter(frame["msg_id"] for frame in chat.frames())
            assert all(n == 1 for n in counts.values()), f"a frame written twice: {counts}"
            for msg_id in counts:
                assert rows[msg_id]["state"] != "pending", (
                    "bytes reached a chat but the envelope looks unsent"
                )
    # A last, undisturbed run settles everything that was in flight.
    server = serve(office, log)

    def settled() -> tuple[dict[str, dict], set[str]] | None:
        rows = {row["id"]: row for row in coop_json(office, "outbox")}
        sent = {frame["msg_id"] for chat in chats for frame in chat.frames()}
        unsettled = [
            r
            for r in rows.values()
            if r["state"] == "pending" or (r["state"] == "uncertain" and r["id"] in sent)
        ]
        return None if unsettled else (rows, sent)

    try:
        rows, sent = wait_until(settled, "every envelope in flight settled", interval=0.3)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(10)
    for row in rows.values():
        if row["state"] == "uncertain":
            # Killed between the intent and the write: never sent, never guessed unsent.
            assert row["id"] not in sent and row["facts"]["transport"] is None


def test_obligations_become_overdue_at_their_due_time(office: Office) -> None:
    office.engine.add_todo("Take me")
    taken_at = office.clock.now
    office.engine.take_cli(1, None, "office")

    def tick(at: float) -> None:
        result = subprocess.run(
            [COOP, "tick", "--at", str(at)], capture_output=True, text=True, env=office.env()
        )
        assert result.returncode == 0, result.stderr

    tick(taken_at + 3 * 3600 - 1)
    assert coop_json(office, "obligations")[0]["state"] == "open"
    tick(taken_at + 3 * 3600)
    assert coop_json(office, "obligations")[0]["state"] == "overdue"
    (notice,) = coop_json(office, "notifications")
    assert notice["kind"] == "obligation overdue"
