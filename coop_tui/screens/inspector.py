"""Chat inspector: any chat on any Mac (over ssh for remote ones). A Claude chat: its
registry entry (its Codeman session among the fields), socket verdict and transcript
tail, peer entries and finals marked. A Codex thread: its record in the Mac's thread
list (open or saved) and its rollout's tail, the envelopes' receipts and the turns'
finals marked. Everything a chat wrote is shown as plain text."""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

from rich.console import Group
from rich.table import Table
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from coop_engine.formats import EntryLine, entry_lines
from coop_tui import explain
from coop_tui.rollouts import rollout_lines
from coop_tui.screens.base import OfTheApp
from coop_tui.shown import Shown, assemble, line, shown

TAIL_BYTES = 64 << 10
MARKS = {"peer": ("◆", "cyan"), "final": ("■", "green"), "held": ("!", "yellow")}


def describe_line(entry: EntryLine) -> Shown:
    """One transcript line, one row: a mark, its byte offset, its type, an excerpt."""
    if entry.mark == "skipped":
        return line(f"  {entry.offset:>9}  {entry.kind}", "dim")
    mark, style = MARKS.get(entry.mark, (" ", ""))
    return assemble(
        (f"{mark} ", style),
        (f"{entry.offset:>9}  ", "dim"),
        (entry.kind, style or "bold"),
        ("  " + entry.excerpt if entry.excerpt else ""),
    )


def labelled(rows: list[tuple[str, str]]) -> Table:
    """(label, words) rows as a grid; the words folded, never cut."""
    fields = Table.grid(padding=(0, 2))
    for label, words in rows:
        fields.add_row(line(label, "bold"), line(words, overflow="fold"))
    fields.add_row(line(""), line("J shows the raw JSON", "dim"))
    return fields


def registry_entry(
    entry: dict[str, Any] | None, now: float, raw: bool = False, tmux: str | None = None
) -> Any:
    """The registry entry as labelled fields with relative times, or (raw) its JSON;
    with no live entry, the Codeman session of the tmux pane the ledger recorded."""
    if not entry:
        gone = line("no live registry entry", "dim")
        return Group(gone, line(f"Codeman: {explain.codeman_words(tmux)}")) if tmux else gone
    if raw:
        return shown(json.dumps(entry, indent=2, sort_keys=True))
    return labelled(explain.registry_fields(entry, now))


def thread_record(thread: dict[str, Any] | None, now: float, raw: bool = False) -> Any:
    """A Codex thread's record as labelled fields, or (raw) its JSON."""
    if not thread:
        return line("not in this Mac's thread list (deleted, or never saved here)", "dim")
    if raw:
        return shown(json.dumps(thread, indent=2, sort_keys=True))
    return labelled(explain.thread_fields(thread, now))


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
            yield Static(line("Reading…", "dim"), id="inspector-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"{self.coop.chats.session(self.chat).words} on {self.chat['host']}"
        self.action_reload()

    def action_reload(self) -> None:
        native_id = self.chat["native_id"]
        # A Codex thread is asked for by its door's name: a thread id is no Claude chat's.
        asked = f"codex:{native_id}" if self.chat["vendor"] == "codex" else native_id
        self.read(self.chat["host"], asked, native_id)

    @work(thread=True, exclusive=True, exit_on_error=False)
    def read(self, host_name: str, asked: str, native_id: str) -> None:
        found = self.coop.office.inspect(host_name, asked, TAIL_BYTES)
        survey = self.coop.surveys.get(host_name, {})
        found["socket"] = next(
            (c["socket"] for c in survey.get("chats", []) if c.get("session_id") == native_id), None
        )
        self.app.call_from_thread(self.show, found)

    def show(self, found: dict[str, Any]) -> None:
        self.found = found
        body = self.query_one("#inspector-body", Static)
        if "error" in found:
            body.update(shown(found["error"], "red"))
            return
        lines = [(int(offset), str(text)) for offset, text in found["tail"]["lines"]]
        if found.get("vendor") == "codex":
            body.update(Group(*self.thread_parts(found, lines)))
            return
        parts: list[Any] = [
            line("Registry entry", "bold underline"),
            registry_entry(found["entry"], self.app_now(), self.raw, self.chat.get("tmux")),
            assemble(("Socket: ", "bold"), found.get("socket") or "unknown"),
            line(
                f"Transcript: {found['tail'].get('path') or 'none yet (no message so far)'}",
                "bold",
            ),
            line("◆ peer entry   ■ turn final   ! held notice", "dim"),
        ]
        parts += [describe_line(line) for line in entry_lines(lines)]
        body.update(Group(*parts))

    def thread_parts(self, found: dict[str, Any], lines: list[tuple[int, str]]) -> list[Any]:
        """A Codex thread: its record, the route a message to it takes, its rollout."""
        parts: list[Any] = [
            line("Codex thread", "bold underline"),
            thread_record(found["entry"], self.app_now(), self.raw),
            assemble(("Route: ", "bold"), explain.route_words(self.chat.get("inbound"))),
            line(f"Rollout: {found['tail'].get('path') or 'none yet (no turn so far)'}", "bold"),
            line("◆ an envelope's receipt (its id as the client id)   ■ turn final", "dim"),
        ]
        return parts + [describe_line(line) for line in rollout_lines(lines)]
