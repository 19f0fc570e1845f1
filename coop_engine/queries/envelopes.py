"""Envelopes with their five facts: the outbox as `coop outbox --json` prints it, the
pane's window of the newest ones, and one envelope's delivery detail."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import peewee as pw

from coop_engine import backoff
from coop_engine.errors import ENVELOPE_ID_TOO_SHORT, Ambiguous, NotFound, shown
from coop_engine.formats import iso
from coop_engine.models import (
    Dispatch,
    Event,
    HostQueue,
    Outbox,
    QueueSighting,
    Session,
    database,
)
from coop_engine.naming import CANDIDATES_SHOWN, label, short_ids
from coop_engine.policy import expiry_unknown
from coop_engine.queries.listings import event

OUTBOX_WINDOW = 300
MIN_ID_PREFIX = 4


def facts(row: Outbox, dispatch: Dispatch | None) -> dict[str, str | None]:
    """The five facts, each null or the time it became true."""
    accepted = row.accepted_at
    if accepted is None and row.kind == "work" and dispatch is not None:
        accepted = dispatch.accepted_at
    outcome = dispatch.outcome_at if dispatch is not None and row.state == "delivered" else None
    return {
        "stored": iso(row.created_at),
        "transport": iso(row.transport_at),
        "received": iso(row.received_at),
        "accepted": iso(accepted),
        "outcome": iso(outcome),
    }


def codex_queue(row: Outbox) -> dict[str, Any] | None:
    """What the last survey saw of a Codex envelope in Codex's queue (`queued`, `open`),
    or None: not a Codex envelope sent and not yet received, or not seen there yet."""
    if row.session.vendor != "codex" or row.state != "uncertain":
        return None
    seen = QueueSighting.get_or_none(QueueSighting.outbox == row.id)
    return None if seen is None else {"queued": seen.queued, "open": seen.open}


def waiting(row: Outbox) -> str | None:
    """Why an envelope waits rather than being sent or given up, in words: refused
    before sending (its next try), or uncertain and never expired for silence."""
    if row.state == "pending":
        return backoff.described(row)
    if row.state != "uncertain" or row.session.vendor != "claude":
        return None
    inbound = (row.cursor or {}).get("inbound")
    held = row.held or {}
    if held.get("cause") == "parity":
        if expiry_unknown(inbound):
            return "held by the receiver, expiry unknown: never expired for silence"
        return "held by the receiver until its approval dialog expires"
    if held:
        return "held by the receiver's settings: watched until they release it"
    if (inbound or {}).get("verdict") == "unknown":
        return "the receiver's verdict is unknown: never expired for silence"
    return None


def envelope(row: Outbox) -> dict[str, Any]:
    """One envelope as `coop outbox --json` shows it (row joined with its session and
    dispatch). `door` is claude or codex; `queued`, for a Codex envelope sent and not
    yet received, whether its id still waits in Codex's queue (null: not seen yet)."""
    dispatch: Dispatch | None = row.dispatch
    session: Session = row.session
    seen = codex_queue(row)
    return {
        "id": row.id,
        "kind": row.kind,
        "todo": dispatch.todo_id if dispatch is not None else row.payload.get("todo"),
        "session": session.ref,
        "session_id": session.id,
        "session_name": label(session.name, session.cwd, session.native_id),
        "host": session.host,
        "generation": row.generation,
        "dispatch": dispatch.id if dispatch is not None else None,
        "state": row.state,
        "facts": facts(row, dispatch),
        "reason": (row.expiry or {}).get("reason"),
        "conflict": row.conflict,
        "last_error": row.last_error,
        "held": row.held,
        "waiting": waiting(row),
        "inbound": (row.cursor or {}).get("inbound"),
        "resent_as": row.resent_as,
        "resent_from": row.resent_from,
        "created_at": iso(row.created_at),
        "payload": row.payload,
        "door": session.vendor,
        "queued": None if seen is None else seen["queued"],
        "thread_open": None if seen is None else seen["open"],
    }


def _joined() -> pw.ModelSelect[Outbox]:
    return (
        Outbox.select(Outbox, Session, Dispatch)
        .join(Session)
        .switch(Outbox)
        .join(Dispatch, join_type=pw.JOIN.LEFT_OUTER)  # a reply has no dispatch
    )


def envelope_row(outbox_id: str) -> dict[str, Any]:
    """One envelope by its whole id, or NotFound."""
    row = _joined().where(Outbox.id == outbox_id).first()
    if row is None:
        raise NotFound(f"No outbox envelope {outbox_id}")
    return envelope(row)


