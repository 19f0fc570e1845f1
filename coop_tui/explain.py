"""Evidence in plain words, for the screens that show it: why a delivery is proven lost,
what was predicted at send, and what a held notice proved."""

from __future__ import annotations

from typing import Any

from coop_engine.formats import iso
from coop_engine.loop.doors.codex import expectation
from coop_engine.loop.withdrawal import WITHDRAWN
from coop_engine.receipts import HOLD_PROOFS

REASONS = {
    "refused-by-receiver-policy": (
        "the receiver's settings refuse peer messages (crossSessionInbound: refuse)"
    ),
    "held-for-approval-then-expired": (
        "the receiver held it for approval (it bypasses permissions and Coop asserts no mode), "
        "and the approval dialog expired"
    ),
    "receiver-idle-without-entry": (
        "the receiver accepts peer messages and sat idle, yet its transcript has no entry"
        " with this id"
    ),
}


def prediction(inbound: dict[str, Any] | None) -> str:
    if not inbound:
        return "not recorded"
    words = f"{inbound.get('verdict')} (from {inbound.get('source')})"
    if inbound.get("dialog_expiry"):
        words += f", dialog expiry {inbound['dialog_expiry']}"
    if inbound.get("mode"):
        words += f", receiver mode {inbound['mode']}"
    if inbound.get("why"):
        words += f": {inbound['why']}"
    if inbound.get("expect"):
        # The Codex door's: when a message added to the thread's queue will run.
        words += f": {inbound['expect']}"
    return words


def held(notice: dict[str, Any]) -> str:
    """A held notice as a sentence: what it proved, where, and the preview it showed."""
    cause = str(notice.get("cause") or "unknown")
    proves = notice.get("proves") or HOLD_PROOFS.get(cause, HOLD_PROOFS["unknown"])
    words = f"{proves} (cause: {cause})"
    if notice.get("offset") is not None:
        words += f", at byte {notice['offset']}"
    if notice.get("preview"):
        words += f"; it showed «{notice['preview']}»"
    return words


def proof_of_loss(expiry: dict[str, Any] | None) -> list[str]:
    """Why Coop holds this delivery proven lost, one fact a line."""
    if not expiry:
        return ["not proven lost: silence proves nothing"]
    reason = str(expiry.get("reason"))
    if reason == WITHDRAWN:
        # The Codex door's one proof of loss: Codex's own `deleted: true`.
        return withdrawn(expiry)
    lines = [f"{reason}: {REASONS.get(reason, 'unrecognised reason')}"]
    sent, seen = expiry.get("sent_at"), expiry.get("observed_at")
    if isinstance(sent, int | float) and isinstance(seen, int | float):
        lines.append(f"sent {iso(sent)}, judged {iso(seen)}: {seen - sent:.0f} s later")
    lines.append(f"predicted at send: {prediction(expiry.get('inbound_at_send'))}")
    if expiry.get("receiver_status"):
        lines.append(f"the receiver's registry said {expiry['receiver_status']}")
    if expiry.get("transcript_offset") is not None:
        lines.append(f"its transcript was read again from byte {expiry['transcript_offset']}")
    return lines


def withdrawn(expiry: dict[str, Any]) -> list[str]:
    """A Codex envelope taken back out of Codex's queue: who asked, and Codex's answer."""
    by = expiry.get("by") or "someone"
    words = f"withdrawn from Codex's queue by {by}: Codex confirmed it will never run"
    lines = [f"{WITHDRAWN}: {words}"]
    lines.append(f"Codex answered deleted: true for queued message {expiry.get('queued_id')}")
    seen = expiry.get("observed_at")
    if isinstance(seen, int | float):
        lines.append(f"withdrawn {iso(seen)}")
    return lines


def in_codex_queue(envelope: dict[str, Any]) -> str | None:
    """Where a Codex envelope sent and not yet received stands in Codex's queue, as the
    last survey saw it; None when that is not known (or not a Codex envelope in flight)."""
    if envelope.get("door") != "codex" or envelope.get("state") != "uncertain":
        return None
    if envelope.get("queued") is True:
        return f"queued in Codex: {expectation(bool(envelope.get('thread_open')))}"
    if envelope.get("queued") is False:
        return "taken from Codex's queue: its receipt should follow"
    return None
