"""Dad's decisions from the keyboard: Send again (after the proof of loss), Withdraw and
invite. Each runs as an engine command in a thread worker; a refusal is shown word for
word."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App

from coop_engine import queries
from coop_engine.engine import Engine
from coop_engine.errors import READ_ONLY, CoopError
from coop_engine.frame import writes_refused
from coop_engine.loop.office import Office
from coop_tui.chats import Directory
from coop_tui.messages import LedgerChanged
from coop_tui.shown import line, toast
from coop_tui.widgets.panes import OutboxPane

if TYPE_CHECKING:
    from coop_tui.screens.dialogs import Invitee


def withdrawable(envelope: dict[str, Any]) -> bool:
    """Whether Withdraw can work: the envelope was never sent (it is cancelled), or it is
    a Codex envelope sent and not yet received (Codex is asked to take it out of its
    queue; only Codex's `deleted: true` expires it)."""
    if envelope["state"] == "pending":
        return True
    return envelope.get("door") == "codex" and envelope["state"] == "uncertain"


def refused_here(app: App[Any]) -> bool:
    """Whether this process was started read-only; if so the app says it in one line.
    A courtesy before a dialog opens: the engine refuses the command itself anyway."""
    if not writes_refused():
        return False
    toast(app, line(READ_ONLY), title="Coop", severity="warning")
    return True


class Decisions(App[None]):
    engine: Engine | None
    office: Office
    outbox_pane: OutboxPane
    chats: Directory

    # --- Send again -----------------------------------------------------------------------

    def action_resend(self) -> None:
        if refused_here(self):
            return
        row = self.outbox_pane.selected()
        if row is None:
            toast(self, line("Select an envelope in the outbox first"), severity="warning")
            return
        self.request_resend(row["id"])

    @work(thread=True, group="commands", exit_on_error=False)
    def request_resend(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        """Read the envelope as it is now: a proven loss not yet sent again is confirmed
        first; anything else goes straight to the engine, whose refusal says why."""
        row = queries.envelope_row(outbox_id)
        if row["state"] == "expired" and not row["resent_as"]:
            self.call_from_thread(self._confirm_resend, outbox_id, done)
        else:
            self.resend(outbox_id, done)

    def _confirm_resend(self, outbox_id: str, done: Callable[[], None] | None) -> None:
        from coop_tui.screens.dialogs import ConfirmResend

        def decided(yes: bool | None) -> None:
            if yes:
                self.resend(outbox_id, done)

        self.push_screen(ConfirmResend(outbox_id), decided)

    @work(thread=True, group="commands", exit_on_error=False)
    def resend(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        assert self.engine is not None
        try:
            result = self.engine.resend(outbox_id, "dad")
        except CoopError as refusal:
            # Refusals and ids are data: shown as written, never as markup.
            toast(self, line(refusal), title="Send again", severity="warning")
            return
        toast(self, line(f"Sent again as {result['outbox'][:8]}"), title="Send again")
        self.post_message(LedgerChanged())
        if done is not None:
            self.call_from_thread(done)

    # --- Withdraw -------------------------------------------------------------------------

    def action_withdraw(self) -> None:
        if refused_here(self):
            return
        row = self.outbox_pane.selected()
        if row is None:
            toast(self, line("Select an envelope in the outbox first"), severity="warning")
            return
        self.request_withdraw(row["id"])

    @work(thread=True, group="commands", exit_on_error=False)
    def request_withdraw(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        """Read the envelope as it is now: one Withdraw can work on is confirmed first;
        anything else goes straight to the engine, whose refusal says why."""
        row = queries.envelope_row(outbox_id)
        if withdrawable(row):
            self.call_from_thread(self._confirm_withdraw, row, done)
        else:
            self.withdraw(outbox_id, done)

    def _confirm_withdraw(self, envelope: dict[str, Any], done: Callable[[], None] | None) -> None:
        from coop_tui.screens.dialogs import ConfirmWithdraw

        def decided(yes: bool | None) -> None:
            if yes:
                self.withdraw(envelope["id"], done)

        chat = self.chats.envelope(envelope).words
        self.push_screen(ConfirmWithdraw(envelope, chat), decided)

    @work(thread=True, group="commands", exit_on_error=False)
    def withdraw(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        """As Dad, through the Office: a Codex envelope in flight is taken back out of
        Codex's queue; any other goes to the engine, which cancels one never sent and
        refuses the rest. `done` runs either way: a refused ask to Codex is on record."""
        assert self.engine is not None
        try:
            result = self.office.withdraw(self.engine, outbox_id, "dad")
        except CoopError as refusal:
            # Codex's and the engine's words, shown as written, never as markup.
            toast(self, line(refusal), title="Withdraw", severity="warning")
        else:
            if result["state"] == "expired":
                said = f"Withdrawn from Codex's queue: {outbox_id[:8]} expired ({result['reason']})"
            else:
                said = f"Withdrawn: {outbox_id[:8]} cancelled, never sent"
            toast(self, line(said), title="Withdraw")
        self.post_message(LedgerChanged())
        if done is not None:
            self.call_from_thread(done)

    # --- Invite ---------------------------------------------------------------------------

    def action_invite(self) -> None:
        from coop_tui.screens.dialogs import InviteDialog

        if refused_here(self):
            return
        self.push_screen(InviteDialog(), self._invited)

    def _invited(self, choice: Invitee | None) -> None:
        if choice is not None:
            self.invite(choice)

    @work(thread=True, group="commands", exit_on_error=False)
    def invite(self, chosen: Invitee) -> None:
        """The engine's invite, as `coop invite N --session claude:ID|codex:ID` calls it:
        the chat's name and folder as its Mac told them (what the outbox, the notices and
        the toasts call it by)."""
        assert self.engine is not None
        try:
            result = self.engine.invite(
                chosen.todo, chosen.ref, chosen.host, name=chosen.name, cwd=chosen.cwd
            )
        except CoopError as refusal:
            toast(self, line(refusal), title="Invite", severity="warning")
            return
        invited = f"Invited {chosen.called} on {chosen.host} to #{chosen.todo}"
        toast(self, line(f"{invited} (envelope {result['outbox'][:8]})"), title="Invite")
        self.post_message(LedgerChanged())
