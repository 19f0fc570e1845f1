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

COOP = str(Path(sys.executable).with_name("coop"))


def coop_json(office: Office, *args: str) -> list[dict]:
    result = subprocess.run(
        [COOP, *args, "--json"], capture_output=True, text=True, env=office.env(), timeout=30
    )
    assert result.returncode == 0, result.stderr
    rows: list[dict] = json.loads(result.stdout)
    return rows


def serve(office: Office, log: Path) -> subprocess.Popen[bytes]:
    handle = log.open("ab")
    process = subprocess.Popen(
        [COOP, "serve", "--interval", "0.5"],
        stdout=handle,
        stderr=subprocess.STDOUT,
        env=office.env(),
    )
    handle.close()
    deadline = time.monotonic() + 10
    while "serving" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return process


def test_serve_delivers_a_new_invitation_within_a_second_of_invite(
    office: Office, tmp_path: Path
) -> None:
    chat = office.macs["office"].start()
    office.engine.add_todo("Fix the importer")
    server = serve(office, tmp_path / "serve.log")
    try:
        started = time.monotonic()
        invited = subprocess.run(
            [COOP, "invite", "1", "--session", chat.ref],
            capture_output=True,
            text=True,
            env=office.env(),
        )
        assert invited.returncode == 0, invited.stderr
        while not chat.frames():
            assert time.monotonic() - started < 1.0, "no frame within a second of coop invite"
            time.sleep(0.02)
        deadline = time.monotonic() + 15
        while len([r for r in coop_json(office, "outbox") if r["state"] == "delivered"]) < 2:
            assert time.monotonic() < deadline, (tmp_path / "serve.log").read_text()
            time.sleep(0.2)
    finally:
        server.send_signal(signal.SIGTERM)
        assert server.wait(10) == 0
    log = (tmp_path / "serve.log").read_text()
    assert "invitation sent" in log and "accepted" in log and log.rstrip().endswith("stopped")


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
    try:
        deadline = time.monotonic() + 30
        while True:
            rows = {row["id"]: row for row in coop_json(office, "outbox")}
            sent = {frame["msg_id"] for chat in chats for frame in chat.frames()}
            unsettled = [
                r
                for r in rows.values()
                if r["state"] == "pending" or (r["state"] == "uncertain" and r["id"] in sent)
            ]
            if not unsettled:
                break
            assert time.monotonic() < deadline, unsettled
            time.sleep(0.3)
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
