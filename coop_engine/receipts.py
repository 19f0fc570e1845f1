"""Transcript lines -> peer receipts, conflicts, turn finals and answers (DESIGN.md 5.5).

A peer entry comes in two shapes: a `user` entry that starts a new turn (idle
receiver), or a `queued_command` attachment absorbed into a running turn (busy
receiver). Both must carry `isMeta: true` and an `origin` that is exactly
{kind: peer, from: cwkCoop, msg_id: <the id>}; anything else matching the id is a
Conflict, never a receipt. Lines that are not JSON objects are skipped with a reason.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

SENDER = "cwkCoop"
HELD_MARK = "Held peer message"
Line = tuple[int, str]


def parse(line: str | bytes) -> tuple[dict[str, Any] | None, str | None]:
    """A transcript line as a JSON object, or None and why it was skipped."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(value, dict):
        return None, f"JSON {type(value).__name__}, not an object"
    return value, None


@dataclass
class Sighting:
    """An entry that names the envelope's id."""

    offset: int
    shape: str  # "user" (idle receiver) or "queued_command" (absorbed mid-turn)
    entry_uuid: str | None
    origin: Any
    timestamp: str | None
    problems: list[str] = field(default_factory=list)

    @property
    def is_receipt(self) -> bool:
        return not self.problems

    def evidence(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "shape": self.shape,
            "entry_uuid": self.entry_uuid,
            "origin": self.origin,
            "timestamp": self.timestamp,
            "problems": self.problems,
        }


def _provenance(outbox_id: str, is_meta: Any, origin: Any) -> list[str]:
    problems = []
    if is_meta is not True:
        problems.append("isMeta is not true")
    if not isinstance(origin, dict):
        return problems + ["no origin"]
    expected = {"kind": "peer", "from": SENDER, "msg_id": outbox_id}
    for key, value in expected.items():
        if origin.get(key) != value:
            problems.append(f"origin.{key} is {origin.get(key)!r}, not {value!r}")
    return problems


def sighting(entry: dict[str, Any], offset: int, outbox_id: str) -> Sighting | None:
    """The entry as a sighting of `outbox_id`, or None if it is not a peer entry for it."""
    kind = entry.get("type")
    if kind == "user":
        origin = entry.get("origin")
        named = entry.get("uuid") == outbox_id or (
            isinstance(origin, dict) and origin.get("msg_id") == outbox_id
        )
        if not named:
            return None
        found = Sighting(offset, "user", entry.get("uuid"), origin, entry.get("timestamp"))
        found.problems = _provenance(outbox_id, entry.get("isMeta"), origin)
        return found
    attachment = entry.get("attachment")
    if (
        kind == "attachment"
        and isinstance(attachment, dict)
        and attachment.get("type") == "queued_command"
    ):
        origin = attachment.get("origin", entry.get("origin"))
        named = attachment.get("source_uuid") == outbox_id or (
            isinstance(origin, dict) and origin.get("msg_id") == outbox_id
        )
        if not named:
            return None
        is_meta = True if entry.get("isMeta") is True or attachment.get("isMeta") is True else None
        found = Sighting(
            offset, "queued_command", attachment.get("source_uuid"), origin, entry.get("timestamp")
        )
        found.problems = _provenance(outbox_id, is_meta, origin)
        return found
    return None


def sightings(lines: Iterable[Line], outbox_id: str) -> list[Sighting]:
    found = []
    for offset, text in lines:
        if outbox_id not in text:
            continue
        entry, _ = parse(text)
        if entry is not None and (seen := sighting(entry, offset, outbox_id)) is not None:
            found.append(seen)
    return found


def assistant_text(entry: dict[str, Any]) -> str | None:
    """The text of a main-chain assistant entry, or None."""
    if entry.get("type") != "assistant" or entry.get("isSidechain"):
        return None
    message = entry.get("message")
    if not isinstance(message, dict):
        return None
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    parts = [c.get("text") for c in content if isinstance(c, dict) and c.get("type") == "text"]
    texts = [p for p in parts if isinstance(p, str)]
    return "\n".join(texts) if texts else None


def is_turn_end(entry: dict[str, Any]) -> bool:
    """turn_duration (2.1.x), or stop_hook_summary (older builds, when Stop hooks ran)."""
    return (
        entry.get("type") == "system"
        and entry.get("subtype") in ("turn_duration", "stop_hook_summary")
        and not entry.get("isSidechain")
    )


