"""The three live panes: Macs, chats and envelopes. Each is one DataTable: rows are
cells in one widget, never a widget per row, so a big fleet costs what a small one does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.coordinate import Coordinate
from textual.widgets import DataTable

from coop_tui.widgets import cells

Column = tuple[str, str, Callable[[dict[str, Any]], Text]]


class LedgerTable(DataTable[Text]):
    """A table whose rows are keyed by an id and rebuilt or patched from dicts."""

    COLUMNS: ClassVar[list[Column]] = []

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.rows_by_key: dict[str, dict[str, Any]] = {}

    def on_mount(self) -> None:
        for key, label, _ in self.COLUMNS:
            self.add_column(label, key=key)

    def row_key(self, row: dict[str, Any]) -> str:
        return str(row["id"])

    def cells(self, row: dict[str, Any]) -> list[Text]:
        return [render(row) for _, _, render in self.COLUMNS]

    def replace_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        """Show exactly these rows, keeping the cursor on the same id when it survives."""
        selected = self.selected_key()
        self.clear()
        self.rows_by_key = {}
        for row in rows:
            key = self.row_key(row)
            self.rows_by_key[key] = row
            self.add_row(*self.cells(row), key=key)
        if selected in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(selected), scroll=False)

    def patch_row(self, row: dict[str, Any]) -> bool:
        """Update a shown row in place; False when it is not shown."""
        key = self.row_key(row)
        if key not in self.rows_by_key:
            return False
        self.rows_by_key[key] = row
        for column, _, render in self.COLUMNS:
            # A value longer than the column had ("asking…" -> "reachable") widens it.
            self.update_cell(key, column, render(row), update_width=True)
        return True

    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:  # an empty or just-cleared table has no cell under the cursor
            return None

    def selected(self) -> dict[str, Any] | None:
        key = self.selected_key()
        return None if key is None else self.rows_by_key.get(key)


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

    def row_key(self, row: dict[str, Any]) -> str:
        return str(row["name"])


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

    def row_key(self, row: dict[str, Any]) -> str:
        return f"{row['host']}/{row['vendor']}:{row['native_id']}"


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
    ]

    def add_newest(self, rows: Iterable[dict[str, Any]], limit: int) -> None:
        """Add envelopes the window does not show yet, newest first, keeping at most
        `limit` rows: the cost of one new envelope is one row, whatever the history."""
        selected = self.selected_key()
        for row in rows:
            key = self.row_key(row)
            self.rows_by_key[key] = row
            self.add_row(*self.cells(row), key=key)
        self.sort("id", key=lambda cell: cell.order, reverse=True)
        while self.row_count > limit:
            oldest = self.coordinate_to_cell_key(Coordinate(self.row_count - 1, 0)).row_key
            self.remove_row(oldest)
            self.rows_by_key.pop(str(oldest.value), None)
        if selected in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(selected), scroll=False)

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
