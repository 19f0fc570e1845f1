"""Modal dialogs that return their answer with `dismiss`: confirm Send again, confirm
Withdraw, filter, invite."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from coop_engine import queries
from coop_tui import explain
from coop_tui.screens.base import OfTheApp


class ConfirmResend(OfTheApp, ModalScreen[bool]):
    """Send again shows the proof of loss before anything is decided."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y",
            "answer(True)",
            "Send again",
            id="confirm.yes",
            tooltip="Send a second attempt, once",
        ),
        Binding("n,escape", "answer(False)", "Cancel", id="confirm.no", tooltip="Change nothing"),
    ]

    def __init__(self, outbox_id: str) -> None:
        super().__init__()
        self.outbox_id = outbox_id
        self.refusal: str | None = "Still looking at the receiver"

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text(f"Send again {self.outbox_id[:8]}?", style="bold"))
            yield Static(Text("Loading the proof of loss…", style="dim"), id="proof")
            with Horizontal(classes="buttons"):
                yield Button("Send again (y)", variant="warning", id="yes")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.load()

    @work(thread=True, exit_on_error=False)
    def load(self) -> None:
        detail = queries.delivery_detail(self.outbox_id)
        # Send again looks again: the receiver's verdict today, beside the one at send.
        looked = self.coop.office.look_again(detail)
        self.app.call_from_thread(self.show, detail, looked)

    def show(self, detail: dict[str, Any], looked: dict[str, Any]) -> None:
        self.refusal = looked["refusal"]
        lines = [Text("Proven not delivered:", style="bold")]
        lines += [Text(f"  {line}") for line in explain.proof_of_loss(detail.get("expiry"))]
        lines.append(Text(f"Predicted at send: {explain.prediction(looked['at_send'])}"))
        lines.append(Text(f"Predicted today:   {explain.prediction(looked['today'])}"))
        if looked["refusal"]:
            lines.append(Text(f"Not sent again: {looked['refusal']}", style="bold red"))
        elif looked["warning"]:
            lines.append(Text(f"Warning: {looked['warning']}", style="yellow"))
        lines.append(
            Text(
                "A second attempt is a decision: it is recorded as Dad's, and it can be made once.",
                style="italic",
            )
        )
        self.query_one("#proof", Static).update(Text("\n").join(lines))

    def action_answer(self, yes: bool) -> None:
        if yes and self.refusal:
            # Nothing is created while the receiver would drop it again.
            self.notify(self.refusal, title="Send again", severity="warning", markup=False)
            return
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")


def withdrawal_words(envelope: dict[str, Any]) -> list[str]:
    """What Withdraw will do to this envelope, before anything is decided."""
    if envelope["state"] == "pending":
        return [
            "It was never sent: it is cancelled, and an invitation's dispatch with it.",
        ]
    thread = envelope["session"].partition(":")[2]
    lines = [
        f"Coop asks Codex on {envelope['host']} to delete it from thread {thread[:8]}'s queue.",
        "Only Codex's answer deleted: true proves it will never run: it then expires"
        " (withdrawn-from-queue), and Send again may follow, once.",
        "If Codex already took it, nothing changes: watch for its receipt.",
    ]
    where = explain.in_codex_queue(envelope)
    if where:
        lines.insert(0, f"Last seen {where}")
    return lines


class ConfirmWithdraw(ModalScreen[bool]):
    """Withdraw says what it will do (cancel, or ask Codex) before anything is decided."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "y",
            "answer(True)",
            "Withdraw",
            id="withdraw.yes",
            tooltip="Take the envelope back, as Dad",
        ),
        Binding("n,escape", "answer(False)", "Cancel", id="withdraw.no", tooltip="Change nothing"),
    ]

    def __init__(self, envelope: dict[str, Any]) -> None:
        super().__init__()
        self.envelope = envelope

    def compose(self) -> ComposeResult:
        lines = [Text(line) for line in withdrawal_words(self.envelope)]
        lines.append(Text("A withdrawal is a decision: it is recorded as Dad's.", style="italic"))
        with Vertical(id="dialog"):
            yield Label(Text(f"Withdraw {self.envelope['id'][:8]}?", style="bold"))
            yield Static(Text("\n").join(lines), id="withdrawal")
            with Horizontal(classes="buttons"):
                yield Button("Withdraw (y)", variant="warning", id="yes")
                yield Button("Cancel (n)", id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")


class FilterDialog(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="filter.cancel", tooltip="Keep the current filter"
        ),
    ]

    def __init__(self, current: str) -> None:
        super().__init__()
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            # A Static wraps where a Label would cut the line at the dialog's edge.
            yield Static(
                "Filter the outbox: a state (expired), a kind (work), a todo (#12),"
                " or the start of an id"
            )
            yield Input(value=self.current, placeholder="expired", id="filter-text")

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class InviteDialog(OfTheApp, ModalScreen[tuple[int, str, str] | None]):
    """Pick a todo, then a live chat on any Mac."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="invite.cancel", tooltip="Invite nobody"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.todo: int | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(Text("Invite: pick a todo, then a chat (enter)", style="bold"))
            yield OptionList(id="todos")
            yield OptionList(id="chats")

    def on_mount(self) -> None:
        chats = self.query_one("#chats", OptionList)
        for host, survey in sorted(self.coop.surveys.items()):
            for chat in survey.get("chats", []):
                if chat.get("live"):
                    name, status = chat.get("name") or "", chat.get("status") or ""
                    label = Text(f"{host}  {chat['session_id'][:8]}  {name}  {status}")
                    chats.add_option(Option(label, id=f"{host}|claude:{chat['session_id']}"))
        self.load_todos()

    @work(thread=True, exit_on_error=False)
    def load_todos(self) -> None:
        todos = queries.open_todos()
        self.app.call_from_thread(self.show_todos, todos)

    def show_todos(self, todos: list[dict[str, Any]]) -> None:
        options = self.query_one("#todos", OptionList)
        for todo in todos:
            options.add_option(
                Option(
                    Text(f"#{todo['id']}  {todo['title']}  ({todo['state']})"), id=str(todo["id"])
                )
            )
        if not todos:
            options.add_option(
                Option(Text("No open todos: add one with  coop todo add TITLE"), disabled=True)
            )
        options.focus()

    @on(OptionList.OptionSelected, "#todos")
    def _todo_picked(self, event: OptionList.OptionSelected) -> None:
        self.todo = int(str(event.option.id))
        self.query_one("#chats", OptionList).focus()

    @on(OptionList.OptionSelected, "#chats")
    def _chat_picked(self, event: OptionList.OptionSelected) -> None:
        if self.todo is None:
            self.notify("Pick a todo first", severity="warning")
            self.query_one("#todos", OptionList).focus()
            return
        host, ref = str(event.option.id).split("|", 1)
        self.dismiss((self.todo, ref, host))

    def action_cancel(self) -> None:
        self.dismiss(None)
