"""The three live panes: Macs, chats and envelopes. Each is one DataTable: rows are
cells in one widget, never a widget per row, so a big fleet costs what a small one does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate

from coop_tui.widgets import cells
from coop_tui.widgets.table import Column, LedgerTable

__all__ = ["Column", "HostsPane", "LedgerTable", "OutboxPane", "SessionsPane", "merge_live"]


class HostsPane(LedgerTable):
    """Each Mac: reachable or why not, latency, live/registered chats, last read."""

    BORDER_TITLE = "Macs"
    COLUMNS: ClassVar[list[Column]] = [
        ("name", "MAC", lambda r: cells.plain(r["name"], "bold")),
        ("state", "STATE", cells.reachable),
        (
            "latency",
            "LATENCY",
            lambda r: cells.plain(
                f"{r['latency_ms']:.1f} ms" if r.get("latency_ms") is not None else None
            ),
        ),
        (
            "chats",
            "CHATS",
            lambda r: cells.plain(
                f"{r['chats_live']}/{r['chats_registered']}" if r["reachable"] else None
            ),
        ),
        ("read", "LAST READ", lambda r: cells.plain((r.get("checked_at") or "")[11:19] or None)),
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

    DROP_FIRST = ("read", "latency")
    FLEX = "state"
    EMPTY = "no Mac in fleet.toml"

    def row_key(self, row: dict[str, Any]) -> str:
        return str(row["name"])

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        return "Mac name", str(row["name"])


def _todos(row: dict[str, Any]) -> Text:
    return cells.plain(", ".join(f"#{t}" for t in row.get("todos") or []) or None)


class SessionsPane(LedgerTable):
    """Enrolled and observed chats from the ledger, and live chats from the registries."""

    BORDER_TITLE = "Chats"
    COLUMNS: ClassVar[list[Column]] = [
        ("host", "MAC", lambda r: cells.plain(r["host"])),
        ("vendor", "VENDOR", lambda r: cells.plain(r["vendor"])),
        ("name", "NAME", lambda r: cells.plain(r.get("name"))),
        ("native", "ID", lambda r: cells.short(r["native_id"])),
        ("pid", "PID", lambda r: cells.plain(r.get("pid"))),
        ("status", "STATUS", lambda r: cells.plain(r.get("status"))),
        (
            "mode",
            "MODE",
            lambda r: cells.plain(r.get("mode") or "live", "dim" if not r.get("mode") else ""),
        ),
        ("generation", "GEN", lambda r: cells.plain(r.get("generation"))),
        ("inbound", "INBOUND", lambda r: cells.inbound(r.get("inbound"))),
        ("todos", "TODOS", _todos),
        ("join", "TMUX", lambda r: cells.plain(r.get("tmux"))),
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
    DROP_FIRST = ("join", "generation", "pid", "mode", "vendor", "todos", "status")
    FLEX = "inbound"
    FLEX_MIN = 26  # "holds (bypass, no setting)" whole, where the width allows
    EMPTY = "no chat here yet"

    def row_key(self, row: dict[str, Any]) -> str:
        return f"{row['host']}/{row['vendor']}:{row['native_id']}"

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        return "chat id", str(row["native_id"])


class OutboxPane(LedgerTable):
    """The newest envelopes: five facts at a glance, age, and why not delivered (for a
    Codex envelope in flight, whether it still waits in Codex's queue)."""

    BORDER_TITLE = "Outbox"
    COLUMNS: ClassVar[list[Column]] = [
        ("id", "ID", lambda r: cells.ordered(r["id"], (r["created_at"], r["id"]))),
        ("kind", "KIND", lambda r: cells.plain(r["kind"])),
        ("todo", "TODO", lambda r: cells.plain(f"#{r['todo']}" if r.get("todo") else None)),
        ("session", "CHAT", cells.chat),
        ("state", "STATE", lambda r: cells.state(r["state"])),
        ("facts", "S T R A O", cells.fact_marks),
        ("age", "AGE", lambda r: cells.age(r["created_at"], r.get("_now", 0.0))),
        ("why", "REASON", cells.why),
        ("resent", "RESENT", lambda r: cells.plain((r.get("resent_as") or "")[:8] or None)),
    ]
    DROP_FIRST = ("todo", "age", "resent", "kind", "session")
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
            self.add_row(*self.cells(row), key=key)
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


def merge_live(
    sessions: list[dict[str, Any]], surveys: dict[str, dict[str, Any]]
) -> list[dict[str, Any]]:
    """Ledger sessions joined to what the registries show now, plus live chats that no
    enrollment names yet (mode shown as `live`)."""
    live: dict[str, dict[str, Any]] = {}
    for host, survey in surveys.items():
        for chat in survey.get("chats", []):
            if chat.get("live"):
                live[f"{host}/claude:{chat['session_id']}"] = chat
    rows = []
    for session in sessions:
        key = f"{session['host']}/{session['vendor']}:{session['native_id']}"
        chat = live.pop(key, None)
        row = dict(session)
        if chat is not None:
            row.update(
                pid=chat["pid"],
                status=chat["status"],
                tmux=chat.get("tmux"),
                inbound=chat.get("inbound"),
            )
            row["name"] = row.get("name") or chat.get("name")
        rows.append(row)
    for key, chat in sorted(live.items()):
        rows.append(
            {
                "host": key.split("/", 1)[0],
                "vendor": "claude",
                "native_id": chat["session_id"],
                "name": chat.get("name"),
                "pid": chat["pid"],
                "status": chat["status"],
                "mode": None,
                "generation": None,
                "inbound": chat.get("inbound"),
                "todos": [],
                "tmux": chat.get("tmux"),
                "id": None,
            }
        )
    return rows
