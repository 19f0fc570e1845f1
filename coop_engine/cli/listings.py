"""The ledger's listings, one table: what each prints, as JSON or as aligned columns.

`coop outbox`, `coop sessions`, `coop events`, `coop notifications`, `coop obligations`
and `coop todo list` each name a query of `coop_engine.queries` and the columns of its
plain table; `--json` prints the query's rows whole.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from coop_engine import queries
from coop_engine.cli.output import print_rows, short

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coop_engine.cli.output import Column

Rows = Callable[[argparse.Namespace], list[dict[str, Any]]]
FACT_NAMES = ("stored", "transport", "received", "accepted", "outcome")


def facts(row: dict[str, Any]) -> str:
    """The five facts at a glance: `STRA.` (a letter for each fact that holds)."""
    return "".join(name[0].upper() if row["facts"][name] else "." for name in FACT_NAMES)


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
    "outbox": (
        lambda args: queries.outbox(),
        [
            ("ID", lambda r: short(r["id"])),
            ("KIND", lambda r: r["kind"]),
            ("TODO", lambda r: r["todo"]),
            ("SESSION", lambda r: short(r["session"], 15)),
            ("STATE", lambda r: r["state"]),
            ("FACTS", facts),
            ("REASON", lambda r: r["reason"] or r["conflict"] or r["last_error"]),
            ("RESENT", lambda r: short(r["resent_as"]) if r["resent_as"] else None),
        ],
    ),
    "sessions": (
        lambda args: queries.sessions(),
        [
            ("ID", lambda r: r["id"]),
            ("VENDOR", lambda r: r["vendor"]),
            ("HOST", lambda r: r["host"]),
            ("NATIVE", lambda r: short(r["native_id"])),
            ("MODE", lambda r: r["mode"]),
            ("SURFACE", lambda r: r["surface"]),
            ("STATUS", lambda r: r["status"]),
            ("GEN", lambda r: r["generation"]),
            ("NAME", lambda r: r["name"]),
        ],
    ),
    "events": (
        lambda args: queries.events(args.limit),
        [
            ("AT", lambda r: r["at"]),
            ("WHO", lambda r: r["who"]),
            ("COMMAND", lambda r: r["command"]),
            ("SUBJECT", lambda r: r["subject"]),
            ("FROM", lambda r: r["from"]),
            ("TO", lambda r: r["to"]),
        ],
    ),
    "notifications": (
        lambda args: queries.notifications(),
        [
            ("AT", lambda r: r["at"]),
            ("KIND", lambda r: r["kind"]),
            ("TEXT", lambda r: r["text"]),
        ],
    ),
    "obligations": (
        lambda args: queries.obligations(),
        [
            ("ID", lambda r: r["id"]),
            ("TODO", lambda r: r["todo"]),
            ("KIND", lambda r: "legacy" if r["legacy"] else r["kind"]),
            ("DUE", lambda r: r["due_at"]),
            ("STATE", lambda r: r["state"]),
        ],
    ),
}


def show(name: str, args: argparse.Namespace) -> int:
    """Print one listing of the ledger."""
    from coop_engine.cli.ledger import open_engine

    rows, columns = LISTINGS[name]
    open_engine()
    print_rows(rows(args), columns, args.json)
    return 0
