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
from coop_tui.shown import line, toast
from coop_tui.widgets import cells
from coop_tui.widgets.panes import Column, LedgerTable


class NoticesTable(LedgerTable):
    """What Dad was told, each notice whole: its text wraps onto as many lines as it
    needs, never cut. SESSION_NAME and SESSION name its chat as the panes do (`_chat`,
    set by the screen: chats.Called)."""

    COLUMNS: ClassVar[list[Column]] = [
        ("at", "AT", lambda r: cells.at(r["at"])),
        ("kind", "KIND", lambda r: cells.plain(r["kind"], "bold")),
        ("name", "SESSION_NAME", lambda r: cells.plain(r["_chat"] and r["_chat"].name)),
        ("session", "SESSION", lambda r: cells.plain(r["_chat"] and r["_chat"].ref)),
        ("mac", "HOST", lambda r: cells.plain(r.get("mac"))),
        (
            "todo",
            "TODO",
            lambda r: cells.number(r.get("todo"), f"#{r['todo']}" if r.get("todo") else None),
        ),
        ("text", "TEXT", lambda r: cells.wrapped(r["text"])),
    ]
    # What Dad was told stays whole; the columns that name where leave first, least
    # needed first, to give it room (the envelope's detail names them all).
    DROP_FIRST = ("todo", "mac", "session", "name")
    FLEX = "text"
    FLEX_MIN = 30  # wrapped narrower, a notice would run off a short terminal
    WRAP = "text"


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
        envelopes = self.coop.outbox_pane.rows_by_key
        named = [{**row, "_chat": self.coop.chats.place(row, envelopes)} for row in rows]
        self.query_one(NoticesTable).replace_rows(named)

    @on(DataTable.RowSelected, "#notices")
    def _notice_selected(self, event: DataTable.RowSelected) -> None:
        from coop_tui.screens.delivery import DeliveryScreen

        row = self.query_one(NoticesTable).rows_by_key.get(str(event.row_key.value))
        if row is None or not row.get("outbox"):
            toast(self, line("This notice is about no envelope"))
            return
        self.app.push_screen(DeliveryScreen(str(row["outbox"])))
