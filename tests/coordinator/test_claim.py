"""One coordinator per ledger: `coop serve` claims the ledger for as long as its process
lives, a second one is refused naming the first, a SIGKILLed holder's claim is free at
once, and `coop status` asks the claim's lock who runs. On SQLite and on PostgreSQL."""

from __future__ import annotations

import os
import re
import threading
import time
from datetime import datetime
from pathlib import Path

import pytest
from pgserver import PgServer
from servekit import Ledger, Serve, until
from watchdog.observers import Observer

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.claim import ADVISORY_KEY, SqliteClaim
from coop_engine.loop.serve import _Signal, is_ledger_file

OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")
HOLDER_SQL = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted"
    " AND classid = %s AND objid = %s AND objsubid = 2"
)


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Ledger:
    for name in OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)
    url = None
    if request.param == "postgresql":
        server: PgServer = request.getfixturevalue("postgresql_server")
        url = server.reset()
    return Ledger(tmp_path / "home", url)


@pytest.fixture
def postgres_ledger(
    postgresql_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Ledger:
    for name in OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)
    return Ledger(tmp_path / "home", postgresql_server.reset())


def test_a_second_serve_on_a_claimed_ledger_exits_1_with_one_line_naming_the_first(
    ledger: Ledger, tmp_path: Path
) -> None:
    first = Serve(ledger, tmp_path / "first.log").started()
    try:
        second = ledger.coop("serve", "--interval", "0.2")
        assert second.returncode == 1, second.stdout + second.stderr
        assert second.stdout == ""
        assert re.fullmatch(
            rf"coop: coop serve is already running on this ledger: pid {first.pid} "
            r"on office, since (\d{4}-\d\d-\d\d )?\d\d:\d\d\n",
            second.stderr,
        ), second.stderr
        # The first never noticed: it still holds the ledger.
        assert first.process.poll() is None
        assert ledger.coordinator()["pid"] == first.pid
    finally:
        assert first.stop() == 0


def test_a_sigkilled_serve_leaves_the_ledger_free_for_the_next(
    ledger: Ledger, tmp_path: Path
) -> None:
    first = Serve(ledger, tmp_path / "first.log").started()
    first.kill()
    second = Serve(ledger, tmp_path / "second.log").started()
    try:
        coordinator = ledger.coordinator()
        assert coordinator["state"] == "running"
        assert coordinator["pid"] == second.pid
    finally:
        assert second.stop() == 0


def test_status_says_none_then_running_then_stopped_after_a_sigkill(
    ledger: Ledger, tmp_path: Path
) -> None:
    engine = Engine(open_ledger(ledger.home, ledger.url))
    todo = engine.add_todo("Count me")["id"]
    engine.invite(todo, "claude:5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11", "office")
    nobody = ledger.status()
    assert nobody["coordinator"] == {
        "state": "none",
        "by": None,
        "pid": None,
        "host": None,
        "started_at": None,
        "last_pass_at": None,
        # The lease's fields (issue 31), added to the contract: none before any lease.
        "holder": None,
        "epoch": None,
        "lease_seconds": None,
        "lease_age": None,
        "lease_lapsed": None,
        "fenced_out": None,
        "standbys": [],
    }
    assert nobody["counts"] == {
        "pending": 1,
        "uncertain": 0,
        "delivered": 0,
        "expired": 0,
        "cancelled": 0,
    }
    server = Serve(ledger, tmp_path / "serve.log").started()
    try:
        until(lambda: ledger.coordinator()["last_pass_at"] is not None, "a first heartbeat")
        running = ledger.coordinator()
        assert running["state"] == "running" and running["by"] == "serve"
        assert running["pid"] == server.pid and running["host"] == "office"
        started = datetime.fromisoformat(running["started_at"])
        assert datetime.fromisoformat(running["last_pass_at"]) >= started
    finally:
        server.kill()
    stopped = ledger.status()
    # The lock says it is gone; its record still says who it was and when it last passed.
    assert stopped["coordinator"]["state"] == "stopped"
    assert stopped["coordinator"]["pid"] == server.pid
    assert stopped["coordinator"]["started_at"] == running["started_at"]
    assert stopped["coordinator"]["last_pass_at"] >= running["last_pass_at"]
    assert sum(stopped["counts"].values()) == 1
    plain = ledger.coop("status")
    assert plain.returncode == 0, plain.stderr
    lines = plain.stdout.splitlines()
    assert re.fullmatch(
        rf"coordinator  stopped: coop serve, pid {server.pid} on office, last seen \d+ s ago: "
        "deliveries are not moving",
        lines[0],
    ), plain.stdout
    assert lines[1].startswith("envelopes    ") and "0 delivered" in lines[1]


