"""Envelopes counted by state: the `counts` of `coop status`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

import peewee as pw

from coop_engine.models import Outbox

# Every state an envelope can be in (DESIGN.md section 3), in the order of its life.
OUTBOX_STATES = ("pending", "uncertain", "delivered", "expired", "cancelled")


def outbox_counts() -> dict[str, int]:
    """How many envelopes are in each state: every state named, 0 when none is in it.
    One grouped count, whatever the size of the outbox's history."""
    counts = dict.fromkeys(OUTBOX_STATES, 0)
    query = Outbox.select(Outbox.state, pw.fn.COUNT(Outbox.id)).group_by(Outbox.state)
    for state, count in cast(Iterable[tuple[str, int]], query.tuples()):
        counts[state] = count
    return counts
