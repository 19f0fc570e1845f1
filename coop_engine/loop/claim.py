"""One coordinator per ledger: the claim `coop serve` (or the app's own coordinator)
holds while it lives and renews it, and the record of who holds or last held it.

The claim is the ledger's lease (coop_engine/lease.py): a row with an epoch, renewed by
compare-and-set on the database's clock, which every intent to send checks (the fence).
Beside it, a lock that goes with its holder however the holder ends, SIGKILL included:
an `flock` the kernel drops, on a file beside a SQLite ledger; on PostgreSQL a session
advisory lock the server drops with the connection. A lock found free tells a taker the
holder is gone before its lease runs out; a holder that hangs keeps its lock but stops
renewing, and a standby takes the lapsed lease (on PostgreSQL: on SQLite the flock is
the guard that two processes never both hold one file, so a hung holder is waited for).
Whether a coordinator runs is asked of the lease and the lock, never of the record: a
killed holder leaves its record behind, saying who it was and when it last passed.

The record of a SQLite ledger is a file beside it, not a row in it: serve wakes on every
write to the ledger's files, so a heartbeat written there would wake it after each pass.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import peewee as pw

from coop_engine import lease
from coop_engine.db import DATABASE_ERRORS
from coop_engine.errors import CoopError, Fenced, LedgerError
from coop_engine.formats import iso
from coop_engine.lease import DEFAULT_SECONDS, Claimant
from coop_engine.models import Setting

RUNNING, STOPPED, NONE = "running", "stopped", "none"
WHO = {"serve": "coop serve", "app": "the Coop app", "tick": "coop tick"}
RECORD_SETTING = "coordinator"  # the record's row in engine_settings, on PostgreSQL
ADVISORY_KEY = (0x436F6F70, 1)  # "Coop", claim 1: pg_try_advisory_lock(int4, int4)
RETRY_GAP = 0.05
LEASE_FIELDS = ("holder", "epoch", "lease_seconds", "lease_age", "lease_lapsed", "fenced_out")


class Claimed(CoopError):
    """Another process holds the ledger's claim; the message names it."""

    def __init__(self, holder: Holder | None) -> None:
        self.holder = holder
        if holder is None:
            super().__init__("another coordinator is already running on this ledger")
        else:
            super().__init__(
                f"{holder.who} is already running on this ledger: pid {holder.pid} "
                f"on {holder.host}, since {clock_time(holder.started_at)}"
            )


@dataclass(frozen=True)
class Holder:
    """A process that holds, or last held, the claim."""

    pid: int
    host: str  # the fleet's name for the machine it runs on
    by: str  # serve, or app (the app's in-process coordinator)
    started_at: float
    last_pass_at: float | None = None
    backend: int | None = None  # PostgreSQL: the server process of the claim's connection

    @property
    def who(self) -> str:
        return WHO.get(self.by, self.by)

    def named(self, office: str) -> str:
        """`coop serve (pid 4242)`, with its machine when that is not `office`."""
        where = "" if self.host == office else f" on {self.host}"
        return f"{self.who} (pid {self.pid}{where})"

    @classmethod
    def from_record(cls, value: object) -> Holder | None:
        """The holder a record names; None for a missing, torn or foreign record."""
        if not isinstance(value, dict):
            return None
        try:
            last, backend = value.get("last_pass_at"), value.get("backend")
            return cls(
                pid=int(value["pid"]),
                host=str(value["host"]),
                by=str(value["by"]),
                started_at=float(value["started_at"]),
                last_pass_at=None if last is None else float(last),
                backend=None if backend is None else int(backend),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True)
