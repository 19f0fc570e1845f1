"""The coordinator (the app's in-process one, serve's loop) keeps running through a
ledger whose disk fills up or that turns read-only: it says so once, loses nothing
committed before the fault, and delivers again once the fault clears.

The full disk is real: the Coop home is a small tmpfs, filled to its last byte (which
needs root to mount). The read-only ledger is SQLite's own refusal, `PRAGMA query_only`
set on the coordinator's connection: a tmpfs cannot be remounted read-only while the
ledger is open for writing ("mount point is busy")."""

from __future__ import annotations

import errno
import os
import subprocess
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import peewee as pw
import pytest
from officekit import Office
from prerequisites import missing
from servekit import until

from coop_engine import queries
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.serve import Server
from hosts.fleet import Fleet
from hosts.sim.launch import SimChat

OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")
DISK = "4m"
WRITABLE_AGAIN = "a pass on office ran again: the ledger is writable again"


class Passes:
    """The coordinator's passes, counted; held at a gate when the test closes it; and a
    hook run in the coordinator's own thread (on its own connection) before each."""

    def __init__(self, server: Server) -> None:
        self.count = 0
        self.gate = threading.Event()
        self.gate.set()
        self.parked = threading.Event()
        self.before: Callable[[], None] = lambda: None
        pass_mac = server.coordinator.pass_mac

        def gated(*args: Any, **kwargs: Any) -> bool:
            if not self.gate.is_set():
                self.parked.set()
                self.gate.wait()
            self.before()
            self.count += 1
            return pass_mac(*args, **kwargs)

        server.coordinator.pass_mac = gated  # type: ignore[method-assign]

    def hold(self) -> None:
        """Stop the coordinator at the start of its next pass (nothing half done)."""
        self.parked.clear()
        self.gate.clear()
        until(self.parked.is_set, "the coordinator held at its next pass")

    def more(self, count: int) -> None:
        start = self.count
        until(lambda: self.count >= start + count, f"{count} more passes")


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)


@contextmanager
def small_disk(where: Path) -> Iterator[Path]:
    """A tmpfs of a few megabytes mounted at `where`, or a skip saying why not."""
    if os.geteuid() != 0:
        missing("mounting a small tmpfs needs root")
    where.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        missing(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], capture_output=True)


def fill(path: Path) -> None:
    """Write `path` until its file system has no room left, not one byte."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 1 << 12, 1):
            chunk = b"\0" * size
            while True:
                try:
                    os.write(fd, chunk)
                except OSError as error:
                    if error.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)


def invite(office: Office, chat: SimChat, title: str) -> str:
    todo = office.engine.add_todo(title)["id"]
    return str(office.engine.invite(todo, chat.ref, "office")["outbox"])


def state(outbox_id: str) -> str:
    return str(queries.envelope_row(outbox_id)["state"])


def unchanged_facts(before: list[dict[str, Any]]) -> None:
    """Every fact committed before the fault is still there, as it was."""
    after = {row["id"]: row for row in queries.outbox()}
    for row in before:
        for fact, at in row["facts"].items():
            if at is not None:
                assert after[row["id"]]["facts"][fact] == at, (row["id"], fact)


@contextmanager
def coordinator(office: Office) -> Iterator[tuple[Server, Passes, list[str]]]:
    """The app's way of running a coordinator: a Server in a thread of this process."""
    log: list[str] = []
    macs = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, macs, office.home, log.append, pass_interval=0.05)
    passes = Passes(server)
    thread = server.start_thread()
    try:
        yield server, passes, log
        assert thread.is_alive(), log
    finally:
        passes.gate.set()
        server.stop()
        thread.join(10)


def said(log: list[str], text: str) -> list[str]:
    return [line for line in log if text in line]


