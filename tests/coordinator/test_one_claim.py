"""One coordinator per ledger (issue 12): while one process holds a SQLite ledger's
claim, another's take is refused naming the holder, and the claim is free once let go.
Two claims in one process are two claimants as well: each is its own open file."""

from __future__ import annotations

from pathlib import Path

import pytest

from coop_engine import lease
from coop_engine.db import open_ledger
from coop_engine.loop.claim import Claimed, SqliteClaim


def test_a_held_claim_refuses_a_second_taker_until_it_is_let_go(tmp_path: Path) -> None:
    ledger = open_ledger(tmp_path)
    first, second = SqliteClaim(ledger), SqliteClaim(ledger)
    holder = first.take("office", "serve")
    try:
        with pytest.raises(Claimed):
            second.take("laptop", "app")
        assert second.holder is None
        assert first.look().state == "running"
    finally:
        first.release()
    assert second.take("laptop", "app").host == "laptop"
    second.release()
    assert holder.host == "office"


def test_a_held_flock_refuses_a_taker_even_once_the_lease_lapsed(tmp_path: Path) -> None:
    """A SQLite holder that hangs keeps its flock: no second process holds the file while
    it lives, however long ago its lease ran out (the flock is the same-file guard)."""
    ledger = open_ledger(tmp_path)
    first, second = SqliteClaim(ledger), SqliteClaim(ledger)
    holder = first.take("office", "serve")
    try:
        assert first.epoch is not None
        me = first.claimant(holder.host, holder.by)
        lease.renew(ledger, first.epoch, me, -1.0, True)  # ran out a second ago
        with pytest.raises(Claimed):
            second.take("laptop", "serve")
        assert second.holder is None
    finally:
        first.release()
    assert second.take("laptop", "serve").host == "laptop"
    assert second.epoch == 2
    second.release()
