"""How long an envelope that could not even be sent waits before its next try.

A frame refused before a byte left (no live chat, a socket that fails the private-socket
checks, a connect refused) proves nothing about the receiver and costs it nothing, so it
is tried again, never given up. The first refusal is tried again at the next pass (a
registry caught mid-rewrite, a chat just starting); from the second in a row each try
waits twice as long as the one before, from FIRST_WAIT up to LONGEST_WAIT, so that a
chat whose inbox refuses costs the office a few tries a minute at first and one every
five minutes after that, not a pass every 50 ms. A written frame, or Send again, starts
the count afresh.
"""

from __future__ import annotations

from coop_engine.formats import iso
from coop_engine.models import Outbox

FIRST_WAIT = 5.0
LONGEST_WAIT = 300.0


def wait_after(refusals: int) -> float:
    """The wait after `refusals` tries in a row that wrote nothing."""
    if refusals <= 1:
        return 0.0
    return min(LONGEST_WAIT, FIRST_WAIT * 2 ** (refusals - 2))


def retry_at(row: Outbox) -> float | None:
    """When a pending envelope refused before sending may be tried again; None when it
    was not refused."""
    if row.state != "pending" or not row.refusals or row.refused_at is None:
        return None
    return float(row.refused_at) + wait_after(int(row.refusals))


def waits(row: Outbox, now: float) -> bool:
    """Whether the envelope's next try is still to come."""
    at = retry_at(row)
    return at is not None and now < at


def described(row: Outbox) -> str | None:
    """Why a pending envelope waits, in words, when refusals hold it back."""
    at = retry_at(row)
    if at is None:
        return None
    tries = "1 try" if row.refusals == 1 else f"{row.refusals} tries"
    return (
        f"not sent ({tries}, nothing written): {row.last_error}; next try at {iso(at, 'seconds')}"
    )