def test_a_full_disk_is_told_once_and_deliveries_resume_when_there_is_room(
    tmp_path: Path, clean_env: None
) -> None:
    with small_disk(tmp_path / "home"):
        office = Office(tmp_path)
        try:
            first_chat, second_chat = office.macs["office"].start(), office.macs["office"].start()
            first = invite(office, first_chat, "Before the disk filled up")
            with coordinator(office) as (_, passes, log):
                until(lambda: state(first) == "delivered", "the first invitation delivered")
                passes.hold()
                committed = queries.outbox()
                second = invite(office, second_chat, "While the disk is full")
                fill(tmp_path / "home" / "filler")
                passes.gate.set()
                until(lambda: said(log, "disk is full"), "the full disk told")
                passes.more(10)
                (told,) = said(log, "disk is full")
                assert told.startswith(
                    "a pass on office failed on the ledger: database or disk is full"
                )
                assert len(said(log, "the heartbeat failed")) == 1, log
                (tmp_path / "home" / "filler").unlink()
                until(lambda: state(second) == "delivered", "the second invitation delivered")
                # Told once the pass (and the heartbeat after it) has returned.
                ran_again = WRITABLE_AGAIN
                until(lambda: said(log, ran_again), "the pass told it runs again")
                until(lambda: said(log, "the heartbeat ran again"), "the heartbeat told")
                unchanged_facts(committed)
                assert len(said(log, "disk is full")) == 1
        finally:
            office.stop()
            office.engine.db.close()


def test_a_read_only_ledger_is_told_once_and_deliveries_resume_when_it_is_writable(
    tmp_path: Path, clean_env: None
) -> None:
    office = Office(tmp_path)
    try:
        first_chat, second_chat = office.macs["office"].start(), office.macs["office"].start()
        first = invite(office, first_chat, "Before the ledger turned read-only")
        with coordinator(office) as (server, passes, log):
            until(lambda: state(first) == "delivered", "the first invitation delivered")
            read_only = threading.Event()
            passes.before = lambda: server.engine.db.execute_sql(
                f"PRAGMA query_only = {int(read_only.is_set())}"
            )
            passes.hold()
            committed = queries.outbox()
            second = invite(office, second_chat, "While the ledger is read-only")
            read_only.set()
            passes.gate.set()
            until(lambda: said(log, "readonly"), "the read-only ledger told")
            passes.more(10)
            (told,) = said(log, "readonly")
            assert told.startswith(
                "a pass on office failed on the ledger: attempt to write a readonly"
            )
            assert state(second) == "pending"
            read_only.clear()
            until(lambda: state(second) == "delivered", "the second invitation delivered")
            # Told once the pass is over, which may be after its delivery was recorded.
            until(lambda: said(log, WRITABLE_AGAIN), "the writable ledger told")
            unchanged_facts(committed)
            assert len(said(log, "readonly")) == 1
    finally:
        office.stop()


def test_nothing_is_sent_before_a_reconcile_the_ledger_refused_has_run(
    tmp_path: Path, clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At start every uncertain envelope is looked for before anything is sent: a ledger
    that refuses the first attempts at that holds the sending back, not skips the look."""
    office = Office(tmp_path)
    calls: list[str] = []
    try:
        chat = office.macs["office"].start()
        pending = invite(office, chat, "Sent only after the reconcile")
        reconcile = Coordinator.reconcile

        def refused_twice(self: Coordinator, *args: Any) -> None:
            calls.append(state(pending))
            if calls.count("pending") <= 2:
                raise pw.OperationalError("database is locked")
            reconcile(self, *args)
            calls.append("reconciled")

        monkeypatch.setattr(Coordinator, "reconcile", refused_twice)
        with coordinator(office) as (server, passes, log):
            until(lambda: state(pending) == "delivered", "the pending invitation delivered")
            until(lambda: said(log, WRITABLE_AGAIN), "the writable ledger told")
        # Refused twice, the envelope still pending each time; sent only after the look.
        assert calls == ["pending", "pending", "pending", "reconciled"], calls
        assert len(said(log, "a pass on office failed on the ledger: database is locked")) == 1
    finally:
        office.stop()