class Look:
    """The claim as its lease and lock answer now (running: held; stopped: free, but a
    coordinator ran; none: no coordinator ever ran), who holds or last held it, the
    lease as read, and the standbys that wait for it."""

    state: str
    holder: Holder | None
    lease: lease.Seen | None = None
    standbys: list[dict[str, Any]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The `coordinator` object of `coop status --json`: the record's fields, then
        the lease's (holder, epoch, lease_seconds, lease_age, lease_lapsed, fenced_out:
        null before any lease) and the standbys."""
        holder = self.holder
        leased: dict[str, Any] = dict.fromkeys(LEASE_FIELDS)
        if self.lease is not None:
            leased = self.lease.as_json()
        standbys = [
            {**standby, "since": iso(standby["since"], "seconds")} for standby in self.standbys
        ]
        return {
            "state": self.state,
            "by": holder.by if holder else None,
            "pid": holder.pid if holder else None,
            "host": holder.host if holder else None,
            "started_at": iso(holder.started_at, "seconds") if holder else None,
            "last_pass_at": iso(holder.last_pass_at, "seconds") if holder else None,
            **leased,
            "standbys": standbys,
        }

    def last_sign_of_life(self) -> float | None:
        """When the holder last passed (or started, before its first pass)."""
        if self.holder is None:
            return None
        return self.holder.last_pass_at or self.holder.started_at

    def sentence(self, now: float) -> str:
        """The coordinator in one line, for a person."""
        holder = self.holder
        if holder is None:
            if self.state == RUNNING:
                return "running: a coordinator holds the ledger and has not said who it is yet"
            return "none: no coordinator has run on this ledger (start one: coop serve)"
        named = f"{holder.who}, pid {holder.pid} on {holder.host}"
        fenced = self.fenced_words()
        if fenced is not None:
            named += f" ({fenced})"
        if self.state == RUNNING:
            since = f"since {clock_time(holder.started_at)}"
            if holder.last_pass_at is None:
                return f"running: {named}, {since}; no pass yet"
            return f"running: {named}, {since}; last pass {ago(now, holder.last_pass_at)}"
        seen = ago(now, self.last_sign_of_life() or holder.started_at)
        return f"stopped: {named}, last seen {seen}: deliveries are not moving"

    def fenced_words(self) -> str | None:
        """When the record names the holder the lease's last takeover fenced out: that
        it sends nothing, and who took the lease from it. None otherwise."""
        seen, holder = self.lease, self.holder
        if seen is None or seen.fenced is None or holder is None:
            return None
        if (seen.fenced["pid"], seen.fenced["host"]) != (holder.pid, holder.host):
            return None
        return (
            f"fenced out at lease epoch {seen.fenced['epoch']} by pid {seen.pid} on "
            f"{seen.host}: it sends nothing"
        )

    def lease_line(self) -> str | None:
        """The lease in one line, for a person: its epoch and holder, how long since its
        renewal, who it fenced out, who waits for it. None before any lease."""
        seen = self.lease
        if seen is None:
            return None
        state = "lapsed" if seen.lapsed else f"renewed {seen.age:.0f} s ago"
        line = f"epoch {seen.epoch}, pid {seen.pid} on {seen.host}, {state} ({seen.seconds:g} s)"
        if seen.fenced is not None:
            fenced = seen.fenced
            line += (
                f"; fenced out: pid {fenced['pid']} on {fenced['host']} (epoch {fenced['epoch']})"
            )
        if self.standbys:
            named = ", ".join(f"pid {s['pid']} on {s['host']}" for s in self.standbys)
            line += f"; standing by: {named}"
        return line

    def watching(self, office: str, now: float) -> str:
        """The app's status line when it watches rather than coordinates (`office` is
        the app's machine): whom it watches, or that they are gone."""
        if self.holder is None:
            return "watching only"
        named = self.holder.named(office)
        if self.state == RUNNING:
            return f"attached to {named}"
        seen = ago(now, self.last_sign_of_life() or self.holder.started_at)
        return f"{named} stopped {seen}: deliveries are not moving"


def ago(now: float, at: float) -> str:
    """How long before `now` a moment was, in the coarsest unit that keeps it readable."""
    seconds = max(0, int(now - at))
    if seconds < 120:
        return f"{seconds} s ago"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min ago"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} d ago"


def clock_time(at: float) -> str:
    """A moment in this machine's local time: 09:12 today, else with its date."""
    local = time.localtime(at)
    if time.strftime("%Y-%m-%d", local) == time.strftime("%Y-%m-%d"):
        return time.strftime("%H:%M", local)
    return time.strftime("%Y-%m-%d %H:%M", local)


