"""Modal dialogs that return their answer with `dismiss`: confirm Send again, confirm
Withdraw, filter, invite (with its second confirmation for a refusing chat), add a todo."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, OptionList, Static
from textual.widgets.option_list import Option

from coop_engine import frame_text, queries
from coop_engine.errors import BadInput, CoopError
from coop_tui import explain
from coop_tui.chats import shown_id
from coop_tui.messages import LedgerChanged
from coop_tui.screens.base import OfTheApp
from coop_tui.shown import Shown, assemble, joined, line, shown, toast
from coop_tui.widgets.field import Field


class YesNo(ModalScreen[bool]):
    """A confirmation: its own y / n keys and buttons, answered with `dismiss`."""

    def buttons(self, yes: str) -> ComposeResult:
        with Horizontal(classes="buttons"):
            yield Button(line(f"{yes} (y)"), variant="warning", id="yes")
            yield Button(line("Cancel (n)"), id="no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.action_answer(event.button.id == "yes")


class ConfirmResend(OfTheApp, YesNo):
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
            yield Label(line(f"Send again {self.outbox_id[:8]}?", "bold"), id="title")
            yield Static(line("Loading the proof of loss…", "dim"), id="proof")
            yield from self.buttons("Send again")
        yield Footer()

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
        chat = self.coop.chats.envelope(detail).words
        title, proof = resend_words(self.outbox_id, chat, detail, looked)
        self.query_one("#title", Label).update(title)
        self.query_one("#proof", Static).update(proof)

    def action_answer(self, yes: bool) -> None:
        if yes and self.refusal:
            # Nothing is created while the receiver would drop it again.
            toast(self, line(self.refusal), title="Send again", severity="warning")
            return
        self.dismiss(yes)


def resend_words(
    outbox_id: str, chat: str, detail: dict[str, Any], looked: dict[str, Any]
) -> tuple[Shown, Shown]:
    """Send again's question and its proof of loss, as the confirmation shows them; `chat`
    is the envelope's chat as the panes call it, `looked` the receiver looked at again."""
    title = line(f"Send again {outbox_id[:8]} to {chat} on {detail['host']}?", "bold")
    lines = [line("Proven not delivered:", "bold")]
    lines += [line(f"  {said}") for said in explain.proof_of_loss(detail.get("expiry"))]
    lines.append(line(f"Predicted at send: {explain.prediction(looked['at_send'])}"))
    lines.append(line(f"Predicted today:   {explain.prediction(looked['today'])}"))
    if looked["refusal"]:
        lines.append(line(f"Not sent again: {looked['refusal']}", "bold red"))
    elif looked["warning"]:
        lines.append(line(f"Warning: {looked['warning']}", "yellow"))
    lines.append(
        line(
            "A second attempt is a decision: it is recorded as Dad's, and it can be made once.",
            "italic",
        )
    )
    return title, joined("\n", lines)


def withdrawal_words(envelope: dict[str, Any], chat: str) -> list[str]:
    """What Withdraw will do to this envelope, before anything is decided; `chat` is its
    chat as the panes call it."""
    if envelope["state"] == "pending":
        return [
            f"To {chat} on {envelope['host']}.",
            "It was never sent: it is cancelled, and an invitation's dispatch with it.",
        ]
    lines = [
        f"Coop asks Codex on {envelope['host']} to delete it from the queue of {chat}.",
        "Only Codex's answer deleted: true proves it will never run: it then expires"
        " (withdrawn-from-queue), and Send again may follow, once.",
        "If Codex already took it, nothing changes: watch for its receipt.",
    ]
    where = explain.in_codex_queue(envelope)
    if where:
        lines.insert(0, f"Last seen {where}")
    return lines


class ConfirmWithdraw(YesNo):
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

    def __init__(self, envelope: dict[str, Any], chat: str) -> None:
        super().__init__()
        self.envelope = envelope
        self.chat = chat

    def compose(self) -> ComposeResult:
        lines = [line(said) for said in withdrawal_words(self.envelope, self.chat)]
        lines.append(line("A withdrawal is a decision: it is recorded as Dad's.", "italic"))
        with Vertical(id="dialog"):
            yield Label(line(f"Withdraw {self.envelope['id'][:8]}?", "bold"))
            yield Static(joined("\n", lines), id="withdrawal")
            yield from self.buttons("Withdraw")
        yield Footer()


