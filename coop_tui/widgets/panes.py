"""The three live panes: Macs, chats and envelopes. Each is one DataTable: rows are
cells in one widget, never a widget per row, so a big fleet costs what a small one does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate

from coop_tui.chats import chat_key
from coop_tui.widgets import cells
from coop_tui.widgets.table import Column, LedgerTable

__all__ = ["Column", "HostsPane", "LedgerTable", "OutboxPane", "SessionsPane"]


class HostsPane(LedgerTable):
    """Each Mac: reachable or why not, latency, live/registered chats, last read."""

    BORDER_TITLE = "Macs"
    COLUMNS: ClassVar[list[Column]] = [
        ("name", "HOST", lambda r: cells.plain(r["name"], "bold")),
        ("state", "REACHABLE", cells.reachable),
        (
            "latency",
            "LATENCY_MS",
            lambda r: cells.number(
                r.get("latency_ms"),
                f"{r['latency_ms']:.1f}" if r.get("latency_ms") is not None else None,
            ),
        ),
        ("chats", "CHATS_LIVE", lambda r: cells.number(r.get("chats_live"))),
        ("registered", "CHATS_REGISTERED", lambda r: cells.number(r.get("chats_registered"))),
        (
            "read",
            "CHECKED_AT",
            lambda r: cells.at(r.get("checked_at"), (r.get("checked_at") or "")[11:19]),
        ),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Show its chats",
            id="hosts.filter",
            tooltip="Filter the chats pane to this Mac",
        ),
    ]

    DROP_FIRST = ("read", "latency", "registered")
    FLEX = "state"
    EMPTY = "no Mac in fleet.toml"

    def row_key(self, row: dict[str, Any]) -> str:
        return str(row["name"])

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        return "Mac name", str(row["name"])


class SessionsPane(LedgerTable):
    """Enrolled and observed chats from the ledger, and what the Macs show now: live
    Claude chats and Codex threads (coop_tui/chats.py). The headers are `coop chats`'s
    words; NAME is what a chat is called (its name, else its folder)."""

    BORDER_TITLE = "Chats"
    COLUMNS: ClassVar[list[Column]] = [
        ("host", "HOST", lambda r: cells.plain(r["host"])),
        ("vendor", "VENDOR", lambda r: cells.plain(r["vendor"])),
        ("name", "NAME", lambda r: cells.plain(r.get("label"))),
        ("native", "SESSION_ID", lambda r: cells.plain(r.get("short") or r["native_id"][:8])),
        ("pid", "PID", lambda r: cells.number(r.get("pid"))),
        ("status", "STATUS", lambda r: cells.plain(r.get("status"))),
        (
            "mode",
            "MODE",
            lambda r: cells.plain(r.get("mode") or "live", "dim" if not r.get("mode") else ""),
        ),
        ("generation", "GENERATION", lambda r: cells.number(r.get("generation"))),
        ("inbound", "INBOUND", lambda r: cells.inbound(r.get("inbound"))),
        ("todos", "TODOS", lambda r: cells.todos(r.get("todos"))),
        ("join", "TMUX", lambda r: cells.plain(r.get("tmux"))),
        ("codeman", "CODEMAN", lambda r: cells.codeman(r.get("codeman"))),
    ]
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Show its envelopes",
            id="sessions.filter",
            tooltip="Filter the outbox to this chat",
        ),
    ]

    # The low-priority columns go first as the terminal narrows: never `accept pe`.
    # The raw tmux pane leaves before the Codeman session it names.
    DROP_FIRST = ("join", "codeman", "generation", "pid", "mode", "vendor", "todos", "status")
    FLEX = "inbound"
    FLEX_MIN = 26  # "holds (bypass, no setting)" whole, where the width allows
    EMPTY = "no chat here yet"

    def row_key(self, row: dict[str, Any]) -> str:
        return chat_key(row["host"], row["vendor"], row["native_id"])

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        return "chat id", str(row["native_id"])


class OutboxPane(LedgerTable):
    """The newest envelopes: five facts at a glance, age, and why not delivered (for a
    Codex envelope in flight, whether it still waits in Codex's queue). The headers are
    `coop outbox`'s words; SESSION names the chat as the chats pane does."""

    BORDER_TITLE = "Outbox"
    COLUMNS: ClassVar[list[Column]] = [
        ("id", "ID", lambda r: cells.ordered(r["id"], (r["created_at"], r["id"]))),
        ("kind", "KIND", lambda r: cells.plain(r["kind"])),
        (
            "todo",
            "TODO",
            lambda r: cells.number(r.get("todo"), f"#{r['todo']}" if r.get("todo") else None),
        ),
        ("name", "SESSION_NAME", cells.session_name),
        ("session", "SESSION", cells.session),
        ("host", "HOST", lambda r: cells.plain(r["host"])),
        ("state", "STATE", lambda r: cells.state(r["state"])),
        ("facts", "FACTS", cells.fact_marks),
        ("age", "AGE", lambda r: cells.age(r["created_at"], r.get("_now", 0.0))),
        ("why", "REASON", cells.why),
        ("resent", "RESENT_AS", lambda r: cells.plain((r.get("resent_as") or "")[:8] or None)),
    ]
    DROP_FIRST = ("host", "todo", "age", "resent", "kind", "session", "name")
    FLEX = "why"
    FLEX_MIN = 14

    @classmethod
    def column(cls, key: str) -> Callable[[dict[str, Any]], Any]:
        """The cell maker of one column, by its key."""
        return next(make for name, _, make in cls.COLUMNS if name == key)

    def empty_words(self) -> str:
        filtered = getattr(self.app, "text_filter", None) or getattr(
            self.app, "session_filter", None
        )
        return "no envelope matches (escape shows every one)" if filtered else "no envelope yet"

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        return "envelope id", str(row["id"])

    def add_newest(self, rows: Iterable[dict[str, Any]], limit: int) -> None:
        """Add envelopes the window does not show yet, newest first, keeping at most
        `limit` rows: the cost of one new envelope is one row, whatever the history."""
        selected = self.selected_key()
        for row in rows:
            key = self.row_key(row)
            self.rows_by_key[key] = row
            self._measure(row)
            self._add(row, key)
        self.sort("id", key=lambda cell: cell.order, reverse=True)
        while self.row_count > limit:
            oldest = self.coordinate_to_cell_key(Coordinate(self.row_count - 1, 0)).row_key
            self.remove_row(oldest)
            self.rows_by_key.pop(str(oldest.value), None)
        self._sort_again()
        if not self._fit():
            self._keep_cursor(selected)

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "enter",
            "select_cursor",
            "Delivery detail",
            id="outbox.detail",
            tooltip="The five facts as a timeline",
        ),
    ]
