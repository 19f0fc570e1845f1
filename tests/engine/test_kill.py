"""DESIGN.md section 11: SIGKILL real delivery cycles at random points, many times.

A child process runs cycles against a real SQLite ledger and a real Unix socket
receiver; the test kills it at random moments and restarts it. After every kill, no
envelope the receiver got may look unsent, none may have been sent twice, and the
database must pass its integrity check.
"""

from __future__ import annotations

import os
import random
import select
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.kill

CHILD = Path(__file__).with_name("kill_child.py")
REPO = CHILD.parents[2]
MIN_KILLS = 60
MAX_KILLS = 200
BUDGET_SECONDS = 45.0
# Where the newest cycle was when the kill landed, from what the ledger and log show.
PHASES = ("todo added", "invited", "intent recorded", "written", "acknowledged")
MUST_HIT = {"todo added", "invited", "written", "acknowledged"}


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *args],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != "COOP_DATABASE_URL"},
    )


def wait_ready(process: subprocess.Popen[str], timeout: float = 20.0) -> None:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready and process.stdout.readline().strip() == "ready"


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    # A short directory: a Unix socket path must fit in about 104 bytes.
    folder = tempfile.mkdtemp(prefix="coopk")
    path, log = os.path.join(folder, "inbox.sock"), tmp_path / "received.log"
    log.touch()
    process = start("receiver", path, str(log))
    try:
        wait_ready(process)
        yield path, log
    finally:
        process.kill()
        process.wait()
        process.stdout.close()  # type: ignore[union-attr]
        shutil.rmtree(folder, ignore_errors=True)


def received(log: Path) -> list[str]:
    return log.read_text().splitlines()


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


def check(db: Path, log: Path) -> int:
    """The invariants after a kill. Returns the newest todo id."""
    integrity, envelopes, newest = ledger_rows(db)
    assert integrity == "ok"
    logged = received(log)
    sent_twice = [envelope for envelope, n in Counter(logged).items() if n > 1]
    assert not sent_twice, f"sent twice without a decision: {sent_twice}"
    for envelope in logged:
        assert envelope in envelopes, f"{envelope} reached the receiver but is not stored"
        state, _ = envelopes[envelope]
        assert state != "pending", f"{envelope} reached the receiver but looks unsent"
    return newest


def phase_of(db: Path, logged: set[str], todo: int) -> str:
    conn = sqlite3.connect(db)
    try:
        found = conn.execute(
            "SELECT o.id, o.state, o.transport_at FROM engine_outbox o "
            "JOIN engine_dispatches d ON o.dispatch_id = d.id WHERE d.todo_id = ?",
            (todo,),
        ).fetchone()
    finally:
        conn.close()
    if found is None:
        return "todo added"
    envelope, state, transport_at = found
    if state == "pending":
        return "invited"
    if transport_at is not None:
        return "acknowledged"
    return "written" if envelope in logged else "intent recorded"


def test_sigkill_never_leaves_a_sent_envelope_looking_unsent(tmp_path, receiver):
    socket_path, log = receiver
    home = tmp_path / "home"
    db = home / "coop.db"
    rng = random.Random(os.environ.get("COOP_KILL_SEED"))
    newest_at_kill: list[int] = []
    deadline = time.monotonic() + BUDGET_SECONDS
    kills = 0
    while kills < MAX_KILLS and time.monotonic() < deadline:
        child = start("cycles", str(home), socket_path)
        if kills % 5 == 4:
            time.sleep(rng.uniform(0.005, 0.060))  # may land in start-up or schema creation
        else:
            wait_ready(child)
            time.sleep(rng.uniform(0.0, 0.060))
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdout.close()  # type: ignore[union-attr]
        kills += 1
        if db.exists():
            newest_at_kill.append(check(db, log))
        if kills >= MIN_KILLS and _phases(db, log, newest_at_kill) >= MUST_HIT:
            break

    # Let the receiver finish reading whatever the last child wrote.
    acknowledged: set[str] = set()
    for _ in range(50):
        _, envelopes, _ = ledger_rows(db)
        acknowledged = {e for e, (_, at) in envelopes.items() if at is not None}
        if acknowledged <= set(received(log)):
            break
        time.sleep(0.1)
    check(db, log)
    assert kills >= MIN_KILLS
    assert acknowledged <= set(received(log)), "a transport was recorded for bytes never sent"
    hit = _phases(db, log, newest_at_kill)
    assert hit >= MUST_HIT, f"kills landed only in {sorted(hit)}"


def _phases(db: Path, log: Path, newest_at_kill: list[int]) -> set[str]:
    """Which phase of its newest cycle each kill interrupted (kills that came before a
    child's first cycle are not counted)."""
    logged = set(received(log))
    hit = set()
    previous = 0
    for newest in newest_at_kill:
        if newest != previous:
            hit.add(phase_of(db, logged, newest))
        previous = newest
    return hit
