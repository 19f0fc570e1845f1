"""Todos, chats, history, notices and obligations as JSON-able rows."""

from __future__ import annotations

from typing import Any

from coop_engine.formats import iso
from coop_engine.models import Binding, Dispatch, Event, Notification, Obligation, Session, Todo
from coop_engine.naming import codeman, label
from coop_engine.queries.status import place


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
        "label": label(row.name, row.cwd, row.native_id),
        "cwd": row.cwd,
        "adoption": row.adoption,
        "refused_until": iso(row.refused_until),
        "pid": row.pid,
        "tmux": row.tmux,
        "codeman": codeman(row.tmux),
        "previous_ids": previous_ids(row),
        "conversations": row.conversations or [],
    }


def previous_ids(row: Session) -> list[str]:
    """The conversations the chat had before its current one, oldest first."""
    return [str(earlier["id"]) for earlier in row.conversations or []]


def sessions() -> list[dict[str, Any]]:
    return [session(row) for row in Session.select().order_by(Session.id)]


def _active_todos() -> dict[int, list[int]]:
    """Each chat's todos with an active binding."""
    bound: dict[int, list[int]] = {}
    for binding in Binding.select(Binding.session, Binding.todo).where(Binding.state == "active"):
        bound.setdefault(binding.session_id, []).append(binding.todo_id)
    return {session_id: sorted(set(todos)) for session_id, todos in bound.items()}


def session_rows() -> list[dict[str, Any]]:
    """Every enrollment with the todos bound to it, by Mac."""
    bound = _active_todos()
    rows = []
    for row in Session.select().order_by(Session.host, Session.id):
        rows.append({**session(row), "todos": bound.get(row.id, [])})
    return rows


def cli_takers() -> list[dict[str, Any]]:
    """CLI takers for the adoption review, newest first: observed compatibility rows, and
    every chat whose adoption search Dad has not dismissed (an adopted chat is managed
    now, yet where it was searched stays on its row until dismissed)."""
    bound = _active_todos()
    query = Session.select().where(
        ((Session.mode == "observed") & (Session.surface == "compatibility"))
        | Session.adoption.is_null(False)
    )
    return [
        {
            **session(row),
            "todos": bound.get(row.id, []),
            "last_tried_at": iso(row.last_tried_at),
            "searched_at": iso((row.adoption or {}).get("at")),
        }
        for row in query.order_by(Session.id.desc())
        if not (row.adoption or {}).get("dismissed_at")
    ]


def bound_sessions(todo_id: int) -> list[str]:
    """The chats (`claude:<id>`) with an active binding to this todo."""
    query = (
        Binding.select(Binding, Session)
        .join(Session)
        .where((Binding.todo == todo_id) & (Binding.state == "active"))
    )
    return sorted({binding.session.ref for binding in query})


def _todo(todo: Todo) -> dict[str, Any]:
    return {
        "id": todo.id,
        "title": todo.title,
        "body": todo.body,
        "project": todo.project,
        "state": todo.state,
        "created_at": iso(todo.created_at),
    }


def todos() -> list[dict[str, Any]]:
    return [_todo(todo) for todo in Todo.select().order_by(Todo.id)]


def open_todos() -> list[dict[str, Any]]:
    """Todos a chat may still be invited to."""
    query = Todo.select().where(Todo.state.in_(["open", "invited"])).order_by(Todo.id)
    return [_todo(todo) for todo in query]


def event(row: Event) -> dict[str, Any]:
    """One transition of the history, as every timeline and `coop events` show it."""
    return {
        "id": row.id,
        "at": iso(row.at),
        "who": row.who,
        "command": row.command,
        "subject": row.subject,
        "from": row.from_state,
        "to": row.to_state,
        "evidence": row.evidence,
    }


def events(limit: int | None = None, subject: str | None = None) -> list[dict[str, Any]]:
    """History, newest first."""
    query = Event.select().order_by(Event.id.desc())
    if subject:
        query = query.where(Event.subject == subject)
    if limit:
        query = query.limit(limit)
    return [event(row) for row in query]


def notifications(limit: int | None = None) -> list[dict[str, Any]]:
    """What Dad was told, newest first, each with where it belongs: its envelope (what
    `enter` opens, when there is one), chat, Mac and todo."""
    query = Notification.select().order_by(Notification.id.desc())
    if limit:
        query = query.limit(limit)
    return [
        {
            "id": n.id,
            "at": iso(n.at),
            "kind": n.kind,
            "text": n.text,
            "subject": n.subject,
            **place(n.subject),
        }
        for n in query
    ]


def obligations() -> list[dict[str, Any]]:
    """`coop obligations`: each outcome obligation, its state (open while due, overdue,
    reviewed, met, closed) and the review decision recorded on it (wait or release, by
    dad or chief, and when; null before any)."""
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
            "decision": o.decision,
            "decided_by": o.decided_by,
            "decided_at": iso(o.decided_at),
        }
        for o in query
    ]
