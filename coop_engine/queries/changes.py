"""What moved since an event id. `engine_events` is append-only with increasing ids, so
a refresh reads only what changed since the last one, however long the history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import peewee as pw

from coop_engine.models import Event
from coop_engine.queries.envelopes import envelopes_touched
from coop_engine.queries.listings import session_rows

MAX_CHANGES = 2000


@dataclass
class Changes:
    """What moved since an event id. `reload` asks for a fresh window instead."""

    last_event: int
    envelopes: list[dict[str, Any]] = field(default_factory=list)
    sessions: list[dict[str, Any]] = field(default_factory=list)
    reload: bool = False
    created: set[str] = field(default_factory=set)  # envelopes new to the ledger


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
    changes.envelopes = envelopes_touched(outbox_ids, dispatch_ids)
    if session_ids:
        rows = {row["id"]: row for row in session_rows()}
        changes.sessions = [rows[i] for i in sorted(session_ids) if i in rows]
    return changes
