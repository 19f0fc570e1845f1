"""Evidence in plain words, for the screens that show it."""

from __future__ import annotations

from typing import Any

from coop_engine.formats import iso
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
