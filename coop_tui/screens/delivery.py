"""Delivery detail: the five facts as a timeline with their evidence, the inbound
prediction recorded at send, the expiry evidence, and the resend chain."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.console import Group
from rich.table import Table
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Static

from coop_engine import queries
from coop_tui import explain
from coop_tui.chats import Directory
from coop_tui.decisions import withdrawable
from coop_tui.messages import ResendRequested, WithdrawRequested
from coop_tui.screens.base import OfTheApp
from coop_tui.shown import Shown, assemble, joined, line, shown


def _evidence(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False) if value else ""


CLAUDE_SHAPES = {
    "user": "user entry: a new turn (idle receiver)",
    "queued_command": "queued_command attachment: absorbed mid-turn (busy receiver)",
}
CODEX_SHAPES = {
    "client-id": "UserMessage with this client id",
    "marker": "UserMessage ending with the envelope's marker",
}


def transport_words(detail: dict[str, Any]) -> str:
    """Fact 2's evidence: what the write (Claude) or the add to Codex's queue returned."""
    transport = detail.get("transport_evidence") or {}
    if not transport:
        return ""
    if not transport.get("ok"):
        return f"{transport.get('stage')}: {transport.get('error')}"
    if detail.get("door") != "codex":
        return "socket write returned ok"
    queued_id = transport.get("queued_id")
    if transport.get("found_by"):
        return f"found in Codex's queue by its id after the add's answer was lost (id {queued_id})"
    if transport.get("fallback"):
        return f"added to Codex's queue: {transport['fallback']}"
    return f"added to Codex's queue (id {queued_id}, via {transport.get('via', 'app-server')})"


def receipt_words(detail: dict[str, Any]) -> str:
    """Fact 3's evidence: the entry that proves receipt, or what is known while none is."""
    receipt = detail.get("receipt") or {}
    if detail.get("door") == "codex":
        if not receipt:
            return explain.in_codex_queue(detail) or "no UserMessage with this client id seen yet"
        shape = CODEX_SHAPES.get(str(receipt.get("shape")), str(receipt.get("shape")))
        return f"{shape} at byte {receipt.get('offset')} of {receipt.get('rollout')}"
    if not receipt:
        return "no peer entry with this id seen yet"
    shape = CLAUDE_SHAPES.get(str(receipt.get("shape")), "")
    return f"{shape} at byte {receipt.get('offset')} of {receipt.get('transcript')}"


def acceptance_words(detail: dict[str, Any]) -> str:
    """Fact 4's evidence: the final that carried the answer, its last 160 characters. A
    work envelope's is its invitation's acceptance, which came before the work was sent."""
    work = detail.get("kind") == "work"
    acceptance = (detail.get("invitation_acceptance") if work else detail.get("acceptance")) or {}
    said = ""
    if acceptance:
        final = str(acceptance.get("final", ""))[-160:]
        if detail.get("door") == "codex":
            said = f"final of turn {acceptance.get('turn_id')}: {final}"
        else:
            said = f"final at byte {acceptance.get('offset')}: {final}"
    if work and detail.get("invitation"):
        whose = f"the invitation's acceptance (invitation {detail['invitation']})"
        return f"{whose}, before this work was stored" + (f"; {said}" if said else "")
    return said


def fact_lines(detail: dict[str, Any]) -> list[tuple[str, str | None, str]]:
    """(fact, when, evidence) for the five facts, in order, in the words of the
    envelope's door."""
    facts = detail["facts"]
    dispatch = detail.get("dispatch_detail") or {}
    attempts = "; ".join(
        f"attempt {a['attempt']} on {a['host']}: {a['state']}" for a in detail.get("attempts", [])
    )
    written = transport_words(detail)
    return [
        ("1 stored", facts["stored"], "outbox row committed in the engine's transaction"),
        ("2 transport", facts["transport"], "; ".join(p for p in (written, attempts) if p)),
        ("3 received", facts["received"], receipt_words(detail)),
        ("4 accepted", facts["accepted"], acceptance_words(detail)),
        (
            "5 outcome",
            facts["outcome"],
            f"{dispatch.get('outcome')} (by {dispatch.get('outcome_by')})"
            if dispatch.get("outcome")
            else "",
        ),
    ]


def chain_text(chain: list[dict[str, Any]], here: str) -> Shown:
    """The resend chain, oldest first: each attempt, its state in words, and what
    became of it (sent again as the next one's id)."""
    links = []
    for i, link in enumerate(chain):
        words = f"{link['id'][:8]} {explain.state_words(link['state'])}"
        if link.get("reason"):
            words += f": {explain.reason_words(link['reason'])}"
        if i + 1 < len(chain):
            words += f", sent again as {chain[i + 1]['id'][:8]}"
        links.append(line(words, "bold" if link["id"] == here else ""))
    return joined(" → ", links)