def starts_turn(entry: dict[str, Any]) -> bool:
    """A new prompt (typed, or a peer's), which closes whatever turn came before it.
    Tool results are user entries too, but they continue the running turn."""
    if entry.get("type") != "user" or entry.get("isSidechain"):
        return False
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return True
    if not isinstance(content, list):
        return False
    kinds = {part.get("type") for part in content if isinstance(part, dict)}
    return "text" in kinds and "tool_result" not in kinds


@dataclass
class Final:
    """A completed turn's final: the last main-chain assistant text before the turn ended."""

    offset: int  # the assistant line
    end: int  # the line that ended the turn
    text: str
    timestamp: str | None


def finals(lines: Iterable[Line]) -> Iterator[Final]:
    last: tuple[int, str, str | None] | None = None
    for offset, text in lines:
        entry, _ = parse(text)
        if entry is None:
            continue
        said = assistant_text(entry)
        if said is not None:
            last = (offset, said, entry.get("timestamp"))
        elif is_turn_end(entry) or starts_turn(entry):
            if last is not None:
                yield Final(last[0], offset, last[1], last[2])
            last = None


def answer_in(text: str, nonce: str) -> str | None:
    """ "accept", "decline", "both", or None: what a final says to this nonce."""
    token = re.escape(nonce)
    accepts = re.search(rf"\bCOOP_ACCEPT\s+{token}(?![A-Za-z0-9])", text) is not None
    declines = re.search(rf"\bCOOP_DECLINE\s+{token}(?![A-Za-z0-9])", text) is not None
    if accepts and declines:
        return "both"
    return "accept" if accepts else "decline" if declines else None


# What a held notice's last sentence names (tests/real_claude/OBSERVED.md 6, 7, 16), in
# the receiver's words, and what that cause proves about the frame's fate.
HOLD_CAUSES = (
    ("parity", "did not attest its permission mode"),
    ("explicit", '"crossSessionInbound" setting is "hold"'),
    ("explicit", 'set "crossSessionInbound" to "hold"'),  # managed or repository settings
    ("unrecognized", 'unrecognized "crossSessionInbound"'),
)
HOLD_PROOFS = {
    "parity": "held for approval by permission-mode parity: dropped at its dialog expiry",
    "explicit": "held by an explicit crossSessionInbound hold: never expires while watched",
    "unrecognized": (
        "held while a settings file has an unrecognized crossSessionInbound: never expires"
        " while watched"
    ),
    "unknown": "held for a reason Coop cannot read: never expires while watched",
}


def hold_cause(content: str) -> str:
    """parity, explicit, unrecognized, or unknown: why the receiver says it holds."""
    for cause, words in HOLD_CAUSES:
        if words in content:
            return cause
    return "unknown"


@dataclass
class HeldNotice:
    offset: int
    preview: str
    timestamp: str | None
    content: str

    @property
    def cause(self) -> str:
        return hold_cause(self.content)


def held_notice(entry: dict[str, Any], offset: int) -> HeldNotice | None:
    if entry.get("type") != "system" or entry.get("subtype") != "informational":
        return None
    content = entry.get("content")
    if not isinstance(content, str) or HELD_MARK not in content:
        return None
    match = re.search(r"«(.*)»", content, re.S)
    preview = match.group(1) if match else ""
    return HeldNotice(offset, preview, entry.get("timestamp"), content)


def _squash(text: str) -> str:
    return " ".join(text.split())


# Claude Code 2.1.328 takes these out of a preview (read from its binary): brackets and
# quotes of every kind, the minus sign, bracket pieces and box drawing, and every dash
# but "-". "Second attempt: ... (id) was not delivered (reason)." shows without brackets.
_UNSHOWN_CATEGORIES = ("Ps", "Pe", "Pi", "Pf")
_UNSHOWN = re.compile(
    "[\"'\u2212\u02f9-\u02fc\u230c-\u230f\u231c-\u231f\u239b-\u23cc\u23dc-\u23e1"
    "\u2e00-\u2e0d\u2e1c\u2e1d\u2500-\u257f]"
)


def _as_previewed(text: str) -> str:
    return "".join(
        ch
        for ch in _UNSHOWN.sub("", text)
        if unicodedata.category(ch) not in _UNSHOWN_CATEGORIES
        and (ch == "-" or unicodedata.category(ch) != "Pd")
    )


def preview_matches(preview: str, text: str) -> bool:
    """Whether a held notice's preview is the beginning of this envelope's text, as the
    receiver shows it."""
    shown = _squash(_as_previewed(preview.rstrip("…").rstrip(".").rstrip()))
    return bool(shown) and _squash(_as_previewed(text)).startswith(shown)
