"""The engine's refusals. Each message is what the user reads, word for word.

Where the seeds give a sentence, the sentence is used exactly; the constants below are
the ones tests and other parts compare against.
"""

from __future__ import annotations

ALREADY_SENT_AGAIN = "This delivery was already sent again"
ONLY_CLI_TAKER_ADOPTED = "Only a CLI taker's compatibility record can be adopted"
ENROLLMENT_CLASH = "Another enrollment already names this chat on {host}: {id}"
NOT_ELIGIBLE_FOR_SEND = "not eligible: observe the uncertain send instead"
NOT_TAKEN_BACK = (
    "a frame in a Claude inbox cannot be taken back; wait for its receipt or its proof of loss"
)
HELD_NOT_LOST = (
    "Envelope {id} is held by its receiver (its held notice was seen): {reason} does not"
    " prove it lost"
)


class CoopError(Exception):
    """A command refused by a rule. The message is one line for the user."""


class NotFound(CoopError):
    """An id that names nothing in the ledger."""


class Conflict(CoopError):
    """The ledger's state does not allow the command (a compare-and-set lost)."""


class BadInput(CoopError):
    """Input no command could take as it is (a title holding an escape, a reference
    naming several chats): a usage error, exit 2, and nothing recorded."""


class Ambiguous(NotFound, BadInput):
    """A reference that names several things: the line lists them; giving more of the
    id fixes it."""


READ_ONLY = "read-only: started with --read-only"


class ReadOnly(CoopError):
    """A command in a process started with --read-only: it shows and changes nothing."""


class KeyReused(CoopError):
    """An idempotency key replayed with different arguments."""


class NotAuthorized(CoopError):
    """The caller may not make this decision (only Dad, or the chief as his proxy)."""


class LedgerError(CoopError):
    """The ledger, or the Coop home that holds it, cannot be opened, read or written.
    The message names the ledger (or the home) and the cause."""


ENVELOPE_ID_TOO_SHORT = "give at least {count} characters of the envelope's id"
ECHO_WIDTH = 60


def shown(text: str, width: int = ECHO_WIDTH) -> str:
    """Input echoed in a message: whole when short, else its start and its length, so a
    60,000-character id still makes a line someone can read."""
    if len(text) <= width:
        return text
    return f"{text[:width]}... ({len(text):,} characters)"


class Fenced(CoopError):
    """A writer whose lease epoch is no longer current (a successor took the ledger):
    it writes nothing, sends nothing, and steps down. The message says so in one line."""
