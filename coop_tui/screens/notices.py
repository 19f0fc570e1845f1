"""Notifications: what Dad was told, newest first."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Footer, Header

from coop_engine import queries
from coop_tui.screens.base import OfTheApp
from coop_tui.widgets import cells
from coop_tui.widgets.panes import Column, LedgerTable


class NoticesTable(LedgerTable):
    COLUMNS: ClassVar[list[Column]] = [
        ("at", "AT", lambda r: cells.plain(r["at"])),
        ("kind", "KIND", lambda r: cells.plain(r["kind"], "bold")),
        ("text", "TEXT", lambda r: cells.plain(r["text"])),
    ]


class NotificationsScreen(OfTheApp, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back", id="notices.back", tooltip="Back to the panes"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield NoticesTable(id="notices")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = "notifications"
        self.query_one(NoticesTable).focus()
        self.load()

    @work(thread=True, exit_on_error=False)
    def load(self) -> None:
        rows = queries.notifications(limit=200)
        self.app.call_from_thread(self.show, rows)

    def show(self, rows: list[dict[str, Any]]) -> None:
        self.query_one(NoticesTable).replace_rows(rows)
