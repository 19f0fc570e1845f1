"""Help: every key, and what the marks in the outbox mean."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from coop_tui.shown import line, shown
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


# The words the app uses, as README.md's glossary says them too.
GLOSSARY = (
    ("Dad", "the person who runs Coop: adds todos, invites chats, decides Send again"),
    (
        "the chief",
        "one chat named (coop chief set) as Dad's proxy: it may decide Send again and"
        " outcomes as Dad would, within the same rules",
    ),
    (
        "managed",
        "a chat Coop enrolled: it reads its finals, delivers to it and notices when it exits",
    ),
    (
        "observed",
        "a chat that took a todo by itself (coop todo take) and nobody reads yet;"
        " adoption makes it managed",
    ),
    (
        "GENERATION",
        "the enrollment's number, raised each time a chat is enrolled again (adoption):"
        " an envelope belongs to one generation, and an older one's is never delivered",
    ),
    (
        "NAME · SESSION_ID",
        "what a chat is called (its name, else its folder) and its short id: the shortest"
        " start of its id no other chat listed shares, at least 8 characters (a Codex"
        " thread's may be longer); coop takes it back (coop invite 2 --session codex:ID)",
    ),
    ("MODE", "managed or observed for an enrolled chat; live for one Coop has not enrolled"),
    (
        "open · saved",
        "a Codex thread's STATUS: some process holds it open (a message queued now runs"
        " within about 10 s), or it is saved on disk (a queued message waits until it is"
        " opened)",
    ),
    (
        "CODEMAN",
        "the Codeman session a chat's tmux pane belongs to (codeman-<id8>); a docker or ssh"
        " worker's lives in another registry. Claude Code before 2.1.226 records no tmux pane",
    ),
    (
        "CHATS_LIVE · CHATS_REGISTERED",
        "on a Mac: the live chats, and all its registry lists (an exited chat's entry stays)",
    ),
    (
        "the five facts",
        "stored, transport, received, accepted, outcome (S T R A O): each true only with"
        " its evidence, in that order",
    ),
    (
        "the three reasons",
        "the only proofs that a sent envelope will never arrive (expired): the receiver's"
        " settings refuse it (refused-by-receiver-policy); it was held for approval and the"
        " dialog expired (held-for-approval-then-expired); the receiver sat idle and its"
        " transcript has no entry (receiver-idle-without-entry)",
    ),
    (
        "withdrawn from queue",
        "the Codex door's one proof of loss: Codex answered deleted: true when asked to"
        " take the envelope back out of its queue (withdrawn-from-queue)",
    ),
    ("uncertain", "sent, not yet seen in the receiver's transcript: silence proves nothing"),
    (
        "INBOUND",
        "the receiver's predicted verdict: accepts · holds (bypass, no setting) ·"
        " refuses (--settings)",
    ),
)


# The keys of the tables, the screens and the dialogs (the app's own come from its
# bindings); README.md's key table says the same, and a test keeps it so.
KEYS_ELSEWHERE = (
    (
        "enter",
        "Open",
        "Macs: show its chats · chats: show its envelopes · outbox: delivery detail ·"
        " notices: the envelope · adoption review: adopt now",
    ),
    ("j k ↓ ↑", "Move", "In every table: the next and the previous row"),
    ("g G Home End", "First, last", "In every table: the first and the last row"),
    ("PgUp PgDn", "Page", "In every table: a page up or down"),
    ("s", "Sort", "Sort by the next column, by value (again: reversed); or click a header"),
    ("z", "Maximise", "The focused pane alone on the screen; z or escape restores"),
    ("C", "Copy id", "Copy the selected row's full id to the clipboard (the terminal's)"),
    (
        "w",
        "Withdraw",
        "In the delivery detail, shown only where it can work: cancels an envelope"
        " never sent, or asks Codex to take one back out of its queue",
    ),
    ("d", "Dismiss", "In the adoption review: stop showing a chat's search (the record stays)"),
    ("ctrl+r", "Read again", "In the chat inspector: the registry and transcript again"),
    ("J", "Raw JSON", "In the chat inspector: the registry entry as Claude Code wrote it"),
    ("y n", "Yes, no", "In a confirmation: do it, or change nothing (esc too)"),
    ("ctrl+p", "Commands", "Every action by name"),
)


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,question_mark",
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
                    line(binding.key_display or binding.key, "bold"),
                    line(binding.description),
                    line(binding.tooltip, "dim"),
                )
        for key, what, why in KEYS_ELSEWHERE:
            keys.add_row(line(key, "bold"), line(what), line(why, "dim"))
        marks = Table.grid(padding=(0, 2))
        for letter, meaning in FACT_LEGEND:
            marks.add_row(line(letter, "bold"), line(meaning))
        marks.add_row(
            line(""),
            line(
                f"{DONE} true   {PENDING} not yet   {UNKNOWN} sent, not yet seen in the transcript"
            ),
        )
        words = Table.grid(padding=(0, 2))
        for word, meaning in GLOSSARY:
            words.add_row(line(word, "bold"), line(meaning))
        with VerticalScroll(id="help"):
            yield Static(line("Keys", "bold underline"))
            yield Static(keys)
            yield Static(
                shown("\nThe five facts (outbox column FACTS: S T R A O)", "bold underline")
            )
            yield Static(marks)
            yield Static(
                shown(
                    "\nSend again works once, only for a delivery proven lost (expired)."
                    " Silence proves nothing. A Codex envelope is proven lost only when"
                    " Codex confirms its withdrawal.",
                    "italic",
                )
            )
            yield Static(shown("\nWords", "bold underline"))
            yield Static(words)
        yield Footer()