@pytest.mark.sqlite_only
def test_a_heartbeat_is_not_a_ledger_write_to_serve_s_watch(tmp_path: Path) -> None:
    """serve wakes on writes to the ledger's files; a heartbeat there would wake it after
    every pass, for ever. inotify reports a folder's events in order: once the sentinel
    written after the beat is seen, every event of the beat was seen before it."""
    claim = SqliteClaim(open_ledger(tmp_path))
    claim.take("office", "serve")
    seen: list[str] = []
    wake = threading.Event()

    def wanted(path: str) -> bool:
        seen.append(os.path.basename(path))
        return is_ledger_file(path)

    observer = Observer()
    observer.schedule(_Signal(wake.set, wanted), str(tmp_path), recursive=False)
    observer.start()
    try:
        claim.beat(time.time())
        (tmp_path / "sentinel").write_text("after the beat")
        until(lambda: "sentinel" in seen, "the sentinel's event")
        # The beat was seen (its file written, then moved into place), and let pass.
        assert any(name.startswith("coop.coordinator.json") for name in seen), seen
        assert not wake.is_set(), seen
        os.utime(tmp_path / "coop.db-wal")  # and a ledger file does wake serve
        until(wake.is_set, "the ledger's own file waking serve")
    finally:
        observer.stop()
        observer.join(5)
        claim.release()


def test_a_serve_whose_claim_connection_was_ended_takes_the_claim_again(
    postgres_ledger: Ledger, postgresql_server: PgServer, tmp_path: Path
) -> None:
    server = Serve(postgres_ledger, tmp_path / "serve.log").started()
    admin = postgresql_server.connect()
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(HOLDER_SQL, ADVISORY_KEY)
            (backend,) = cursor.fetchone()
            cursor.execute("SELECT pg_terminate_backend(%s)", (backend,))

        def held_again() -> bool:
            with admin.cursor() as cursor:
                cursor.execute(HOLDER_SQL, ADVISORY_KEY)
                row = cursor.fetchone()
            return row is not None and row[0] != backend

        until(held_again, "serve holding the claim on a new connection")
        assert server.process.poll() is None
        assert postgres_ledger.coordinator()["pid"] == server.pid
    finally:
        admin.close()
        assert server.stop() == 0


def test_a_serve_that_lost_its_claim_to_another_process_stops_with_exit_1(
    postgres_ledger: Ledger, postgresql_server: PgServer, tmp_path: Path
) -> None:
    server = Serve(postgres_ledger, tmp_path / "serve.log").started()
    thief = postgresql_server.connect()
    thief.autocommit = True
    try:
        with thief.cursor() as cursor:
            cursor.execute(HOLDER_SQL, ADVISORY_KEY)
            (backend,) = cursor.fetchone()
            # One round trip: the lock is asked for before serve's next beat can ask.
            cursor.execute(
                "SELECT pg_terminate_backend(%s); SELECT pg_advisory_lock(%s, %s)",
                (backend, *ADVISORY_KEY),
            )
        assert server.process.wait(30) == 1
        assert "stopped: the claim on this ledger was lost" in server.output()
        assert "Traceback" not in server.output()
    finally:
        thief.close()
        server.stop()


def test_a_serve_whose_ledger_connection_was_ended_opens_another_and_goes_on(
    postgres_ledger: Ledger, postgresql_server: PgServer, tmp_path: Path
) -> None:
    """A server restart ends serve's connections; a failed one stays failed, so serve
    says so once and opens another."""
    server = Serve(postgres_ledger, tmp_path / "serve.log").started()
    admin = postgresql_server.connect()
    admin.autocommit = True
    try:
        with admin.cursor() as cursor:
            cursor.execute(HOLDER_SQL, ADVISORY_KEY)
            (claim_backend,) = cursor.fetchone()
            cursor.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), %s)",
                (claim_backend,),
            )
        server.wait_for("failed on the ledger: ")
        # Whichever step met the ended connection, the next ones write the ledger again:
        # the heartbeat goes on.
        failed_at = postgres_ledger.coordinator()["last_pass_at"]
        until(
            lambda: postgres_ledger.coordinator()["last_pass_at"] > failed_at,
            "a heartbeat written after the connection ended",
        )
        assert postgres_ledger.coordinator()["pid"] == server.pid
    finally:
        admin.close()
        assert server.stop() == 0
    assert "Traceback" not in server.output()