def history_table(detail: dict[str, Any]) -> Table:
    """What happened, in order, with the states each step moved between."""
    table = Table("at", "who", "what happened", "from → to", box=None, padding=(0, 2))
    state: str | None = None
    for event in detail.get("timeline", []):
        of_envelope = str(event.get("subject", "")).startswith("outbox:")
        moved = explain.moved(event, state if of_envelope else None)
        if of_envelope and event.get("to"):
            state = event["to"]
        table.add_row(
            line(event["at"] or ""),
            line(event["who"]),
            line(explain.happened(event, detail), overflow="fold"),
            line(moved),
        )
    return table


def render_detail(detail: dict[str, Any], chat: str | None = None) -> Group:
    """The delivery detail; `chat` is the envelope's chat as the panes call it (default:
    its label and the start of its id)."""
    if chat is None:
        chat = Directory().envelope(detail).words
    detail = {**detail, "chat_words": chat}
    title = assemble(
        (f"{detail['kind']} ", "bold"),
        (detail["id"], "bold cyan"),
        f"  todo #{detail.get('todo')}  {chat} on {detail['host']}  ",
        (explain.state_words(detail["state"]), "bold"),
    )
    if detail.get("reason"):
        title.append(line(f": {explain.reason_words(detail['reason'])}"))
    facts = Table("fact", "when", "evidence", box=None, padding=(0, 2), expand=True)
    for name, when, evidence in fact_lines(detail):
        facts.add_row(
            line(name, "bold"),
            line(when or "—", "green" if when else "dim"),
            # Evidence is folded, never cut: a rollout's path is the proof's address.
            line(evidence, overflow="fold"),
        )
    inbound = detail.get("inbound")
    prediction = shown(explain.prediction(inbound)) if inbound else line("not sent yet", "dim")
    parts: list[Any] = [
        title,
        line(""),
        facts,
        line(""),
        heading("Inbound prediction at send"),
        prediction,
    ]
    if detail.get("held"):
        parts += [
            heading("Held notice seen (the receiver's words outrank the prediction)"),
            shown(explain.held(detail["held"])),
        ]
    if detail.get("expiry"):
        parts += [heading("Proof of loss")]
        parts += [shown(said) for said in explain.proof_of_loss(detail["expiry"])]
    if detail.get("conflict"):
        parts += [heading("Conflict", "red"), shown(detail["conflict"], "red")]
    if detail.get("last_error"):
        parts += [heading("Refused before any byte was written"), shown(detail["last_error"])]
    chain = detail.get("chain") or []
    if len(chain) > 1:
        parts += [heading("Resend chain"), chain_text(chain, detail["id"])]
    parts += [line(""), heading("History"), history_table(detail)]
    # The frame as it was sent, its lines kept: what the chat read.
    text = detail.get("payload", {}).get("text", "")
    parts += [line(""), heading("Text sent"), shown(text)]
    return Group(*parts)


def heading(words: str, style: str = "") -> Shown:
    """A section's heading in the delivery detail."""
    return line(words, f"bold underline {style}".strip())


class DeliveryScreen(OfTheApp, Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "app.pop_screen", "Back", id="delivery.back", tooltip="Back to the panes"
        ),
        Binding(
            "r",
            "resend",
            "Send again",
            id="delivery.resend",
            tooltip="Send this delivery again, once, as Dad",
        ),
        Binding(
            "w",
            "withdraw",
            "Withdraw",
            id="delivery.withdraw",
            tooltip="Take it back as Dad: never sent (cancel), or still in Codex's queue",
        ),
    ]

    def __init__(self, outbox_id: str) -> None:
        super().__init__()
        self.outbox_id = outbox_id
        self.detail: dict[str, Any] | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="detail"):
            yield Static(line("Loading…", "dim"), id="detail-body")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = f"delivery {self.outbox_id[:8]}"
        self.load()

    def reload(self) -> None:
        self.load()

    @work(thread=True, exit_on_error=False)
    def load(self) -> None:
        detail = queries.delivery_detail(self.outbox_id)
        self.app.call_from_thread(self.show, detail)

    def show(self, detail: dict[str, Any]) -> None:
        self.detail = detail
        chat = self.coop.chats.envelope(detail).words
        self.query_one("#detail-body", Static).update(render_detail(detail, chat))
        self.refresh_bindings()  # Withdraw is shown only where it can work

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Withdraw is neither shown nor run unless this envelope can be withdrawn: never
        sent, or a Codex envelope sent and not yet received."""
        if action == "withdraw":
            return self.detail is not None and withdrawable(self.detail)
        return True

    def action_resend(self) -> None:
        self.post_message(ResendRequested(self.outbox_id, done=self.reload))

    def action_withdraw(self) -> None:
        self.post_message(WithdrawRequested(self.outbox_id, done=self.reload))