class LedgerClaim(ABC):
    """The one-coordinator claim on one ledger: at most one process holds it.

    The claim is the ledger's lease (coop_engine/lease.py), which says which process may
    send and under which epoch, plus a session lock (an flock beside a SQLite file, an
    advisory lock on PostgreSQL) the holder keeps while it can: a lock found free says
    its holder is gone, so the next one need not wait for the lease to run out. On
    SQLite the flock is also the guard that two processes never both hold one file."""

    # How long a refused taker keeps trying before it believes the claim is held: a
    # look at a SQLite claim holds its lock for an instant.
    patience = 0.0
    lock_required = False  # whether the lease is taken only with the session lock

    def __init__(self, ledger: pw.Database) -> None:
        self.ledger = ledger
        self.holder: Holder | None = None  # while this process holds the claim
        self.epoch: int | None = None  # the lease's epoch while this process holds it
        self.seconds = DEFAULT_SECONDS
        self.lost: CoopError | None = None  # why the renewer gave the claim up
        self.on_lost: Callable[[CoopError], None] | None = None
        self._renewer: threading.Thread | None = None
        self._stop_renewing = threading.Event()

    def claimant(self, host: str, by: str) -> Claimant:
        return Claimant(os.getpid(), host, by)

    def take(self, host: str, by: str) -> Holder:
        """Hold the claim until `release` or this process's end, whichever comes first.
        Claimed, naming the holder, when another process holds it."""
        if self.holder is not None:
            return self.holder
        deadline = time.monotonic() + self.patience
        while not self.try_take(host, by):
            if time.monotonic() >= deadline:
                raise Claimed(self._record())
            time.sleep(RETRY_GAP)
        assert self.holder is not None
        return self.holder

    def try_take(self, host: str, by: str) -> bool:
        """Try once to take the lease: when it lapsed by the database's clock, or its
        holder's session lock is found free. True when this process holds it now."""
        me = self.claimant(host, by)
        locked = self._lock()
        if not locked and self.lock_required:
            return False
        try:
            seen = lease.read(self.ledger)
            epoch = lease.take(
                self.ledger,
                seen,
                me,
                self.seconds,
                holder_gone=self._gone(locked, seen),
                session_lock=locked,
            )
        except BaseException:
            if locked:
                self._unlock()
            raise
        if epoch is None:
            if locked:
                self._unlock()  # a waiter keeps no lock: the holder may take it back
            return False
        self.epoch, self.lost = epoch, None
        self.holder = Holder(os.getpid(), host, by, time.time(), backend=self._backend())
        self._start_renewing(me)
        return True

    def beat(self, at: float) -> None:
        """Record that the holder made a pass at `at`: the heartbeat `coop status` shows.
        Claimed (or Fenced) when the claim was lost to another process meanwhile."""
        if self.holder is None:
            return
        if self.lost is not None:
            raise self.lost
        seen = lease.read(self.ledger)  # a holder woken after its lease lapsed says nothing
        if self.epoch is None or seen is None or seen.epoch != self.epoch:
            raise Fenced(lease.fenced_line(self.epoch or 0, seen))
        self.holder = replace(self.holder, last_pass_at=at)
        self._write(self.holder)

    def release(self) -> None:
        """Let the claim go; the record stays, saying who held it and when it last passed."""
        holder, epoch = self.holder, self.epoch
        self._stop_renewing.set()
        renewer, self._renewer = self._renewer, None
        if renewer is not None and renewer is not threading.current_thread():
            renewer.join(5)
        if holder is None:
            return
        self.holder = self.epoch = None
        if epoch is not None and self.lost is None:
            try:
                lease.release(self.ledger, epoch, self.claimant(holder.host, holder.by))
            except DATABASE_ERRORS:
                pass  # the lease runs out by itself
        self._unlock()

    def look(self) -> Look:
        """Whether any process (this one included) holds the claim now, and who holds
        it or last did: the lease, the session lock, and the holder's record."""
        record = self._record()
        try:
            seen = lease.read(self.ledger)
            waiting = lease.standbys(self.ledger)
        except DATABASE_ERRORS:
            seen, waiting = None, []  # a ledger made before leases, opened read-only
        state = RUNNING if self._alive(seen) else (STOPPED if record or seen else NONE)
        return Look(state, record, seen, waiting)

    # --- the lease's renewal ------------------------------------------------------------

    def _start_renewing(self, me: Claimant) -> None:
        self._stop_renewing = threading.Event()
        self._renewer = threading.Thread(
            target=self._renew_until_stopped,
            args=(me, self._stop_renewing),
            name="lease",
            daemon=True,
        )
        self._renewer.start()

    def _renew_until_stopped(self, me: Claimant, stop: threading.Event) -> None:
        """Every third of the lease, a compare-and-set on its epoch; a refusal from the
        database tries again at the next third, a lost lease ends the claim."""
        while not stop.wait(self.seconds / 3):
            epoch = self.epoch
            if epoch is None:
                return
            try:
                lease.renew(self.ledger, epoch, me, self.seconds, self._relock())
            except (Fenced, Claimed) as lost:
                self.lost = lost
                if self.on_lost is not None:
                    self.on_lost(lost)
                return
            except DATABASE_ERRORS:
                if not self.ledger.in_transaction():
                    self.ledger.close()  # a failed server connection stays failed

    # --- what each kind of ledger does -------------------------------------------------

    @abstractmethod
    def _gone(self, locked: bool, seen: lease.Seen | None) -> bool:
        """Whether the lease's holder is gone, this process having (or not) just taken
        the session lock: then its lease need not run out first."""

    @abstractmethod
    def _alive(self, seen: lease.Seen | None) -> bool:
        """Whether a coordinator holds the ledger now."""

    @abstractmethod
    def _relock(self) -> bool:
        """Before a renewal: whether the holder holds the session lock (taken again if
        its session ended); Claimed when another process took the lock the lease said
        this holder held."""

    @abstractmethod
    def _lock(self) -> bool:
        """Try once to take the lock; False when another process holds it."""

    @abstractmethod
    def _unlock(self) -> None: ...

    @abstractmethod
    def _held(self) -> bool:
        """Whether some process holds the lock, without taking it for long."""

    @abstractmethod
    def _record(self) -> Holder | None: ...

    @abstractmethod
    def _write(self, holder: Holder) -> None: ...

    @abstractmethod
    def _backend(self) -> int | None:
        """The database server's process serving the claim, where there is one."""


