"""Envelopes counted by state (the `counts` of `coop status`), what the app's header
counts, and the events that need a decision from Dad (the app's toasts and the
notifier outside it read the same ones)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, cast

import peewee as pw

from coop_engine.models import Dispatch, Event, Notification, Obligation, Outbox, Session, Todo
from coop_engine.prompts import review_command

# Every state an envelope can be in (DESIGN.md section 3), in the order of its life.
OUTBOX_STATES = ("pending", "uncertain", "delivered", "expired", "cancelled")
# What the header counts, most urgent first; `held` is the uncertain ones with a held
# notice, and `uncertain` the rest, so that each envelope is counted once.
HEADER_STATES = ("expired", "uncertain", "held", "pending")
# The kinds of alert: each is a decision for Dad, never a routine step.
ALERT_KINDS = ("expired", "conflict", "held", "adoption-refused", "overdue", "not-sent")
REASON_WORDS = {
    "refused-by-receiver-policy": "the receiver's settings refuse peer messages",
    "held-for-approval-then-expired": "the receiver held it for approval and the dialog expired",
    "receiver-idle-without-entry": "the receiver sat idle and its transcript has no entry",
    "withdrawn-from-queue": "taken back from Codex's queue",
}
ALERT_COMMANDS = (
    "expire",
    "record_conflict",
    "record_held",
    "adoption_search",
    "refused_before_sending",
)
# What to do for a hold, by the cause the receiver's notice names. Only a parity hold
# has a dialog; a frame in a Claude inbox cannot be withdrawn (NOT_TAKEN_BACK), and a
# hold Coop cannot explain is never worded as one it can.
HOLD_ADVICE = {
    "parity": "the receiver holds it for approval: answer its dialog (Deliver) on that Mac",
    "explicit": (
        'the receiver\'s settings hold peer messages ("crossSessionInbound": "hold"): no'
        ' dialog, no expiry; it is watched until they let it in: set it to "accept" in'
        " the user's settings, or remove a repository's \"hold\" (the held notice says which)"
    ),
    "unrecognized": (
        "the receiver's settings hold an unrecognized crossSessionInbound value: it is"
        ' watched until they let it in; correct it there ("accept" lets it in)'
    ),
    "unknown": (
        "the receiver holds it for a reason Coop cannot read: it is watched, never expired"
        " for silence; look at that chat (coop chat show) to see why"
    ),
}


def outbox_counts() -> dict[str, int]:
    """How many envelopes are in each state: every state named, 0 when none is in it.
    One grouped count, whatever the size of the outbox's history."""
    counts = dict.fromkeys(OUTBOX_STATES, 0)
    query = Outbox.select(Outbox.state, pw.fn.COUNT(Outbox.id)).group_by(Outbox.state)
    for state, count in cast(Iterable[tuple[str, int]], query.tuples()):
        counts[state] = count
    return counts


def header_counts() -> dict[str, int]:
    """The envelopes that may need Dad, by HEADER_STATES (held carved out of uncertain).

    Read on every change the app sees, so read from the ledger's indexes alone: each
    state a range of the (state, session) index, counted without touching a row (not
    the whole outbox grouped), and the held ones through the index of envelopes with a
    held notice. What it costs grows with the envelopes in those states (the expired
    ones stay), never with the delivered and cancelled history (tests/tui/test_scale.py).
    `outbox_counts`, every state, is for `coop status`, read once per call."""
    counts = dict.fromkeys(("expired", "uncertain", "pending"), 0)
    query = (
        Outbox.select(Outbox.state, pw.fn.COUNT(pw.SQL("*")))
        .where(Outbox.state.in_(list(counts)))
        .group_by(Outbox.state)
    )
    for state, count in cast(Iterable[tuple[str, int]], query.tuples()):
        counts[state] = count
    held = (
        Outbox.select(pw.fn.COUNT(pw.SQL("*")))
        .where((Outbox.state == "uncertain") & Outbox.held.is_null(False))
        .scalar()
    )
    return {
        "expired": counts["expired"],
        "uncertain": counts["uncertain"] - held,
        "held": held,
        "pending": counts["pending"],
    }


def unread_notices(after: int) -> tuple[int, int]:
    """How many notices came after notice id `after`, and the newest notice's id."""
    newest = Notification.select(pw.fn.MAX(Notification.id)).scalar() or 0
    unread = Notification.select().where(Notification.id > after).count()
    return unread, int(newest)


