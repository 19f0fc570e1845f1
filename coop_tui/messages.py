"""The app's messages: what other threads and the screens tell the app."""

from __future__ import annotations

from collections.abc import Callable

from textual.message import Message


class LedgerChanged(Message):
    """The ledger moved (a watchdog event, a command we ran, or the slow poll)."""

    def can_replace(self, message: Message) -> bool:
        # A burst of WAL writes needs one refresh, not one per write.
        return isinstance(message, LedgerChanged)


class ResendRequested(Message):
    """A screen asks for Send again of one envelope; `done` runs once it was sent."""

    def __init__(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.outbox_id = outbox_id
        self.done = done


class WithdrawRequested(Message):
    """A screen asks to withdraw one envelope; `done` runs once it was withdrawn."""

    def __init__(self, outbox_id: str, done: Callable[[], None] | None = None) -> None:
        super().__init__()
        self.outbox_id = outbox_id
        self.done = done
