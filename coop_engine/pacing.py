"""Pacing: Coop never sends a chat more than its receiver admits (DESIGN.md 5.7b).

The real receiver admits, per receiving chat and sender key (``from:cwkCoop``, the same
for every Coop process): a bucket of 30 frames refilled at 0.5 per second; at most 50
undelivered peer messages queued; and no body identical to the last one it admitted
within 30 s. A frame beyond any of these is dropped at the inbox and never reaches the
chat, so Coop keeps inside all three before it sends.

Everything is derived from the ledger, so every Coop process sharing it paces the same
chat together. A chat is its native session id on its host, across every Session row
naming it. Its frames are the host-queue rows of its envelopes (an attempt the host
refused before connecting wrote nothing and does not count), each at the row's last
update: the transport when recorded, else the intent (mark_uncertain's time). Outstanding
frames are envelopes sent and not yet received (``uncertain``).

The receiver times arrivals by its own clock, a little after Coop recorded them, so Coop
keeps these limits with a clock 5% slow: its bucket refills at 0.475 a second and its
same-text window lasts 31.6 s. A paced envelope goes at the whole second its reason
names, not before, so what the reason promises is what happens.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import peewee as pw

from coop_engine.formats import iso
from coop_engine.models import HostQueue, Outbox, Session

BURST = 30
RECEIVER_REFILL_PER_SECOND = 0.5
MAX_OUTSTANDING = 50
RECEIVER_SAME_TEXT_SECONDS = 30.0
SLOW = 0.95  # Coop's clock for the limits runs this much slower than the receiver's
REFILL_PER_SECOND = RECEIVER_REFILL_PER_SECOND * SLOW
SAME_TEXT_SECONDS = RECEIVER_SAME_TEXT_SECONDS / SLOW
# 200 frames at the receiver's pace span over five minutes, while an idle minute refills
# the bucket: older frames matter only to a chat fed at full rate all along, and for that
# one the bucket is taken as empty after the oldest frame read (never as fuller).
FRAME_HISTORY = 200
NOT_SENT = "refused"  # the host-queue state of an attempt that wrote nothing


@dataclass(frozen=True)
class Bucket:
    """The least the receiver's bucket holds just after Coop's latest frame (``at``)."""

    tokens: float
    at: float

    def admits(self, ahead: int = 0) -> float | None:
        """When it next holds a token for a frame that waits behind ``ahead`` others
        (each taking its token as soon as it may); None: it holds one already."""
        if ahead == 0 and self.tokens >= 1:
            return None
        return self.at + max(0.0, 1 + ahead - self.tokens) / REFILL_PER_SECOND


def bucket(times: Sequence[float], whole: bool) -> Bucket | None:
    """The receiver's bucket after the frames sent at ``times`` (ascending), replayed
    with Coop's slower refill. ``whole``: these are every frame the chat got from Coop,
    so the bucket was full before the first; otherwise it is taken as empty just after
    the first. None when there are no frames (the bucket is full)."""
    if not times:
        return None
    tokens, at, rest = (float(BURST), times[0], times) if whole else (0.0, times[0], times[1:])
    for sent in rest:
        tokens = min(float(BURST), tokens + max(0.0, sent - at) * REFILL_PER_SECOND)
        # The receiver takes a token only from a frame it admits: it never holds fewer
        # than none, whatever an unpaced past sent.
        tokens = max(0.0, tokens - 1)
        at = sent
    return Bucket(tokens, at)


def pace(row: Outbox, now: float) -> str | None:
    """None when the pending envelope ``row`` may go to its chat at ``now``; otherwise
    why not and when it goes, in words ("paced: ..."). The words depend only on what
    the ledger recorded, so every pass gives the same text until something changes."""
    paced = _paced(row, now)
    return None if paced is None else paced[0]


def goes_at(row: Outbox, now: float) -> float | None:
    """When a paced envelope may go, if a time decides it (None when it may go now, or
    when it waits for a receipt rather than a time)."""
    paced = _paced(row, now)
    return None if paced is None else paced[1]


def _paced(row: Outbox, now: float) -> tuple[str, float | None] | None:
    chat = _chat(row.session)
    outstanding = _outstanding(chat)
    if outstanding >= MAX_OUTSTANDING:
        return (
            f"paced: {outstanding} envelopes to this chat are not yet received, as many "
            "as its queue holds; this goes once one of them is",
            None,
        )
    repeat = _same_text_sent_at(chat, row.payload.get("text"), now)
    state = _bucket(chat)
    bucket_due = _bucket_due(state, now)
    if repeat is not None:
        repeat_due = _second(repeat + SAME_TEXT_SECONDS)
        if repeat_due >= (bucket_due or 0):
            return (
                f"paced: this chat got the same text at {_clock(repeat)} and drops a "
                f"repeat within 30 s; this goes at {_clock(repeat_due)}",
                repeat_due,
            )
    if state is None or bucket_due is None:
        return None
    # The first in line goes at bucket_due; those behind it are weighed again then.
    return _bucket_reason(state, bucket_due, _ahead(row, chat)), bucket_due


def _bucket_due(state: Bucket | None, now: float) -> float | None:
    """The whole second at which the bucket next admits a frame, while still ahead."""
    free = None if state is None else state.admits()
    if free is None or _second(free) <= now:
        return None
    return _second(free)


def _bucket_reason(state: Bucket, due: float, ahead: int) -> str:
    """The bucket's next token at ``due``; and, for an envelope behind others in line,
    about when its own turn comes."""
    reason = f"paced: this chat admits one more frame at {_clock(due)}"
    turn = state.admits(ahead)
    if ahead and turn is not None:
        waiting = "1 envelope waits" if ahead == 1 else f"{ahead} envelopes wait"
        reason += f", and {waiting} ahead of this one: about {_clock(_second(turn))}"
    return reason


# --- what the ledger recorded ------------------------------------------------------------


def _chat(session: Session) -> pw.ModelSelect[Session]:
    """Every Session row naming the chat: its native id on its host."""
    return Session.select(Session.id).where(
        (Session.host == session.host) & (Session.native_id == session.native_id)
    )


def _frames(chat: pw.ModelSelect[Session]) -> pw.ModelSelect[HostQueue]:
    return (
        HostQueue.select()
        .join(Outbox)
        .where(Outbox.session.in_(chat) & (HostQueue.state != NOT_SENT))
    )


def _tuples(query: pw.ModelSelect[HostQueue]) -> Iterable[tuple[Any, ...]]:
    """The rows as plain tuples: no model objects for what every paced envelope asks on
    every pass."""
    return cast("Iterable[tuple[Any, ...]]", query.tuples())


def _outstanding(chat: pw.ModelSelect[Session]) -> int:
    """Envelopes to the chat sent and not yet received."""
    uncertain = Outbox.select().where(Outbox.session.in_(chat) & (Outbox.state == "uncertain"))
    return int(uncertain.count())


def _bucket(chat: pw.ModelSelect[Session]) -> Bucket | None:
    latest = (
        _frames(chat)
        .select(HostQueue.updated_at)
        .order_by(HostQueue.updated_at.desc())
        .limit(FRAME_HISTORY)
    )
    times = sorted(float(at) for (at,) in _tuples(latest))
    return bucket(times, whole=len(times) < FRAME_HISTORY)


def _same_text_sent_at(chat: pw.ModelSelect[Session], text: object, now: float) -> float | None:
    """When the chat last got a frame saying exactly ``text``, if a repeat may not go
    yet (its window, rounded up to the second, has not passed)."""
    recent = _frames(chat).select(HostQueue.updated_at, Outbox.payload)
    recent = recent.where(HostQueue.updated_at > now - SAME_TEXT_SECONDS - 1)
    times = [
        float(at)
        for at, payload in _tuples(recent)
        if payload.get("text") == text and _second(float(at) + SAME_TEXT_SECONDS) > now
    ]
    return max(times, default=None)


def _ahead(row: Outbox, chat: pw.ModelSelect[Session]) -> int:
    """Pending envelopes to the chat that the coordinator reaches before this one."""
    earlier = (Outbox.created_at < row.created_at) | (
        (Outbox.created_at == row.created_at) & (Outbox.id < row.id)
    )
    waiting = Outbox.select().where(
        Outbox.session.in_(chat) & (Outbox.state == "pending") & earlier
    )
    return int(waiting.count())


# --- words -------------------------------------------------------------------------------


def _second(at: float) -> float:
    """The whole second at or after ``at``: a paced envelope goes at the time it names."""
    return float(math.ceil(at))


def _clock(at: float) -> str:
    """HH:MM:SS in UTC."""
    return (iso(at, timespec="seconds") or "")[11:19]