def _envelope_place(outbox_id: str) -> dict[str, Any]:
    """The chat, Mac and todo of an envelope (None for what is not known)."""
    row = (
        Outbox.select(Outbox, Session, Dispatch)
        .join(Session)
        .switch(Outbox)
        .join(Dispatch, pw.JOIN.LEFT_OUTER)
        .where(Outbox.id == outbox_id)
        .first()
    )
    if row is None:
        return {"outbox": outbox_id, "chat": None, "mac": None, "todo": None}
    todo = row.dispatch.todo_id if row.dispatch_id is not None else None
    return {
        "outbox": outbox_id,
        "chat": row.session.name or row.session.ref,
        "mac": row.session.host,
        "todo": todo,
    }


def _dispatch_place(dispatch_id: int) -> dict[str, Any]:
    """A dispatch's chat, Mac and todo, and its newest envelope (what `enter` opens)."""
    dispatch = Dispatch.get_or_none(Dispatch.id == dispatch_id)
    if dispatch is None:
        return {"outbox": None, "chat": None, "mac": None, "todo": None}
    newest = (
        Outbox.select(Outbox.id)
        .where(Outbox.dispatch == dispatch_id)
        .order_by(Outbox.created_at.desc())
        .first()
    )
    session = dispatch.session
    return {
        "outbox": newest.id if newest else None,
        "chat": (session.name or session.ref) if session else None,
        "mac": session.host if session else None,
        "todo": dispatch.todo_id,
    }


def _session_place(session_id: int) -> dict[str, Any]:
    session = Session.get_or_none(Session.id == session_id)
    if session is None:
        return {"outbox": None, "chat": None, "mac": None, "todo": None}
    return {"outbox": None, "chat": session.name or session.ref, "mac": session.host, "todo": None}


def place(subject: str | None) -> dict[str, Any]:
    """Where a notice or an event belongs: its envelope (if any), chat, Mac and todo."""
    kind, _, ident = (subject or "").partition(":")
    if kind == "outbox":
        return _envelope_place(ident)
    if kind == "dispatch" and ident.isdigit():
        return _dispatch_place(int(ident))
    if kind == "session" and ident.isdigit():
        return _session_place(int(ident))
    if kind == "obligation" and ident.isdigit():
        obligation = Obligation.get_or_none(Obligation.id == int(ident))
        if obligation is not None:
            return _dispatch_place(obligation.dispatch_id)
    return {"outbox": None, "chat": None, "mac": None, "todo": None}


def _alert_of(event: Event) -> tuple[str, str] | None:
    """The kind of alert an event is and what happened, in words; None when routine."""
    evidence = event.evidence if isinstance(event.evidence, dict) else {}
    if event.command == "expire":
        reason = str(evidence.get("reason") or "")
        return "expired", f"not delivered: {REASON_WORDS.get(reason, reason)} ({reason})"
    if event.command == "record_conflict":
        reason = str(evidence.get("reason") or "conflict")
        return "conflict", f"a sighting that is not its receipt: {reason}"
    if event.command == "record_held":
        advice = HOLD_ADVICE.get(str(evidence.get("cause")), HOLD_ADVICE["unknown"])
        return "held", advice
    if event.command == "refused_before_sending":
        said = str(evidence.get("error") or "refused")
        return "not-sent", f"not sent, nothing written: {said}; Coop tries again, less often"
    if event.command == "adoption_search":
        result = str(evidence.get("result") or "")
        if result.startswith("refused"):
            return "adoption-refused", f"adoption {result}"
        return None
    if event.command == "sweep_obligations" and event.to_state == "overdue":
        ident = event.subject.partition(":")[2]
        decide = review_command(int(ident), "dad") if ident.isdigit() else "coop obligations"
        return "overdue", f"no outcome reported yet: the obligation is overdue; decide: {decide}"
    return None


TITLES = {
    "expired": "Delivery expired",
    "conflict": "Delivery conflict",
    "held": "Delivery held",
    "adoption-refused": "Adoption refused",
    "overdue": "Obligation overdue",
    "not-sent": "Delivery not sent",
}


def alerts_between(after: int, upto: int | None = None) -> list[dict[str, Any]]:
    """The events after id `after` (up to `upto`) that need a decision, oldest first:
    kind (one of ALERT_KINDS), title, text, and where (outbox, chat, mac, todo)."""
    query = Event.select().where(
        (Event.id > after)
        & (
            Event.command.in_(ALERT_COMMANDS)
            | ((Event.command == "sweep_obligations") & (Event.to_state == "overdue"))
        )
    )
    if upto is not None:
        query = query.where(Event.id <= upto)
    alerts = []
    for event in query.order_by(Event.id):
        alert = _alert_of(event)
        if alert is None:
            continue
        kind, text = alert
        where = place(event.subject)
        todo = Todo.get_or_none(Todo.id == where["todo"]) if where["todo"] else None
        alerts.append(
            {
                "event": event.id,
                "kind": kind,
                "title": TITLES[kind],
                "text": text,
                "todo_title": todo.title if todo else None,
                **where,
            }
        )
    return alerts
