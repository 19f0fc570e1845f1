"""The ledger's listings, one table: what each prints, as JSON or as aligned columns.

`coop outbox`, `coop sessions`, `coop events`, `coop notifications`, `coop obligations`
and `coop todo list` each name a query of `coop_engine.queries` and the columns of its
plain table; `--json` prints the query's rows whole, with what the table shows added:
`short_id` (the shortest prefix unique in the listing, `naming.short_ids`; an outbox
row's `resent_as_short_id` too) and, where a row names a chat, `session_name` (its
label) and `session_short_id` (unique among the ledger's chats, so the same in every
listing). A column's header is the field it shows, upper-cased.
"""

from __future__ import annotations

from coop_engine import queries
from coop_engine.cli.output import print_rows
from coop_engine.naming import short_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterable
    from typing import Any

    from coop_engine.cli.output import Column

    Rows = Callable[[argparse.Namespace], list[dict[str, Any]]]
FACT_NAMES = ("stored", "transport", "received", "accepted", "outcome")


def facts(row: dict[str, Any]) -> str:
    """The five facts at a glance: `STRA.` (a letter for each fact that holds)."""
    return "".join(name[0].upper() if row["facts"][name] else "." for name in FACT_NAMES)


def session_shorts(sessions: Iterable[dict[str, Any]]) -> dict[int, str]:
    """Each enrollment's short id (by its ledger id): the shortest prefix of its native
    id that no other chat of the ledger shares, the same in every ledger listing."""
    rows = list(sessions)
    shorts = short_ids(str(row["native_id"]) for row in rows)
    return {row["id"]: shorts[str(row["native_id"])] for row in rows}


def session_cell(row: dict[str, Any]) -> str | None:
    """The chat a row names as the SESSION column shows it: `claude:<short id>`."""
    if not row.get("session"):
        return None
    vendor = str(row["session"]).partition(":")[0]
    return f"{vendor}:{row['session_short_id']}"


def outbox_rows() -> list[dict[str, Any]]:
    """`coop outbox`: every envelope with its short id and its chat's."""
    rows = queries.outbox()
    shorts = short_ids(str(row["id"]) for row in rows)
    chats = session_shorts(queries.sessions())
    return [
        {
            **row,
            "short_id": shorts[row["id"]],
            "session_short_id": chats[row["session_id"]],
            "resent_as_short_id": shorts.get(row["resent_as"]) if row["resent_as"] else None,
        }
        for row in rows
    ]


def _outbox(args: argparse.Namespace) -> list[dict[str, Any]]:
    return outbox_rows()


