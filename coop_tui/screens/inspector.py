"""Chat inspector: any chat on any Mac (over ssh for remote ones): its registry entry,
socket verdict and transcript tail, peer entries and finals marked. Everything a chat
wrote is shown as plain text."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from coop_engine import receipts
from hosts.mac.host import HostError
from hosts.mac.native import NativeRefusal

TAIL_BYTES = 64 << 10
TEXT_WIDTH = 160


def _excerpt(entry: dict[str, Any]) -> str:
    said = receipts.assistant_text(entry)
    if said is not None:
        return said
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else entry.get("content")
    if isinstance(content, list):
        parts = [
            str(p.get("text") or p.get("content") or p.get("name") or p.get("type"))
            for p in content
            if isinstance(p, dict)
        ]
        content = " ".join(parts)
    attachment = entry.get("attachment")
    if not content and isinstance(attachment, dict):
        content = attachment.get("prompt")
    return str(content or "")


def describe_line(offset: int, text: str, finals: set[int]) -> Text:
    """One transcript line, one row: a mark, its byte offset, its type, an excerpt."""
    entry, reason = receipts.parse(text)
    if entry is None:
        return Text(f"  {offset:>9}  (skipped: {reason})", style="dim")
    kind = str(entry.get("type"))
    if entry.get("subtype"):
        kind += f"/{entry['subtype']}"
    origin = (
        entry.get("origin") or (entry.get("attachment") or {}).get("origin")
        if isinstance(entry.get("attachment"), dict)
        else entry.get("origin")
    )
    mark, style = " ", ""
    if isinstance(origin, dict) and origin.get("kind") == "peer":
        mark, style = "◆", "cyan"
        kind += f" peer from {origin.get('from')} msg_id {origin.get('msg_id')}"
    elif offset in finals:
        mark, style = "■", "green"
        kind += " FINAL"
    elif receipts.held_notice(entry, offset) is not None:
        mark, style = "!", "yellow"
    excerpt = " ".join(_excerpt(entry).split())[:TEXT_WIDTH]
    return Text.assemble(
        (f"{mark} ", style),
        (f"{offset:>9}  ", "dim"),
        (kind, style or "bold"),
        ("  " + excerpt if excerpt else ""),
    )


class InspectorScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "app.pop_screen", "Back", id="inspector.back", tooltip="Back to the panes"
        ),
        Binding(
            "r",
            "reload",
            "Read again",
            id="inspector.reload",
            tooltip="Read the registry and transcript again",
        ),
    ]

    def __init__(self, chat: dict[str, Any]) -> None:
        super().__init__()
        self.chat = chat

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

    @work(thread=True, exclusive=True)
    def read(self, host_name: str, native_id: str) -> None:
        app: Any = self.app
        host = app.fleet.hosts.get(host_name)
        if host is None:
            self.app.call_from_thread(self.show, {"error": f"{host_name} is not in the fleet"})
            return
        try:
            entry = host.registry_entry(native_id)
            tail = host.transcript_tail(native_id, TAIL_BYTES)
        except (HostError, NativeRefusal) as error:
            self.app.call_from_thread(self.show, {"error": str(error)})
            return
        survey = app.surveys.get(host_name, {})
        verdict = next(
            (c["socket"] for c in survey.get("chats", []) if c.get("session_id") == native_id), None
        )
        self.app.call_from_thread(self.show, {"entry": entry, "tail": tail, "socket": verdict})

    def show(self, found: dict[str, Any]) -> None:
        body = self.query_one("#inspector-body", Static)
        if "error" in found:
            body.update(Text(found["error"], style="red"))
            return
        lines = [(int(offset), str(text)) for offset, text in found["tail"]["lines"]]
        finals = {final.offset for final in receipts.finals(lines)}
        entry = found["entry"]
        parts: list[Any] = [
            Text("Registry entry", style="bold underline"),
            Text(
                json.dumps(entry, indent=2, sort_keys=True) if entry else "no live registry entry"
            ),
            Text.assemble(("Socket: ", "bold"), found.get("socket") or "unknown"),
            Text(
                f"Transcript: {found['tail'].get('path') or 'none yet (no message so far)'}",
                style="bold",
            ),
            Text("◆ peer entry   ■ turn final   ! held notice", style="dim"),
        ]
        parts += [describe_line(offset, text, finals) for offset, text in lines]
        body.update(Group(*parts))
