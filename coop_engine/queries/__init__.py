"""The one read model both faces use: the CLI's listings and `--json`, and the app's
panes and screens, read the ledger through these functions and nothing else.

Every answer is JSON-able: plain dicts, lists and strings, times as ISO-8601 in UTC.
"""

from coop_engine.queries.changes import Changes, changes_since, latest_event
from coop_engine.queries.envelopes import (
    OUTBOX_WINDOW,
    OutboxWindow,
    delivery_detail,
    envelope,
    envelope_row,
    outbox,
    outbox_window,
    resolve_outbox_id,
)
from coop_engine.queries.listings import (
    bound_sessions,
    cli_takers,
    event,
    events,
    notifications,
    obligations,
    open_todos,
    session,
    session_rows,
    sessions,
    todos,
)
from coop_engine.queries.status import outbox_counts as outbox_counts

__all__ = [
    "OUTBOX_WINDOW",
    "Changes",
    "OutboxWindow",
    "bound_sessions",
    "changes_since",
    "cli_takers",
    "delivery_detail",
    "envelope",
    "envelope_row",
    "event",
    "events",
    "latest_event",
    "notifications",
    "obligations",
    "open_todos",
    "outbox",
    "outbox_window",
    "resolve_outbox_id",
    "session",
    "session_rows",
    "sessions",
    "todos",
]