class SqliteClaim(LedgerClaim):
    """An flock on `<ledger stem>.coordinator.lock` beside the ledger's file; the record
    in `<ledger stem>.coordinator.json`, replaced whole on each beat. Neither name starts
    with the ledger's, so neither serve nor the app takes a beat for a ledger write."""

    patience = 0.5
    lock_required = True  # the flock is the guard: no process holds the file without it

    def __init__(self, ledger: pw.Database) -> None:
        super().__init__(ledger)
        # The ledger's own file, however it was opened (a read-only one is opened by URI).
        path = getattr(ledger, "path", None) or Path(ledger.database)
        self.lock_path = path.with_name(f"{path.stem}.coordinator.lock")
        self.record_path = path.with_name(f"{path.stem}.coordinator.json")
        self._fd: int | None = None

    def _lock(self) -> bool:
        try:
            # Read-only is enough for flock: a read-only disk can still be claimed.
            fd = os.open(self.lock_path, os.O_RDONLY | os.O_CREAT, 0o600)
        except OSError as error:
            why = error.strerror or str(error)
            raise LedgerError(f"cannot claim the ledger with {self.lock_path}: {why}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def _unlock(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the file is what lets the lock go
            self._fd = None

    def _backend(self) -> int | None:
        return None

    def _gone(self, locked: bool, seen: lease.Seen | None) -> bool:
        return locked  # every holder of the file holds its flock: a free one, nobody

    def _alive(self, seen: lease.Seen | None) -> bool:
        return self._held()

    def _relock(self) -> bool:
        return True  # the kernel keeps an flock for as long as the file is open

    def _held(self) -> bool:
        try:
            fd = os.open(self.lock_path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        try:
            # A second open file is a second claimant, even within the holder's process.
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        return False

    def _record(self) -> Holder | None:
        try:
            return Holder.from_record(json.loads(self.record_path.read_bytes()))
        except (OSError, ValueError):
            return None

    def _write(self, holder: Holder) -> None:
        # A reader sees the old record or the new one, never half of one.
        temporary = self.record_path.with_name(f"{self.record_path.name}.{os.getpid()}.tmp")
        try:
            fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as file:
                json.dump(asdict(holder), file)
            os.replace(temporary, self.record_path)
        except OSError:
            temporary.unlink(missing_ok=True)
            raise


class PostgresClaim(LedgerClaim):
    """A session advisory lock, on a connection of the claim's own that stays open while
    the claim is held; the record a row of engine_settings, written through the ledger."""

    def __init__(self, ledger: pw.Database) -> None:
        super().__init__(ledger)
        self._session: pw.Database | None = None
        self._guard = threading.Lock()  # the session is shared by the holder's threads

    def _lock(self) -> bool:
        session: pw.Database = type(self.ledger)(
            self.ledger.database, thread_safe=False, **self.ledger.connect_params
        )
        session.connect()
        try:
            (taken,) = session.execute_sql(
                "SELECT pg_try_advisory_lock(%s, %s)", ADVISORY_KEY
            ).fetchone()
        except BaseException:
            session.close()
            raise
        if not taken:
            session.close()
            return False
        with self._guard:
            self._session = session
        return True

    def _unlock(self) -> None:
        with self._guard:
            session, self._session = self._session, None
        if session is not None and not session.is_closed():
            session.close()  # the server lets a session's advisory locks go with it

    def _backend(self) -> int | None:
        with self._guard:
            if self._session is None:
                return None
            (pid,) = self._session.execute_sql("SELECT pg_backend_pid()").fetchone()
            return int(pid)

    def _gone(self, locked: bool, seen: lease.Seen | None) -> bool:
        # The lock is free to this process: a holder that held it lost its session.
        return locked and seen is not None and seen.session_lock

    def _alive(self, seen: lease.Seen | None) -> bool:
        if seen is None or seen.lapsed:
            return False
        return not seen.session_lock or self._held()

    def _relock(self) -> bool:
        """A claim whose session the server ended (a restart, pg_terminate_backend) is
        locked again; Claimed when another process took the lock meanwhile: it found
        this holder gone, and takes the lease."""
        try:
            if self._backend() is not None:
                return True
        except (pw.OperationalError, pw.InterfaceError):
            self._unlock()
        if self._lock():
            if self.holder is not None:
                self.holder = replace(self.holder, backend=self._backend())
            return True
        seen = lease.read(self.ledger)
        if seen is not None and seen.epoch == self.epoch and seen.session_lock:
            raise Claimed(self._record())
        return False  # a holder that took a lapsed lease while its hung holder kept the lock

    def _held(self) -> bool:
        cursor = self.ledger.execute_sql(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
            " AND classid = %s AND objid = %s AND objsubid = 2",
            ADVISORY_KEY,
        )
        return cursor.fetchone() is not None

    def _record(self) -> Holder | None:
        row = Setting.get_or_none(Setting.name == RECORD_SETTING)
        return None if row is None else Holder.from_record(row.value)

    def _write(self, holder: Holder) -> None:
        value, now = asdict(holder), time.time()
        Setting.insert(name=RECORD_SETTING, value=value, updated_at=now).on_conflict(
            conflict_target=[Setting.name],
            update={Setting.value: value, Setting.updated_at: now},
        ).execute()


def ledger_claim(ledger: pw.Database) -> LedgerClaim:
    """The claim on this ledger: beside its file for SQLite, on the server for
    PostgreSQL."""
    if isinstance(ledger, pw.SqliteDatabase):
        return SqliteClaim(ledger)
    if isinstance(ledger, pw.PostgresqlDatabase):
        return PostgresClaim(ledger)
    raise CoopError(f"Coop cannot claim a {type(ledger).__name__} ledger: use SQLite or PostgreSQL")
