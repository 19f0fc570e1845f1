"""Chat inspector: any chat on any Mac (over ssh for remote ones): its registry entry,
socket verdict and transcript tail, peer entries and finals marked. Everything a chat
wrote is shown as plain text."""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from coop_engine.formats import EntryLine, entry_lines
from coop_tui import explain
from coop_tui.screens.base import OfTheApp

TAIL_BYTES = 64 << 10
MARKS = {"peer": ("◆", "cyan"), "final": ("■", "green"), "held": ("!", "yellow")}


def describe_line(line: EntryLine) -> Text:
    """One transcript line, one row: a mark, its byte offset, its type, an excerpt."""
    if line.mark == "skipped":
        return Text(f"  {line.offset:>9}  {line.kind}", style="dim")
    mark, style = MARKS.get(line.mark, (" ", ""))
    return Text.assemble(
        (f"{mark} ", style),
        (f"{line.offset:>9}  ", "dim"),
        (line.kind, style or "bold"),
        ("  " + line.excerpt if line.excerpt else ""),
    )


def registry_entry(entry: dict[str, Any] | None, now: float, raw: bool = False) -> Any:
    """The registry entry as labelled fields with relative times, or (raw) its JSON."""
    if not entry:
        return Text("no live registry entry", style="dim")
    if raw:
        return Text(json.dumps(entry, indent=2, sort_keys=True))
    fields = Table.grid(padding=(0, 2))
    for label, words in explain.registry_fields(entry, now):
        fields.add_row(Text(label, style="bold"), Text(words, overflow="fold"))
    fields.add_row(Text(""), Text("J shows the raw JSON", style="dim"))
    return fields


class InspectorScreen(OfTheApp, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "app.pop_screen", "Back", id="inspector.back", tooltip="Back to the panes"
        ),
        # ctrl+r, not r: r is Send again everywhere else (one meaning per key).
        Binding(
            "ctrl+r",
            "reload",
            "Read again",
            id="inspector.reload",
            tooltip="Read the registry and transcript again",
        ),
        Binding(
            "J",
            "raw",
            "Raw JSON",
            id="inspector.raw",
            tooltip="The registry entry as raw JSON, or as labelled fields",
        ),
    ]

    def __init__(self, chat: dict[str, Any]) -> None:
        super().__init__()
        self.chat = chat
        self.raw = False
        self.found: dict[str, Any] | None = None

    def app_now(self) -> float:
        clock = getattr(self.app, "clock", None)
        return float(clock()) if callable(clock) else time.time()

    def action_raw(self) -> None:
        """Show the registry entry as raw JSON, or as labelled fields again."""
        self.raw = not self.raw
        if self.found is not None:
            self.show(self.found)

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="inspector"):
            yield Static(Text("Reading…", style="dim"), id="inspector-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = (
            f"{self.chat['vendor']}:{self.chat['native_id'][:8]} on {self.chat['host']}"
        )
        self.action_reload()

    def action_reload(self) -> None:
        self.read(self.chat["host"], self.chat["native_id"])

    @work(thread=True, exclusive=True, exit_on_error=False)
    def read(self, host_name: str, native_id: str) -> None:
        found = self.coop.office.inspect(host_name, native_id, TAIL_BYTES)
        survey = self.coop.surveys.get(host_name, {})
        found["socket"] = next(
            (c["socket"] for c in survey.get("chats", []) if c.get("session_id") == native_id), None
        )
        self.app.call_from_thread(self.show, found)

    def show(self, found: dict[str, Any]) -> None:
        self.found = found
        body = self.query_one("#inspector-body", Static)
        if "error" in found:
            body.update(Text(found["error"], style="red"))
            return
        lines = [(int(offset), str(text)) for offset, text in found["tail"]["lines"]]
        entry = found["entry"]
        parts: list[Any] = [
            Text("Registry entry", style="bold underline"),
            registry_entry(entry, self.app_now(), raw=self.raw),
            Text.assemble(("Socket: ", "bold"), found.get("socket") or "unknown"),
            Text(
                f"Transcript: {found['tail'].get('path') or 'none yet (no message so far)'}",
                style="bold",
            ),
            Text("◆ peer entry   ■ turn final   ! held notice", style="dim"),
        ]
        parts += [describe_line(line) for line in entry_lines(lines)]
        body.update(Group(*parts))
