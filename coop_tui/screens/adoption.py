"""Adoption review: each CLI taker, where it was searched and what each Mac answered;
adopt one by key; refusals and their 48-hour hold."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header, Static

from coop_engine import queries
from coop_tui.decisions import refused_here
from coop_tui.screens.base import OfTheApp
from coop_tui.shown import line, shown, toast
from coop_tui.widgets import cells
from coop_tui.widgets.panes import Column, LedgerTable


def _matches(count: Any) -> str:
    return "none" if count == 0 else "1 match" if count == 1 else f"{count} matches"


def _searched(row: dict[str, Any]) -> str | None:
    search = row.get("adoption") or {}
    answers = []
    for answer in search.get("searched", []):
        said = answer.get("error") or _matches(answer.get("matches"))
        answers.append(f"{answer['host']}: {said}")
    return "; ".join(answers) or None


def _minute(iso: str | None) -> str | None:
    """`2026-05-04T09:07:51.500Z` -> `2026-05-04 09:07Z` (UTC): the table fits 160
    columns, the chat's name and the 48 h hold included."""
    return f"{iso[:10]} {iso[11:16]}Z" if iso else None


class TakersTable(LedgerTable):
    """CLI takers (SESSION_NAME and SESSION the chat as the panes name it, `_chat`, set
    by the screen; HOST the Mac its take declared)."""

    COLUMNS: ClassVar[list[Column]] = [
        ("name", "SESSION_NAME", lambda r: cells.plain(r["_chat"].name)),
        ("session", "SESSION", lambda r: cells.plain(r["_chat"].ref)),
        ("host", "HOST", lambda r: cells.plain(r["host"])),
        ("todos", "TODOS", lambda r: cells.todos(r["todos"])),
        ("mode", "MODE", lambda r: cells.plain(r.get("mode"))),
        ("searched", "SEARCHED", lambda r: cells.plain(_searched(r))),
        ("result", "RESULT", lambda r: cells.plain((r.get("adoption") or {}).get("result"))),
        (
            "tried",
            "SEARCHED_AT",
            lambda r: cells.at(r.get("searched_at"), _minute(r.get("searched_at"))),
        ),
        (
            "hold",
            "REFUSED_UNTIL",
            lambda r: cells.at(r.get("refused_until"), _minute(r.get("refused_until")), "red"),
        ),
    ]
    # The answer (the engine's clash message is long) is what the review is for: the
    # other columns leave, least needed first, before it is cut (with an ellipsis).
    DROP_FIRST = ("mode", "todos", "host", "tried", "hold", "searched", "name")
    FLEX = "result"
    FLEX_MIN = 56
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Adopt now",
            id="adoption.adopt",
            tooltip="Search the fleet for this chat and adopt it",
        ),
    ]


class AdoptionScreen(OfTheApp, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "app.pop_screen", "Back", id="adoption.back", tooltip="Back to the panes"
        ),
        Binding(
            "d",
            "dismiss_row",
            "Dismiss",
            id="adoption.dismiss",
            tooltip="Stop showing this chat's adoption search (the record stays)",
        ),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(
            shown(
                "CLI takers: chats that took work through `coop todo take`. Coop asks the"
                " declared Mac, the office, then the others; adopted and refused rows stay"
                " until dismissed (d)."
            ),
            id="adoption-intro",
        )
        yield TakersTable(id="takers")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "adoption review"
        self.query_one(TakersTable).focus()
        self.load()

    @work(thread=True, group="adoption", exit_on_error=False)
    def load(self) -> None:
        rows = queries.cli_takers()
        self.app.call_from_thread(self.show, rows)

    def show(self, rows: list[dict[str, Any]]) -> None:
        chats = self.coop.chats

        named = [{**row, "_chat": chats.session(row)} for row in rows]
        self.query_one(TakersTable).replace_rows(named)

    def action_dismiss_row(self) -> None:
        if refused_here(self.app):
            return
        row = self.query_one(TakersTable).selected()
        if row is None or not row.get("adoption"):
            toast(
                self, line("Nothing to dismiss: this chat was not searched yet"), severity="warning"
            )
            return
        self.dismiss_search(int(row["id"]))

    @work(thread=True, group="adoption", exit_on_error=False)
    def dismiss_search(self, session_id: int) -> None:
        engine = self.coop.engine
        if engine is None:
            return
        engine.dismiss_adoption(session_id, "dad")
        self.load()

    @on(DataTable.RowSelected, "#takers")
    def _taker_selected(self, event: DataTable.RowSelected) -> None:
        if refused_here(self.app):
            return
        row = self.query_one(TakersTable).rows_by_key.get(str(event.row_key.value))
        if row is None:
            toast(self, line("No CLI taker selected"), severity="warning")
            return
        self.adopt(int(row["id"]), row["_chat"].words)

    @work(thread=True, group="adoption", exit_on_error=False)
    def adopt(self, session_id: int, called: str) -> None:
        engine = self.coop.engine
        if engine is None:
            return
        result = self.coop.office.adopt(engine, session_id)
        # A Mac's answer is data: shown as written, never as markup.
        toast(self, line(f"{called}: {result['result']}"), title="Adoption")
        self.load()
