"""What the panes and screens show, read from the ledger. Runs in thread workers only.

The outbox pane shows a window of the newest envelopes, never the whole history: its
cost stays the same at a hundred rows and at a hundred thousand. Changes are found
through `engine_events` (append-only, ids increasing), so a refresh reads only what
moved since the last one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import peewee as pw

from coop_engine import views
from coop_engine.models import (
    Binding,
    Dispatch,
    Event,
    HostQueue,
    Outbox,
    Session,
    Todo,
)

OUTBOX_WINDOW = 300
MAX_CHANGES = 2000


@dataclass
class OutboxWindow:
    rows: list[dict[str, Any]]
    total: int
    session_id: int | None = None


@dataclass
class Changes:
    """What moved since an event id. `reload` asks for a fresh window instead."""

    last_event: int
    envelopes: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    reload: bool = False
    created: set[str] = field(default_factory=set)  # envelopes new to the ledger


def _envelope_query() -> pw.ModelSelect[Outbox]:
    return (
        Outbox.select(Outbox, Session, Dispatch)
        .join(Session)
        .switch(Outbox)
        .join(Dispatch, join_type=pw.JOIN.LEFT_OUTER)
    )


def _matching(text: str) -> pw.Expression:
    """A filter word: a state, a kind, a todo (#12 or 12), or the start of an envelope's
    or a chat's id."""
    word = text.strip().lstrip("#")
    condition = (Outbox.state == word) | (Outbox.kind == word) | Outbox.id.startswith(word)
    condition |= Session.native_id.startswith(word)
    if word.isdigit():
        condition |= Dispatch.todo == int(word)
    return condition


def outbox_window(
    session_id: int | None = None, limit: int = OUTBOX_WINDOW, text: str | None = None
) -> OutboxWindow:
    """The newest envelopes (of one chat, or matching a filter word), newest first."""
    query = _envelope_query()
    # Without a filter word, count the outbox alone: no join over the whole history.
    count = _envelope_query() if text else Outbox.select()
    if session_id is not None:
        query = query.where(Outbox.session == session_id)
        count = count.where(Outbox.session == session_id)
    if text:
        query = query.where(_matching(text))
        count = count.where(_matching(text))
    rows = query.order_by(Outbox.created_at.desc(), Outbox.id.desc()).limit(limit)
    return OutboxWindow([views.envelope(row) for row in rows], count.count(), session_id)


def session_rows() -> list[dict[str, Any]]:
    """Every enrollment with the todos bound to it."""
    bound: dict[int, list[int]] = {}
    for binding in Binding.select(Binding.session, Binding.todo).where(Binding.state == "active"):
        bound.setdefault(binding.session_id, []).append(binding.todo_id)
    rows = []
    for session in Session.select().order_by(Session.host, Session.id):
        row = views.session(session)
        row["todos"] = sorted(bound.get(session.id, []))
        rows.append(row)
    return rows


def latest_event() -> int:
    last = Event.select(pw.fn.MAX(Event.id)).scalar()
    return int(last or 0)


def changes_since(last_event: int) -> Changes:
    """Envelopes and sessions touched by events after `last_event`."""
    events = list(
        Event.select(Event.id, Event.subject, Event.from_state, Event.to_state)
        .where(Event.id > last_event)
        .order_by(Event.id)
        .limit(MAX_CHANGES + 1)
    )
    if not events:
        return Changes(last_event)
    if len(events) > MAX_CHANGES:
        return Changes(latest_event(), reload=True)
    outbox_ids: set[str] = set()
    created: set[str] = set()
    dispatch_ids: set[int] = set()
    session_ids: set[int] = set()
    for event in events:
        kind, _, ident = event.subject.partition(":")
        if kind == "outbox":
            outbox_ids.add(ident)
            if event.from_state is None and event.to_state == "pending":
                created.add(ident)  # enqueued, sent again or queued as a reply
        elif kind == "dispatch" and ident.isdigit():
            dispatch_ids.add(int(ident))
        elif kind == "session" and ident.isdigit():
            session_ids.add(int(ident))
    changes = Changes(events[-1].id, created=created)
    condition = Outbox.id.in_(outbox_ids) if outbox_ids else None
    if dispatch_ids:
        by_dispatch = Outbox.dispatch.in_(dispatch_ids)
        condition = by_dispatch if condition is None else condition | by_dispatch
    if condition is not None:
        changes.envelopes = [views.envelope(row) for row in _envelope_query().where(condition)]
    if session_ids:
        rows = {row["id"]: row for row in session_rows()}
        changes.sessions = [rows[i] for i in sorted(session_ids) if i in rows]
    return changes


def envelope(outbox_id: str) -> dict[str, Any]:
    return views.envelope_row(outbox_id)


def delivery_detail(outbox_id: str) -> dict[str, Any]:
    """One envelope with its timeline: events of the envelope and its dispatch, the host
    queue's attempts, and the whole resend chain."""
    row = views.envelope_row(outbox_id)
    envelope = Outbox.get_by_id(outbox_id)
    subjects = [f"outbox:{outbox_id}"]
    if envelope.dispatch_id is not None:
        subjects.append(f"dispatch:{envelope.dispatch_id}")
    timeline = [
        {
            "at": views.iso(e.at),
            "who": e.who,
            "command": e.command,
            "subject": e.subject,
            "from": e.from_state,
            "to": e.to_state,
            "evidence": e.evidence,
        }
        for e in Event.select().where(Event.subject.in_(subjects)).order_by(Event.id)
    ]
    attempts = [
        {
            "host": q.host,
            "attempt": q.attempt,
            "state": q.state,
            "detail": q.detail,
            "at": views.iso(q.created_at),
        }
        for q in HostQueue.select().where(HostQueue.outbox == outbox_id).order_by(HostQueue.attempt)
    ]
    return {
        **row,
        "timeline": timeline,
        "attempts": attempts,
        "chain": _resend_chain(envelope),
        "transport_evidence": envelope.transport,
        "receipt": envelope.receipt,
        "acceptance": envelope.acceptance,
        "expiry": envelope.expiry,
        "cursor": envelope.cursor,
        "dispatch_detail": _dispatch(envelope.dispatch_id),
    }


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
        "outcome_at": views.iso(dispatch.outcome_at),
    }


def cli_takers() -> list[dict[str, Any]]:
    """CLI takers for the adoption review: observed compatibility rows, newest first."""
    rows = []
    query = Session.select().where(
        (Session.mode == "observed") & (Session.surface == "compatibility")
    )
    for session in query.order_by(Session.id.desc()):
        row = views.session(session)
        active = Binding.select(Binding.todo).where(
            (Binding.session == session) & (Binding.state == "active")
        )
        row["todos"] = sorted({binding.todo_id for binding in active})
        row["last_tried_at"] = views.iso(session.last_tried_at)
        rows.append(row)
    return rows


def open_todos() -> list[dict[str, Any]]:
    query = Todo.select().where(Todo.state.in_(["open", "invited"])).order_by(Todo.id)
    return [{"id": t.id, "title": t.title, "state": t.state, "project": t.project} for t in query]


def notifications(limit: int = 200) -> list[dict[str, Any]]:
    return views.notifications()[:limit]
