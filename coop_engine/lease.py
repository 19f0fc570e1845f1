"""The coordinator's lease on the ledger, and the fence every intent to send passes.

One row (engine_lease) says which process may send: its pid and Mac, its epoch, and
until when (`expires_at`). The holder renews it every third of its length by a
compare-and-set on its epoch; a taker raises the epoch by one, by a compare-and-set on
the epoch it read, once the lease ran out (or once the holder's session lock is found
free: the holder is gone). Every time is the database's clock (`now()` on PostgreSQL,
SQLite's own on SQLite), read inside the statement that decides: the Macs' clocks
disagree, and a process that slept cannot know how long it slept.

The fence: the transaction that records an intent to send (delivery.mark_uncertain)
reads the lease's epoch and refuses (`Fenced`) unless it is the writer's own. A holder
that slept through its lease and woke finds its successor's epoch there, and writes
nothing, so it sends nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import peewee as pw

from coop_engine.db import is_sqlite
from coop_engine.errors import Fenced
from coop_engine.models import Lease, Standby

NAME = "coordinator"  # the one lease row's key
# The epoch a writer sends under on a ledger no coordinator ever leased (`coop tick` on
# a home nobody serves): the fence lets it through only while there is still no lease.
NO_LEASE = 0
DEFAULT_SECONDS = 15.0
_SQLITE_NOW = "((julianday('now') - 2440587.5) * 86400.0)"
_POSTGRES_NOW = "CAST(EXTRACT(EPOCH FROM now()) AS DOUBLE PRECISION)"


def db_now(db: pw.Database) -> Any:
    """The database's clock, as Unix seconds, for use inside a statement."""
    return pw.SQL(_SQLITE_NOW if is_sqlite(db) else _POSTGRES_NOW)


@dataclass(frozen=True)
class Claimant:
    """A process that holds or asks for the lease."""

    pid: int
    host: str
    by: str  # serve, or app


@dataclass(frozen=True)
class Seen:
    """The lease as one read saw it, with the database's clock at that read."""

    epoch: int
    pid: int
    host: str
    by: str
    seconds: float
    session_lock: bool
    started_at: float
    renewed_at: float
    expires_at: float
    now: float
    fenced: dict[str, Any] | None = None  # the holder the last takeover fenced out

    @property
    def lapsed(self) -> bool:
        return self.expires_at < self.now

    @property
    def age(self) -> float:
        """Seconds since its holder last renewed it, by the database's clock."""
        return max(0.0, self.now - self.renewed_at)

    def held_by(self, me: Claimant) -> bool:
        return (self.pid, self.host) == (me.pid, me.host)

    def as_json(self) -> dict[str, Any]:
        return {
            "holder": {"pid": self.pid, "host": self.host, "by": self.by},
            "epoch": self.epoch,
            "lease_seconds": self.seconds,
            "lease_age": round(self.age, 3),
            "lease_lapsed": self.lapsed,
            "fenced_out": self.fenced,
        }


def read(db: pw.Database) -> Seen | None:
    """The lease now, or None when no coordinator ever held it."""
    row = (
        Lease.select(
            Lease.epoch,
            Lease.pid,
            Lease.host,
            Lease.by,
            Lease.seconds,
            Lease.session_lock,
            Lease.started_at,
            Lease.renewed_at,
            Lease.expires_at,
            db_now(db).alias("now"),
            Lease.fenced_pid,
            Lease.fenced_host,
            Lease.fenced_epoch,
        )
        .where(Lease.name == NAME)
        .tuples()
        .first()
    )
    if row is None:
        return None
    epoch, pid, host, by, seconds, lock, started, renewed, expires, now, *old = row
    fenced_pid, fenced_host, fenced_epoch = old
    fenced = None
    if fenced_pid is not None:
        fenced = {"pid": int(fenced_pid), "host": str(fenced_host), "epoch": int(fenced_epoch)}
    return Seen(
        int(epoch),
        int(pid),
        str(host),
        str(by),
        float(seconds),
        bool(lock),
        float(started),
        float(renewed),
        float(expires),
        float(now),
        fenced,
    )