def outbox(limit: int | None = None) -> list[dict[str, Any]]:
    """Every envelope, oldest first."""
    query = _joined().order_by(Outbox.created_at, Outbox.id)
    if limit:
        query = query.limit(limit)
    return [envelope(row) for row in query]


def resolve_outbox_id(text: str) -> str:
    """An envelope id, or a unique prefix of one (at least MIN_ID_PREFIX characters) as
    the tables show them. NotFound, in one short line, when it names no envelope or is
    too short to name one; Ambiguous when it names several, listing them (their short
    ids, kind, todo and chat)."""
    wanted = text.strip().lower()
    if len(wanted) < MIN_ID_PREFIX:
        raise NotFound(ENVELOPE_ID_TOO_SHORT.format(count=MIN_ID_PREFIX))
    if len(wanted) > len("00000000-0000-0000-0000-000000000000"):
        # Longer than a UUID names nothing, and SQLite refuses a LIKE pattern of 50,000.
        raise NotFound(f"No outbox envelope {shown(text.strip())}")
    if Outbox.get_or_none(Outbox.id == wanted) is not None:
        return wanted
    matches = sorted(
        str(row.id) for row in Outbox.select(Outbox.id).where(Outbox.id.startswith(wanted))
    )
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise Ambiguous(_envelopes_named(wanted, matches))
    raise NotFound(f"No outbox envelope {shown(text.strip())}")


def _envelopes_named(wanted: str, matches: list[str]) -> str:
    """One line naming the envelopes a prefix matched: `ab12cd34 (invitation, todo #3,
    reviewer-7)`, the first few and how many more."""
    shorts = short_ids(matches)
    listed = [envelope(row) for row in _joined().where(Outbox.id.in_(matches[:CANDIDATES_SHOWN]))]
    listed.sort(key=lambda row: str(row["id"]))

    def candidate(row: dict[str, Any]) -> str:
        todo = f", todo #{row['todo']}" if row["todo"] is not None else ""
        return f"{shorts[row['id']]} ({row['kind']}{todo}, {row['session_name']})"

    more = len(matches) - len(listed)
    tail = f" and {more} more" if more > 0 else ""
    names = ", ".join(candidate(row) for row in listed)
    return f"{wanted!r} names {len(matches)} envelopes: {names}{tail}; give more of the id"


# --- the pane's window -------------------------------------------------------------------


@dataclass
class OutboxWindow:
    rows: list[dict[str, Any]]
    total: int
    session_id: int | None = None


def _like(field: pw.Node, template: str, term: str) -> pw.Expression:
    """`field` ILIKE the template around `term`, its wildcards taken literally. The
    pattern is not converted: a JSON field would quote it as a document."""
    escaped = term.replace("\\", "\\\\").replace("_", "\\_").replace("%", "\\%")
    pattern = pw.NodeList(
        (
            pw.Value(template.format(escaped), converter=False),
            pw.SQL("ESCAPE"),
            pw.Value("\\", converter=False),
        )
    )
    return pw.Expression(field, pw.OP.ILIKE, pattern)


def _reason() -> pw.Node:
    """The reason inside an expiry's evidence (a JSON document stored as text), read by
    the ledger's own JSON function: a LIKE over the document would match its evidence."""
    if isinstance(database.obj, pw.PostgresqlDatabase):
        return pw.fn.json_extract_path_text(Outbox.expiry.cast("json"), "reason").coerce(False)
    return pw.fn.json_extract(Outbox.expiry, "$.reason").coerce(False)


def _term(term: str) -> pw.Expression:
    """One filter word, any case, against every column the outbox shows: the state, the
    kind, the reason (or conflict, or error), the chat's Mac and name, the start of the
    envelope's or the chat's id, and a todo (`#12` is the todo only; `12` also an id)."""
    if term.startswith("#") and term[1:].isdigit():
        return Dispatch.todo == int(term[1:])
    condition = (
        _like(Outbox.state, "%{}%", term)
        | _like(Outbox.kind, "%{}%", term)
        | _like(Outbox.id, "{}%", term)
        | _like(Session.native_id, "{}%", term)
        | _like(Session.vendor, "{}%", term)
        | _like(Session.host, "%{}%", term)
        | _like(Session.name, "%{}%", term)
        | _like(Outbox.conflict, "%{}%", term)
        | _like(Outbox.last_error, "%{}%", term)
        | _like(_reason(), "%{}%", term)
    )
    if term.isdigit():
        condition |= Dispatch.todo == int(term)
    return condition


def _matching(text: str) -> pw.Expression | None:
    """Every word of the filter must match (`expired laptop`: expired and on the laptop);
    None when the text has no word."""
    condition: pw.Expression | None = None
    for term in text.split():
        condition = _term(term) if condition is None else condition & _term(term)
    return condition


