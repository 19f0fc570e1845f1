"""Help: every key, and what the marks in the outbox mean."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from coop_tui.widgets.cells import DONE, PENDING, UNKNOWN

FACT_LEGEND = (
    ("S", "stored: the outbox row committed"),
    ("T", "transport: the socket write returned without an error (Codex: added to its queue)"),
    (
        "R",
        "received: a peer entry with this id and provenance in the transcript"
        " (Codex: a UserMessage with this client id in the rollout)",
    ),
    ("A", "accepted: a final carried COOP_ACCEPT with the invitation's nonce"),
    ("O", "outcome: the bound worker reported, or Dad or the chief decided"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,question_mark,q",
            "dismiss",
            "Close",
            id="help.close",
            tooltip="Back to the panes",
        ),
    ]

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        for binding in self.app.BINDINGS:
            if isinstance(binding, Binding):
                keys.add_row(
                    Text(binding.key_display or binding.key, style="bold"),
                    Text(binding.description),
                    Text(binding.tooltip, style="dim"),
                )
        keys.add_row(
            Text("enter", style="bold"),
            Text("Open"),
            Text(
                "Macs: show its chats · chats: show its envelopes · outbox: delivery detail",
                style="dim",
            ),
        )
        keys.add_row(
            Text("w", style="bold"),
            Text("Withdraw"),
            Text(
                "In the delivery detail, shown only where it can work: cancels an envelope"
                " never sent, or asks Codex to take one back out of its queue",
                style="dim",
            ),
        )
        keys.add_row(
            Text("ctrl+p", style="bold"),
            Text("Commands"),
            Text("Every action by name", style="dim"),
        )
        marks = Table.grid(padding=(0, 2))
        for letter, meaning in FACT_LEGEND:
            marks.add_row(Text(letter, style="bold"), Text(meaning))
        marks.add_row(
            Text(""),
            Text(
                f"{DONE} true   {PENDING} not yet   {UNKNOWN} sent, not yet seen in the transcript"
            ),
        )
        with VerticalScroll(id="help"):
            yield Static(Text("Keys", style="bold underline"))
            yield Static(keys)
            yield Static(Text("\nThe five facts (outbox column S T R A O)", style="bold underline"))
            yield Static(marks)
            yield Static(
                Text(
                    "\nSend again works once, only for a delivery proven lost (expired)."
                    " Silence proves nothing. A Codex envelope is proven lost only when"
                    " Codex confirms its withdrawal.",
                    style="italic",
                )
            )