class FilterDialog(ModalScreen[str | None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape", "cancel", "Cancel", id="filter.cancel", tooltip="Keep the current filter"
        ),
    ]

    def __init__(self, current: str, live: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.current = current
        self.live = live  # told each change as it is typed

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            # A Static wraps where a Label would cut the line at the dialog's edge.
            yield Static(
                shown(
                    "Filter the outbox as you type: every word must match, in any column"
                    " (expired laptop); a todo as #12"
                )
            )
            yield Field(value=self.current, placeholder="expired", id="filter-text")
        yield Footer()

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        if self.live is not None:
            self.live(event.value)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class AddTodoDialog(OfTheApp, ModalScreen[int | None]):
    """A new todo, as Dad: a title (and a project); returns its id once it is stored.
    A title the door refuses (coop_engine/frame_text.py: one line, at most 200
    characters, no control or bidi character) is refused here in the door's words, the
    title kept for editing, and nothing is recorded."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="todo.cancel", tooltip="Add nothing"),
    ]

    offered = False  # whether an enter on the title has offered the project field

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(line("Add a todo", "bold"))
            yield Static(line("Title, then enter (a project is optional)"))
            yield Field(placeholder="Fix the flaky importer test", id="todo-title")
            yield Field(placeholder="project (optional)", id="todo-project")
            yield Static(id="todo-refusal", classes="refusal")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#todo-title", Input).focus()

    @on(Input.Changed)
    def _edited(self) -> None:
        self.refuse(None)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        try:
            title = frame_text.title(self.query_one("#todo-title", Input).value)
        except BadInput as refusal:
            self.refuse(str(refusal))
            self.query_one("#todo-title", Input).focus()
            return
        project_field = self.query_one("#todo-project", Input)
        if event.input.id == "todo-title" and not project_field.value and not self.offered:
            # Enter on the title offers the project once; the next enter adds, even one
            # typed before the focus moved (a fast typist's, or a browser's, second enter).
            self.offered = True
            project_field.focus()
            return
        project = self.query_one("#todo-project", Input).value.strip() or None
        self.add(title, project)

    def refuse(self, why: str | None) -> None:
        """Say in the dialog why the todo is not added (None: nothing to say now)."""
        refusal = self.query_one("#todo-refusal", Static)
        refusal.update(line(why or "", "bold"))
        refusal.set_class(why is not None, "-refused")

    @work(thread=True, group="commands", exit_on_error=False)
    def add(self, title: str, project: str | None) -> None:
        engine = self.coop.engine
        if engine is None:
            self.app.call_from_thread(self.refuse, "The ledger is not open yet: try again")
            return
        try:
            todo = engine.add_todo(title, project=project)
        except CoopError as refusal:
            self.app.call_from_thread(self.refuse, str(refusal))
            return
        toast(self, line(f"Added todo #{todo['id']}: {title}"), title="Add a todo")
        self.app.post_message(LedgerChanged())
        self.app.call_from_thread(self.dismiss, int(todo["id"]))

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmRefusing(YesNo):
    """Inviting a chat predicted to refuse is a second decision: it says why the
    invitation will not arrive."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Invite anyway", id="refusing.yes", tooltip="Send it"),
        Binding("n,escape", "answer(False)", "Cancel", id="refusing.no", tooltip="Invite nobody"),
    ]

    def __init__(self, chat: str, why: str) -> None:
        super().__init__()
        self.chat = chat
        self.why = why

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(line("This invitation will not arrive", "bold red"))
            yield Static(shown(f"{self.chat}: {self.why}."), id="refusing-why")
            yield Static(line("Invite it anyway? The refusal is recorded as proof, not retried."))
            yield from self.buttons("Invite anyway")
        yield Footer()


VERDICT_STYLES = {"accept": "green", "hold": "yellow", "refuse": "red", "queued": "cyan"}


def chat_label(chat: dict[str, Any]) -> Shown:
    """A chat in the invite list (a chats pane row): Mac, name, short id, status, and its
    predicted verdict (a Codex thread: queued in Codex, and when it runs)."""
    inbound = chat.get("inbound")
    style = VERDICT_STYLES.get(str((inbound or {}).get("verdict")), "dim")
    short = shown_id(chat["vendor"], chat["short"])
    return assemble(
        f"{chat['host']}  ",
        (" ".join(str(chat["label"]).split()), "bold"),
        f"  {short}  {chat.get('status') or ''}  ",
        (explain.route_words(inbound), style),
    )


def todo_label(todo: dict[str, Any]) -> Shown:
    """A todo in the invite list: its number, its title as written, its state."""
    return line(f"#{todo['id']}  {todo['title']}  ({todo['state']})")


def door_refusal(todo: dict[str, Any]) -> str | None:
    """Why the door would not send this todo in a frame (its title or body), in its
    words; None when it would."""
    try:
        frame_text.title(str(todo.get("title") or ""))
        frame_text.body(str(todo.get("body") or ""))
    except BadInput as refusal:
        return str(refusal)
    return None