def _sessions(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = queries.sessions()
    shorts = session_shorts(rows)
    return [{**row, "short_id": shorts[row["id"]]} for row in rows]


def _ref(session: dict[str, Any]) -> str:
    return f"{session['vendor']}:{session['native_id']}"


def _named_chats(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """History rows (events, notices) with the chat each names, when one does: its ref
    (`session`), label (`session_name`) and short id; null where a row names none."""
    sessions = queries.sessions()
    shorts = session_shorts(sessions)
    by_id = {row["id"]: row for row in sessions}
    chats = _subject_sessions(rows, {_ref(row): row["id"] for row in sessions})
    named = []
    for row, session_id in zip(rows, chats, strict=True):
        session = by_id.get(session_id) if session_id is not None else None
        named.append(
            {
                **row,
                "session": _ref(session) if session else None,
                "session_name": session["label"] if session else None,
                "session_short_id": shorts[session["id"]] if session else None,
            }
        )
    return named


def _subject_sessions(rows: list[dict[str, Any]], by_ref: dict[str, int]) -> list[int | None]:
    """The enrollment (ledger id) each row's subject belongs to: the session itself, an
    envelope's or a dispatch's chat (an obligation's through its dispatch), the chief a
    `setting:chief` row names; None for a todo."""
    from coop_engine.queries.envelopes import envelopes_touched

    subjects = [str(row.get("subject") or "").partition(":")[::2] for row in rows]
    owed = {str(o["id"]): int(o["dispatch"]) for o in queries.obligations()}
    dispatches = {int(i) for kind, i in subjects if kind == "dispatch" and i.isdigit()}
    dispatches |= {owed[i] for kind, i in subjects if kind == "obligation" and i in owed}
    envelopes = {i for kind, i in subjects if kind == "outbox"}
    touched = envelopes_touched(envelopes, dispatches)
    of_envelope = {e["id"]: e["session_id"] for e in touched}
    of_dispatch = {e["dispatch"]: e["session_id"] for e in touched if e["dispatch"] is not None}
    found: list[int | None] = []
    for row, (kind, ident) in zip(rows, subjects, strict=True):
        if kind == "session" and ident.isdigit():
            found.append(int(ident))
        elif kind == "outbox":
            found.append(of_envelope.get(ident))
        elif kind == "dispatch" and ident.isdigit():
            found.append(of_dispatch.get(int(ident)))
        elif kind == "obligation" and ident in owed:
            found.append(of_dispatch.get(owed[ident]))
        elif (kind, ident) == ("setting", "chief"):
            found.append(by_ref.get(str(row.get("to"))))
        else:
            found.append(None)
    return found


def _events(args: argparse.Namespace) -> list[dict[str, Any]]:
    return _named_chats(queries.events(args.limit))


def _notifications(args: argparse.Namespace) -> list[dict[str, Any]]:
    return _named_chats(queries.notifications())


def _decision(row: dict[str, Any]) -> str | None:
    """An obligation's review decision as the table shows it: `wait by chief`."""
    return f"{row['decision']} by {row['decided_by']}" if row["decision"] else None


OUTBOX_COLUMNS: list[Column] = [
    ("ID", lambda r: r["short_id"]),
    ("KIND", lambda r: r["kind"]),
    ("TODO", lambda r: r["todo"]),
    ("SESSION", session_cell),
    ("SESSION_NAME", lambda r: r["session_name"]),
    ("HOST", lambda r: r["host"]),
    ("STATE", lambda r: r["state"]),
    ("FACTS", facts),
    ("REASON", lambda r: r["reason"] or r["conflict"] or r["last_error"]),
    ("RESENT_AS", lambda r: r["resent_as_short_id"]),
]

LISTINGS: dict[str, tuple[Rows, list[Column]]] = {
    "todo list": (
        lambda args: queries.todos(),
        [
            ("ID", lambda r: r["id"]),
            ("STATE", lambda r: r["state"]),
            ("PROJECT", lambda r: r["project"]),
            ("TITLE", lambda r: r["title"]),
        ],
    ),
    "outbox": (_outbox, OUTBOX_COLUMNS),
    "sessions": (
        _sessions,
        [
            ("ID", lambda r: r["id"]),
            ("VENDOR", lambda r: r["vendor"]),
            ("HOST", lambda r: r["host"]),
            ("NATIVE_ID", lambda r: r["short_id"]),
            ("NAME", lambda r: r["label"]),
            ("MODE", lambda r: r["mode"]),
            ("SURFACE", lambda r: r["surface"]),
            ("STATUS", lambda r: r["status"]),
            ("GENERATION", lambda r: r["generation"]),
        ],
    ),
    "events": (
        _events,
        [
            ("AT", lambda r: r["at"]),
            ("WHO", lambda r: r["who"]),
            ("COMMAND", lambda r: r["command"]),
            ("SUBJECT", lambda r: r["subject"]),
            ("SESSION", session_cell),
            ("SESSION_NAME", lambda r: r["session_name"]),
            ("FROM", lambda r: r["from"]),
            ("TO", lambda r: r["to"]),
        ],
    ),
    "notifications": (
        _notifications,
        [
            ("AT", lambda r: r["at"]),
            ("KIND", lambda r: r["kind"]),
            ("SESSION", session_cell),
            ("SESSION_NAME", lambda r: r["session_name"]),
            ("TEXT", lambda r: r["text"]),
        ],
    ),
    "obligations": (
        lambda args: queries.obligations(),
        [
            ("ID", lambda r: r["id"]),
            ("TODO", lambda r: r["todo"]),
            ("KIND", lambda r: "legacy" if r["legacy"] else r["kind"]),
            ("DUE_AT", lambda r: r["due_at"]),
            ("STATE", lambda r: r["state"]),
            ("DECISION", _decision),
        ],
    ),
}


def show(name: str, args: argparse.Namespace) -> int:
    """Print one listing of the ledger."""
    from coop_engine.db import open_ledger
    from coop_engine.home import coop_home

    rows, columns = LISTINGS[name]
    open_ledger(coop_home())
    print_rows(rows(args), columns, args.json)
    return 0
