"""Messages the app posts to itself from other threads."""

from __future__ import annotations

from textual.message import Message


class LedgerChanged(Message):
    """The ledger moved (a watchdog event, a command we ran, or the slow poll)."""

    def can_replace(self, message: Message) -> bool:
        # A burst of WAL writes needs one refresh, not one per write.
        return isinstance(message, LedgerChanged)
