"""DESIGN.md section 11: SIGKILL real delivery cycles at random points, many times.

A child process (kill_child.py) runs Coop's own delivery: coordinator passes through the
Claude door into a real simulated chat, over a real SQLite ledger and the chat's real
private socket. The test kills it and starts it again, many times: at random moments,
the moment the chat's inbox has the frame (when only the records after the write are
left to do), and the moment the ledger has the transport (the cycle's send is done).
After every kill, no envelope the chat received may look unsent, none may have been
sent twice, and the database must pass its integrity check. Coop records
its intent before the write, so a kill just after the write leaves an uncertain send,
never a pending one: moving the intent after the send in the door fails here.
"""

from __future__ import annotations

import json
import os
import random
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from waiting import wait_until

from hosts.sim.launch import SimChat, SimFleet

from .kill_child import SPEED

pytestmark = pytest.mark.kill

CHILD = Path(__file__).with_name("kill_child.py")
REPO = CHILD.parents[2]
MIN_KILLS = 60
MAX_KILLS = 300
AT_THE_WRITE = 3  # every third kill waits for a frame to reach the chat, then kills
# ... while that child pauses after each write before recording it (kill_child.py): the
# kill lands between the write and its record however loaded the machine. (A bound
# only: the kill comes as soon as the chat has the frame.)
PAUSE_AFTER_WRITE = 30.0
# The kill after each of those waits for one more transport in the ledger, while that
# child pauses after each pass: it lands between the record and the next cycle's todo.
AFTER_THE_PASS = 1
PAUSE_AFTER_PASS = 30.0
# Only bound a hang (a child that never gets ready, a chat that never reads).
READY_SECONDS = 60.0
HANG_SECONDS = 60.0
# Where a cycle was when the kill landed, from what the ledger and inbox show: the cycle
# of the envelope a kill at a moment landed on, else the newest todo's.
PHASES = ("todo added", "invited", "intent recorded", "written", "acknowledged")
MUST_HIT = {"todo added", "invited", "written", "acknowledged"}


@dataclass
class Receiver:
    chat: SimChat
    managed: Path  # where the office's managed settings would be (none)


def start(
    home: Path, receiver: Receiver, epoch: float, pause: float = 0.0, pass_pause: float = 0.0
) -> subprocess.Popen[str]:
    args = [str(home), str(receiver.chat.config_dir), receiver.chat.ref, str(receiver.managed)]
    pauses = [repr(pause), repr(pass_pause)]
    return subprocess.Popen(
        [sys.executable, str(CHILD), "cycles", *args, repr(epoch), *pauses],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "COOP_DATABASE_URL"},
    )


def wait_ready(process: subprocess.Popen[str]) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], READY_SECONDS)
    assert ready and process.stdout.readline().strip() == "ready"


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[Receiver]:
    """A simulated chat that declines every invitation at once (so nothing stays open),
    its clock scaled to the engine's: its admission limits are the ones Coop paces for."""
    fleet = SimFleet(tmp_path / "claude")
    managed = tmp_path / "managed"
    managed.mkdir()
    try:
        chat = fleet.start(
            "--answer", "decline", "--think", "0", env={"COOP_SIM_TIME_SCALE": repr(1 / SPEED)}
        )
        yield Receiver(chat, managed)
    finally:
        fleet.stop_all()


def received(chat: SimChat) -> list[str]:
    """The outbox id of every complete frame the chat's inbox read, in order."""
    if not chat.frame_log.exists():
        return []
    complete = chat.frame_log.read_bytes().split(b"\n")[:-1]
    return [json.loads(line)["msg_id"] for line in complete if line.strip()]


def ledger_rows(db: Path) -> tuple[str, dict[str, tuple[str, float | None]], int]:
    """(integrity check, {outbox id: (state, transport_at)}, newest todo id)."""
    conn = sqlite3.connect(db)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
        rows = conn.execute("SELECT id, state, transport_at FROM engine_outbox").fetchall()
        newest = conn.execute("SELECT coalesce(max(id), 0) FROM engine_todos").fetchone()[0]
    finally:
        conn.close()
    return integrity, {r[0]: (r[1], r[2]) for r in rows}, newest


def check(db: Path, chat: SimChat) -> int:
    """The invariants after a kill. Returns the newest todo id."""
    integrity, envelopes, newest = ledger_rows(db)
    assert integrity == "ok"
    logged = received(chat)
    sent_twice = [envelope for envelope, n in Counter(logged).items() if n > 1]
    assert not sent_twice, f"sent twice without a decision: {sent_twice}"
    for envelope in logged:
        assert envelope in envelopes, f"{envelope} reached the receiver but is not stored"
        state, _ = envelopes[envelope]
        assert state != "pending", f"{envelope} reached the receiver but looks unsent"
    return newest


