"""The engine's refusals. Each message is what the user reads, word for word.

Where the seeds give a sentence, the sentence is used exactly; the constants below are
the ones tests and other parts compare against.
"""

from __future__ import annotations

ALREADY_SENT_AGAIN = "This delivery was already sent again"
ONLY_CLI_TAKER_ADOPTED = "Only a CLI taker's compatibility record can be adopted"
ENROLLMENT_CLASH = "Another enrollment already names this chat on {host}: {id}"
NOT_ELIGIBLE_FOR_SEND = "not eligible: observe the uncertain send instead"


class CoopError(Exception):
    """A command refused by a rule. The message is one line for the user."""


class NotFound(CoopError):
    """An id that names nothing in the ledger."""


class Conflict(CoopError):
    """The ledger's state does not allow the command (a compare-and-set lost)."""


class KeyReused(CoopError):
    """An idempotency key replayed with different arguments."""


class NotAuthorized(CoopError):
    """The caller may not make this decision (only Dad, or the chief as his proxy)."""
