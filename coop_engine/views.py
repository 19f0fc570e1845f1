"""Read-only views of the ledger as JSON-able dicts: what `--json` prints and panes show."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import peewee as pw

from coop_engine.errors import NotFound
from coop_engine.models import (
    Binding,
    Dispatch,
    Event,
    Notification,
    Obligation,
    Outbox,
    Session,
    Todo,
)


def iso(at: float | None) -> str | None:
    """Unix seconds -> ISO-8601 in UTC (None stays None)."""
    if at is None:
        return None
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def envelope_facts(row: Outbox, dispatch: Dispatch | None) -> dict[str, str | None]:
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


def envelope(row: Outbox) -> dict[str, Any]:
    dispatch: Dispatch | None = row.dispatch
    session: Session = row.session
    return {
        "id": row.id,
        "kind": row.kind,
        "todo": dispatch.todo_id if dispatch is not None else row.payload.get("todo"),
        "session": session.ref,
        "session_id": session.id,
        "host": session.host,
        "generation": row.generation,
        "dispatch": dispatch.id if dispatch is not None else None,
        "state": row.state,
        "facts": envelope_facts(row, dispatch),
        "reason": (row.expiry or {}).get("reason"),
        "conflict": row.conflict,
        "last_error": row.last_error,
        "held": row.held,
        "inbound": (row.cursor or {}).get("inbound"),
        "resent_as": row.resent_as,
        "resent_from": row.resent_from,
        "created_at": iso(row.created_at),
        "payload": row.payload,
    }


def envelope_row(outbox_id: str) -> dict[str, Any]:
    """One envelope as `coop outbox --json` shows it."""
    row = Outbox.get_or_none(Outbox.id == outbox_id)
    if row is None:
        raise NotFound(f"No outbox envelope {outbox_id}")
    return envelope(row)


def outbox(limit: int | None = None) -> list[dict[str, Any]]:
    query = (
        Outbox.select(Outbox, Session, Dispatch)
        .join(Session)
        .switch(Outbox)
        .join(Dispatch, join_type=pw.JOIN.LEFT_OUTER)
        .order_by(Outbox.created_at, Outbox.id)
    )
    if limit:
        query = query.limit(limit)
    return [envelope(row) for row in query]


def session(row: Session) -> dict[str, Any]:
    return {
        "id": row.id,
        "vendor": row.vendor,
        "host": row.host,
        "native_id": row.native_id,
        "mode": row.mode,
        "surface": row.surface,
        "enrollment": row.enrollment,
        "status": row.status,
        "generation": row.generation,
        "name": row.name,
        "cwd": row.cwd,
        "adoption": row.adoption,
        "refused_until": iso(row.refused_until),
    }


def sessions() -> list[dict[str, Any]]:
    return [session(row) for row in Session.select().order_by(Session.id)]


def todos() -> list[dict[str, Any]]:
    rows = []
    for todo in Todo.select().order_by(Todo.id):
        rows.append(
            {
                "id": todo.id,
                "title": todo.title,
                "body": todo.body,
                "project": todo.project,
                "state": todo.state,
                "created_at": iso(todo.created_at),
            }
        )
    return rows


def events(limit: int | None = None, subject: str | None = None) -> list[dict[str, Any]]:
    """History, newest first."""
    query = Event.select().order_by(Event.id.desc())
    if subject:
        query = query.where(Event.subject == subject)
    if limit:
        query = query.limit(limit)
    return [
        {
            "id": e.id,
            "at": iso(e.at),
            "who": e.who,
            "command": e.command,
            "subject": e.subject,
            "from": e.from_state,
            "to": e.to_state,
            "evidence": e.evidence,
        }
        for e in query
    ]


def notifications() -> list[dict[str, Any]]:
    """What Dad was told, newest first."""
    query = Notification.select().order_by(Notification.id.desc())
    return [
        {"id": n.id, "at": iso(n.at), "kind": n.kind, "text": n.text, "subject": n.subject}
        for n in query
    ]


def bound_sessions(todo_id: int) -> list[str]:
    """The chats (`claude:<id>`) with an active binding to this todo."""
    query = (
        Binding.select(Binding, Session)
        .join(Session)
        .where((Binding.todo == todo_id) & (Binding.state == "active"))
    )
    return sorted({binding.session.ref for binding in query})


def resolve_outbox_id(text: str) -> str:
    """An envelope id, or a unique prefix of one as the tables show them."""
    text = text.strip()
    if Outbox.get_or_none(Outbox.id == text) is not None:
        return text
    if len(text) >= 4:
        matches = [
            row.id for row in Outbox.select(Outbox.id).where(Outbox.id.startswith(text)).limit(2)
        ]
        if len(matches) == 1:
            return str(matches[0])
        if len(matches) > 1:
            raise NotFound(f"{text} names more than one envelope; give more of its id")
    raise NotFound(f"No outbox envelope {text}")


def obligations() -> list[dict[str, Any]]:
    query = Obligation.select(Obligation, Dispatch).join(Dispatch).order_by(Obligation.id)
    return [
        {
            "id": o.id,
            "todo": o.dispatch.todo_id,
            "dispatch": o.dispatch_id,
            "kind": o.kind,
            "legacy": o.legacy,
            "due_at": iso(o.due_at),
            "state": o.state,
        }
        for o in query
    ]