def newest_invitation(db: Path, todo: int) -> str | None:
    """The outbox id of this todo's invitation, if it has one yet."""
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "SELECT o.id FROM engine_outbox o JOIN engine_dispatches d "
            "ON o.dispatch_id = d.id WHERE d.todo_id = ? AND o.kind = 'invitation'",
            (todo,),
        ).fetchone()
    finally:
        conn.close()
    return None if found is None else str(found[0])


def phase_of(db: Path, logged: set[str], envelope: str | None) -> str:
    """Where this envelope's cycle was when the kill landed, read right after it (None:
    its todo had no invitation yet)."""
    if envelope is None:
        return "todo added"
    _, envelopes, _ = ledger_rows(db)
    state, transport_at = envelopes[envelope]
    if transport_at is not None:
        return "acknowledged"
    if envelope in logged:
        return "written"
    return "invited" if state == "pending" else "intent recorded"


def transported(db: Path) -> set[str]:
    """The envelopes whose transport is recorded (none before the ledger exists)."""
    if not db.exists():
        return set()
    _, envelopes, _ = ledger_rows(db)
    return {envelope for envelope, (_, at) in envelopes.items() if at is not None}


def kill_on_the_first(
    child: subprocess.Popen[str], new: Callable[[], list[str]], what: str, interval: float
) -> str:
    """SIGKILL the child the moment `new()` names an envelope; returns the first named."""

    def named() -> list[str]:
        assert child.poll() is None, "the child exited by itself"
        return new()

    envelope = wait_until(named, what, HANG_SECONDS, interval=interval)[0]
    child.send_signal(signal.SIGKILL)
    return envelope


def kill_after_the_pass(child: subprocess.Popen[str], db: Path, before: set[str]) -> str:
    """At the ledger's first transport not in `before` (a child may first send what an
    earlier one left pending)."""
    return kill_on_the_first(
        child, lambda: sorted(transported(db) - before), "a transport recorded", 0.02
    )


def kill_at_the_write(child: subprocess.Popen[str], chat: SimChat) -> str:
    """At the first frame the chat's inbox reads from now on."""
    before = len(received(chat))
    return kill_on_the_first(
        child, lambda: received(chat)[before:], "a frame reaching the chat", 0.0005
    )


def test_sigkill_never_leaves_a_sent_envelope_looking_unsent(
    tmp_path: Path, receiver: Receiver
) -> None:
    chat = receiver.chat
    home = tmp_path / "home"
    db = home / "coop.db"
    rng = random.Random(os.environ.get("COOP_KILL_SEED"))
    epoch = time.time()
    hit: set[str] = set()
    newest = 0
    kills = 0
    while kills < MAX_KILLS:
        early = kills % 5 == 4
        at_the_write = kills % AT_THE_WRITE == 0 and not early
        after_the_pass = kills % AT_THE_WRITE == AFTER_THE_PASS and not early
        sent_before = transported(db)  # no child is running: this holds still
        child = start(
            home,
            receiver,
            epoch,
            PAUSE_AFTER_WRITE if at_the_write else 0.0,
            PAUSE_AFTER_PASS if after_the_pass else 0.0,
        )
        landed_on: str | None = None  # the envelope a kill at a moment landed on
        if early:
            time.sleep(rng.uniform(0.005, 0.060))  # may land in start-up or schema creation
            child.send_signal(signal.SIGKILL)
        elif at_the_write:
            wait_ready(child)
            landed_on = kill_at_the_write(child, chat)
        elif after_the_pass:
            wait_ready(child)
            landed_on = kill_after_the_pass(child, db, sent_before)
        else:
            wait_ready(child)
            time.sleep(rng.uniform(0.0, 0.300))  # a pass or two
            child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
        kills += 1
        if not db.exists():
            continue
        # Read at once: the next child's passes move this cycle's envelope on.
        newest_before, newest = newest, check(db, chat)
        logged = set(received(chat))
        if landed_on is not None:
            hit.add(phase_of(db, logged, landed_on))
        elif newest != newest_before:  # a kill before the child's first todo tells nothing
            hit.add(phase_of(db, logged, newest_invitation(db, newest)))
        if kills >= MIN_KILLS and hit >= MUST_HIT:
            break

    # The chat reads what the last child wrote a moment later: wait for every
    # acknowledged envelope to be in its inbox's log (a hang is the only bound).
    def all_read() -> bool:
        _, envelopes, _ = ledger_rows(db)
        acknowledged = {e for e, (_, at) in envelopes.items() if at is not None}
        return acknowledged <= set(received(chat))

    wait_until(all_read, "every acknowledged envelope in the chat's inbox", HANG_SECONDS)
    check(db, chat)
    assert hit >= MUST_HIT, f"kills landed only in {sorted(hit)} after {kills} kills"
