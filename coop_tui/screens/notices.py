"""Notifications: what Dad was told, newest first, each naming its chat, Mac and todo;
`enter` on one opens its envelope's delivery detail."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Header

from coop_engine import queries
from coop_tui.screens.base import OfTheApp
from coop_tui.widgets import cells
from coop_tui.widgets.panes import Column, LedgerTable


def _todo(row: dict[str, Any]) -> str:
    return f"#{row['todo']}" if row.get("todo") else ""


class NoticesTable(LedgerTable):
    COLUMNS: ClassVar[list[Column]] = [
        ("at", "AT", lambda r: cells.plain(r["at"])),
        ("kind", "KIND", lambda r: cells.plain(r["kind"], "bold")),
        ("chat", "CHAT", lambda r: cells.plain(r.get("chat") or "")),
        ("mac", "MAC", lambda r: cells.plain(r.get("mac") or "")),
        ("todo", "TODO", lambda r: cells.plain(_todo(r))),
        ("text", "TEXT", lambda r: cells.plain(r["text"])),
    ]
    # What Dad was told stays; the columns that name where leave first, least needed
    # first, before anything is cut (the envelope's detail names them all).
    DROP_FIRST = ("todo", "mac", "chat")
    FLEX = "text"


class NotificationsScreen(OfTheApp, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="notices.back", tooltip="Back to the panes"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield NoticesTable(id="notices")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "notifications · enter: the envelope's delivery detail"
        self.query_one(NoticesTable).focus()
        self.load()

    @work(thread=True, exit_on_error=False)
    def load(self) -> None:
        rows = queries.notifications(limit=200)
        self.app.call_from_thread(self.show, rows)

    def show(self, rows: list[dict[str, Any]]) -> None:
        self.query_one(NoticesTable).replace_rows(rows)

    @on(DataTable.RowSelected, "#notices")
    def _notice_selected(self, event: DataTable.RowSelected) -> None:
        from coop_tui.screens.delivery import DeliveryScreen

        row = self.query_one(NoticesTable).rows_by_key.get(str(event.row_key.value))
        if row is None or not row.get("outbox"):
            self.notify("This notice is about no envelope", severity="information")
            return
        self.app.push_screen(DeliveryScreen(str(row["outbox"])))