def take(
    db: pw.Database,
    seen: Seen | None,
    me: Claimant,
    seconds: float,
    *,
    holder_gone: bool,
    session_lock: bool,
) -> int | None:
    """Take the lease `seen` was read as: the epoch after it when this process won the
    compare-and-set, else None. Taken only when the lease lapsed by the database's
    clock, or `holder_gone` (its session lock was found free), and nobody took it since
    the read."""
    now = db_now(db)
    fields = {
        Lease.pid: me.pid,
        Lease.host: me.host,
        Lease.by: me.by,
        Lease.seconds: seconds,
        Lease.session_lock: session_lock,
        Lease.started_at: now,
        Lease.renewed_at: now,
        Lease.expires_at: now + seconds,
    }
    if seen is None:
        inserted = (
            Lease.insert({Lease.name: NAME, Lease.epoch: 1, **fields})
            .on_conflict_ignore()
            .execute()
        )
        # SQLite's and PostgreSQL's answers to an ignored insert differ: read back.
        after = read(db)
        won = inserted and after is not None and after.epoch == 1 and after.held_by(me)
        return 1 if won else None
    due = Lease.expires_at < now
    if holder_gone:
        due = due | pw.SQL("1 = 1")
    fenced = {Lease.fenced_pid: Lease.pid, Lease.fenced_host: Lease.host}
    changed = (
        Lease.update(
            {Lease.epoch: Lease.epoch + 1, Lease.fenced_epoch: Lease.epoch, **fenced, **fields}
        )
        .where((Lease.name == NAME) & (Lease.epoch == seen.epoch) & due)
        .execute()
    )
    return seen.epoch + 1 if changed == 1 else None


def renew(db: pw.Database, epoch: int, me: Claimant, seconds: float, session_lock: bool) -> None:
    """Push the lease's end `seconds` past the database's clock; Fenced when the lease is
    no longer this process's at this epoch (a successor raised it)."""
    now = db_now(db)
    changed = (
        Lease.update(
            {
                Lease.renewed_at: now,
                Lease.expires_at: now + seconds,
                Lease.seconds: seconds,
                Lease.session_lock: session_lock,
            }
        )
        .where(
            (Lease.name == NAME)
            & (Lease.epoch == epoch)
            & (Lease.pid == me.pid)
            & (Lease.host == me.host)
        )
        .execute()
    )
    if changed != 1:
        raise Fenced(fenced_line(epoch, read(db)))


def release(db: pw.Database, epoch: int, me: Claimant) -> None:
    """Let the lease lapse now, if it is still this process's: the next taker need not
    wait for it to run out."""
    now = db_now(db)
    Lease.update({Lease.expires_at: now, Lease.session_lock: False}).where(
        (Lease.name == NAME) & (Lease.epoch == epoch) & (Lease.pid == me.pid)
    ).execute()


def check_fence(db: pw.Database, epoch: int) -> None:
    """Inside the transaction that records an intent to send: Fenced unless the lease's
    epoch is still `epoch` (NO_LEASE: unless there is still no lease). On PostgreSQL the
    row is read FOR SHARE, so a takeover waits for this transaction, and this
    transaction for a takeover under way."""
    if is_sqlite(db):
        current = Lease.select(Lease.epoch).where(Lease.name == NAME).scalar()
    else:
        row = db.execute_sql(
            "SELECT epoch FROM engine_lease WHERE name = %s FOR SHARE", (NAME,)
        ).fetchone()
        current = None if row is None else row[0]
    current = NO_LEASE if current is None else current
    if current != epoch:
        raise Fenced(fenced_line(epoch, read(db)))


def fenced_line(epoch: int, now: Seen | None) -> str:
    """The one line a fenced-out writer says."""
    if now is None:
        return f"fenced out: this coordinator's lease (epoch {epoch}) is gone; it sends nothing"
    if epoch == NO_LEASE:
        return (
            f"fenced out: a coordinator took this ledger's lease (epoch {now.epoch}, pid "
            f"{now.pid} on {now.host}) during this pass; this pass sends nothing more"
        )
    return (
        f"fenced out: the lease moved from epoch {epoch} to {now.epoch} "
        f"(pid {now.pid} on {now.host}); this coordinator sends nothing"
    )


def stand_by(db: pw.Database, me: Claimant, seconds: float) -> None:
    """Record (again) that this process waits for the lease, every `seconds`."""
    now = db_now(db)
    Standby.insert(host=me.host, pid=me.pid, since=now, seen_at=now, seconds=seconds).on_conflict(
        conflict_target=[Standby.host, Standby.pid],
        update={Standby.seen_at: now, Standby.seconds: seconds},
    ).execute()


def forget_standby(db: pw.Database, me: Claimant) -> None:
    Standby.delete().where((Standby.host == me.host) & (Standby.pid == me.pid)).execute()


def standbys(db: pw.Database) -> list[dict[str, Any]]:
    """The standbys that said so within three of their own periods, oldest first."""
    now = db_now(db)
    query: Any = (
        Standby.select(Standby.host, Standby.pid, Standby.since, (now - Standby.seen_at))
        .where(Standby.seen_at > now - Standby.seconds * 3)
        .order_by(Standby.since, Standby.pid)
        .tuples()
    )
    rows: list[tuple[Any, ...]] = list(query)
    return [
        {
            "pid": int(pid),
            "host": str(host),
            "since": float(since),
            "seen_ago": round(max(0.0, float(ago)), 3),
        }
        for host, pid, since, ago in rows
    ]
