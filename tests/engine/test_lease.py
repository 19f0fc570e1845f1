"""The coordinator's lease (issue 31), on SQLite and on PostgreSQL: taken by raising the
epoch once it lapsed by the database's clock, renewed only by a compare-and-set on the
holder's epoch, and checked (the fence) by the transaction that records an intent to
send, which writes nothing for a writer whose epoch is no longer current."""

from __future__ import annotations

import time

import peewee as pw
import pytest

from coop_engine import lease
from coop_engine.engine import Engine
from coop_engine.errors import Fenced
from coop_engine.lease import Claimant
from coop_engine.models import HostQueue

from .support import Steps, cursor, row

OLD = Claimant(4242, "office", "serve")
NEW = Claimant(4343, "laptop", "serve")
SECONDS = 15.0


def taken(ledger: pw.Database, me: Claimant, *, gone: bool = False) -> int:
    epoch = lease.take(ledger, lease.read(ledger), me, SECONDS, holder_gone=gone, session_lock=True)
    assert epoch is not None
    return epoch


def test_an_intent_under_a_lease_a_successor_took_is_fenced_and_writes_nothing(
    engine: Engine, ledger: pw.Database, steps: Steps
) -> None:
    outbox = steps.invitation()["outbox"]
    engine.epoch = taken(ledger, OLD)
    assert taken(ledger, NEW, gone=True) == engine.epoch + 1  # the holder was found gone
    with pytest.raises(Fenced, match="moved from epoch 1 to 2"):
        engine.mark_uncertain(outbox, cursor())
    assert row(outbox).state == "pending"
    assert HostQueue.select().count() == 0
    engine.epoch = 2  # the successor's own intent goes through
    assert engine.mark_uncertain(outbox, cursor())["attempt"] == 1
    assert row(outbox).state == "uncertain"


def test_a_renewal_after_a_takeover_is_fenced_and_moves_nothing(ledger: pw.Database) -> None:
    mine = taken(ledger, OLD)
    lease.renew(ledger, mine, OLD, SECONDS, True)
    successor = taken(ledger, NEW, gone=True)
    before = lease.read(ledger)
    with pytest.raises(Fenced):
        lease.renew(ledger, mine, OLD, SECONDS, True)
    after = lease.read(ledger)
    assert before is not None and after is not None
    assert (after.epoch, after.pid, after.expires_at) == (successor, NEW.pid, before.expires_at)
    assert after.fenced == {"pid": OLD.pid, "host": OLD.host, "epoch": mine}
    # The same process holding the lease again, at a later epoch: a renewal of its old
    # epoch (a renewer left from before it stepped down) still moves nothing.
    again = taken(ledger, OLD, gone=True)
    with pytest.raises(Fenced):
        lease.renew(ledger, mine, OLD, -1.0, True)
    now = lease.read(ledger)
    assert now is not None and now.epoch == again and not now.lapsed


def test_an_unlapsed_lease_is_not_taken_and_a_lapsed_one_raises_the_epoch(
    ledger: pw.Database,
) -> None:
    first = taken(ledger, OLD)
    assert (
        lease.take(ledger, lease.read(ledger), NEW, SECONDS, holder_gone=False, session_lock=False)
        is None
    )
    lease.renew(ledger, first, OLD, -1.0, True)  # ran out a second ago, by the database
    seen = lease.read(ledger)
    assert seen is not None and seen.lapsed
    assert lease.take(ledger, seen, NEW, SECONDS, holder_gone=False, session_lock=False) == 2
    # A second taker that read the same lease loses the compare-and-set.
    assert lease.take(ledger, seen, OLD, SECONDS, holder_gone=False, session_lock=False) is None


def test_the_lease_runs_on_the_database_s_clock_not_the_machine_s(
    ledger: pw.Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder whose machine's clock is an hour behind still holds a lease the next
    taker cannot take: the lease's times are the database's."""
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() - 3600)
    first = taken(ledger, OLD)
    lease.renew(ledger, first, OLD, SECONDS, True)
    monkeypatch.setattr(time, "time", real)
    seen = lease.read(ledger)
    assert seen is not None and not seen.lapsed
    assert abs(seen.expires_at - (real() + SECONDS)) < 60
    assert lease.take(ledger, seen, NEW, SECONDS, holder_gone=False, session_lock=False) is None