@dataclass(frozen=True)
class Invitee:
    """Who the invite dialog picked: the todo, and the chat as the engine's invite takes
    it (`claude:<id>` or `codex:<thread id>`, its Mac, the name and folder its Mac
    told), and what the panes call it."""

    todo: int
    ref: str
    host: str
    name: str | None
    cwd: str | None
    called: str


def invitable(chats: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chats one may invite now: Claude chats live on a Mac and Codex threads a Mac
    keeps (open or saved), by Mac, Claude's first, then by name."""
    live = [chat for chat in chats if chat.get("live")]
    return sorted(live, key=lambda c: (c["host"], c["vendor"], str(c["label"]).lower()))


class InviteDialog(OfTheApp, ModalScreen[Invitee | None]):
    """Pick a todo (enter), then a Claude chat or a Codex thread on any Mac, each with its
    predicted verdict; `+` adds a todo here. A todo the door would not send (a ledger
    older than its check may hold a title with an escape) is refused when it is picked,
    in the door's words."""

    AUTO_FOCUS = "#todos"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "cancel", "Cancel", id="invite.cancel", tooltip="Invite nobody"),
        Binding("plus", "add_todo", "Add a todo", id="invite.add_todo", tooltip="A new todo"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.todo: int | None = None
        self.chats: dict[str, dict[str, Any]] = {}
        self.todos: dict[int, dict[str, Any]] = {}

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Label(
                line("Invite: pick a todo (enter), then a chat (enter) · + adds a todo", "bold")
            )
            yield OptionList(id="todos")
            yield Static(id="invite-refusal", classes="refusal")
            yield OptionList(id="chats")
        yield Footer()

    def on_mount(self) -> None:
        chats = self.query_one("#chats", OptionList)
        for chat in invitable(self.coop.chats.rows):
            key = f"{chat['host']}|{chat['vendor']}:{chat['native_id']}"
            self.chats[key] = chat
            chats.add_option(Option(chat_label(chat), id=key))
        if not self.chats:
            chats.add_option(Option(line("No live chat on any Mac yet"), disabled=True))
        self.query_one("#todos", OptionList).focus()
        self.load_todos()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load_todos(self, pick: int | None = None) -> None:
        todos = queries.open_todos()
        self.app.call_from_thread(self.show_todos, todos, pick)

    def show_todos(self, todos: list[dict[str, Any]], pick: int | None = None) -> None:
        options = self.query_one("#todos", OptionList)
        options.clear_options()
        self.todos = {int(todo["id"]): todo for todo in todos}
        for todo in todos:
            options.add_option(Option(todo_label(todo), id=str(todo["id"])))
        if not todos:
            options.add_option(Option(line("No open todos: press + to add one"), disabled=True))
            return
        ids = [todo["id"] for todo in todos]
        options.highlighted = ids.index(pick) if pick in ids else 0
        options.focus()

    def action_add_todo(self) -> None:
        self.app.push_screen(AddTodoDialog(), self._added)

    def _added(self, todo_id: int | None) -> None:
        if todo_id is not None:
            self.load_todos(todo_id)

    @on(OptionList.OptionSelected, "#todos")
    def _todo_picked(self, event: OptionList.OptionSelected) -> None:
        picked = int(str(event.option.id))
        refusal = self.query_one("#invite-refusal", Static)
        why = door_refusal(self.todos.get(picked, {}))
        refusal.update(line(why or "", "bold"))
        refusal.set_class(why is not None, "-refused")
        if why is not None:
            self.todo = None
            return
        self.todo = picked
        chats = self.query_one("#chats", OptionList)
        if chats.highlighted is None and self.chats:
            chats.highlighted = 0
        chats.focus()

    @on(OptionList.OptionSelected, "#chats")
    def _chat_picked(self, event: OptionList.OptionSelected) -> None:
        if self.todo is None:
            toast(self, line("Pick a todo first"), severity="warning")
            self.query_one("#todos", OptionList).focus()
            return
        key = str(event.option.id)
        host, ref = key.split("|", 1)
        chat = self.chats[key]
        called = self.coop.chats.session(chat).words
        chosen = Invitee(self.todo, ref, host, chat.get("name"), chat.get("cwd"), called)
        why = explain.will_not_arrive(chat.get("inbound"))
        if why is None:
            self.dismiss(chosen)
            return
        who = f"{called} on {host}"

        def decided(yes: bool | None) -> None:
            if yes:
                self.dismiss(chosen)

        self.app.push_screen(ConfirmRefusing(who, why), decided)

    def action_cancel(self) -> None:
        self.dismiss(None)