def outbox_window(
    session_id: int | None = None, limit: int = OUTBOX_WINDOW, text: str | None = None
) -> OutboxWindow:
    """The newest envelopes (of one chat, or matching every word of a filter), newest
    first. Its cost stays the same at a hundred envelopes and at a hundred thousand."""
    query = _joined()
    matching = _matching(text or "")
    # Without a filter word, count the outbox alone: no join over the whole history.
    count = _joined() if matching is not None else Outbox.select()
    if session_id is not None:
        query = query.where(Outbox.session == session_id)
        count = count.where(Outbox.session == session_id)
    if matching is not None:
        query = query.where(matching)
        count = count.where(matching)
    rows = query.order_by(Outbox.created_at.desc(), Outbox.id.desc()).limit(limit)
    return OutboxWindow([envelope(row) for row in rows], count.count(), session_id)


def envelopes_touched(outbox_ids: set[str], dispatch_ids: set[int]) -> list[dict[str, Any]]:
    """The envelopes named, and every envelope of the dispatches named."""
    condition = Outbox.id.in_(outbox_ids) if outbox_ids else None
    if dispatch_ids:
        by_dispatch = Outbox.dispatch.in_(dispatch_ids)
        condition = by_dispatch if condition is None else condition | by_dispatch
    if condition is None:
        return []
    return [envelope(row) for row in _joined().where(condition)]


# --- one envelope's delivery detail ------------------------------------------------------


def delivery_detail(outbox_id: str) -> dict[str, Any]:
    """One envelope with its timeline: events of the envelope and its dispatch, the host
    queue's attempts, and the whole resend chain."""
    row = envelope_row(outbox_id)
    stored = Outbox.get_by_id(outbox_id)
    subjects = [f"outbox:{outbox_id}"]
    if stored.dispatch_id is not None:
        subjects.append(f"dispatch:{stored.dispatch_id}")
    timeline = [
        event(e) for e in Event.select().where(Event.subject.in_(subjects)).order_by(Event.id)
    ]
    attempts = [
        {
            "host": q.host,
            "attempt": q.attempt,
            "state": q.state,
            "detail": q.detail,
            "at": iso(q.created_at),
        }
        for q in HostQueue.select().where(HostQueue.outbox == outbox_id).order_by(HostQueue.attempt)
    ]
    return {
        **row,
        "timeline": timeline,
        "attempts": attempts,
        "chain": _resend_chain(stored),
        "transport_evidence": stored.transport,
        "receipt": stored.receipt,
        "acceptance": stored.acceptance,
        "expiry": stored.expiry,
        "cursor": stored.cursor,
        "dispatch_detail": _dispatch(stored.dispatch_id),
        **_invitation_of(stored),
    }


def _invitation_of(work: Outbox) -> dict[str, Any]:
    """For a work envelope, the invitation whose acceptance fact 4 is (its id, and the
    final that carried the acceptance); nothing for other kinds."""
    if work.kind != "work" or work.dispatch_id is None:
        return {}
    invitation = (
        Outbox.select()
        .where(
            (Outbox.dispatch == work.dispatch_id)
            & (Outbox.kind == "invitation")
            & Outbox.accepted_at.is_null(False)
        )
        .order_by(Outbox.accepted_at)
        .first()
    )
    if invitation is None:
        return {"invitation": None, "invitation_acceptance": None}
    return {"invitation": invitation.id, "invitation_acceptance": invitation.acceptance}


def _resend_chain(envelope: Outbox) -> list[dict[str, Any]]:
    first = envelope
    while first.resent_from:
        earlier = Outbox.get_or_none(Outbox.id == first.resent_from)
        if earlier is None:
            break
        first = earlier
    chain = []
    current: Outbox | None = first
    while current is not None:
        chain.append(
            {
                "id": current.id,
                "state": current.state,
                "reason": (current.expiry or {}).get("reason"),
            }
        )
        current = Outbox.get_or_none(Outbox.id == current.resent_as) if current.resent_as else None
    return chain


def _dispatch(dispatch_id: int | None) -> dict[str, Any] | None:
    if dispatch_id is None:
        return None
    dispatch = Dispatch.get_by_id(dispatch_id)
    return {
        "id": dispatch.id,
        "state": dispatch.state,
        "todo": dispatch.todo_id,
        "receipt": dispatch.receipt,
        "outcome": dispatch.outcome,
        "outcome_by": dispatch.outcome_by,
        "outcome_at": iso(dispatch.outcome_at),
    }
