"""One formatter per kind of value both faces show: times, untrusted text, transcript
entries. The CLI prints these; the app styles them. Nothing here reads the ledger.

Text a chat, a transcript or another Mac wrote is untrusted: it reaches a terminal only
through `printable` (or `one_line` in a table cell), never as markup.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any

# What steers a terminal instead of showing: C0, DEL, C1, and the bidi controls
# (embeddings, overrides, isolates, marks: an override reorders the rest of the line).
STEERING = re.compile(r"[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_KEPT = "\t\n"
_BREAKS = str.maketrans({"\n": " ", "\r": " ", "\t": " "})
EXCERPT_WIDTH = 160


def iso(at: float | None, timespec: str = "milliseconds") -> str | None:
    """Unix seconds -> ISO-8601 in UTC with a `Z` (None stays None)."""
    if at is None:
        return None
    from datetime import UTC, datetime

    return datetime.fromtimestamp(at, UTC).isoformat(timespec=timespec).replace("+00:00", "Z")


def _escape(found: re.Match[str]) -> str:
    char = found.group()
    if char in _KEPT:
        return char
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def printable(text: str) -> str:
    """Untrusted text, safe for a terminal: control characters (an escape sequence a
    chat or an id carried) shown as `\\x1b`, bidi controls as `\\u202e`, never sent;
    line breaks and tabs kept."""
    return STEERING.sub(_escape, text)


def one_line(text: str) -> str:
    """Untrusted text for one line of a terminal: breaks become spaces, then `printable`."""
    return printable(text.translate(_BREAKS))


# --- transcript entries --------------------------------------------------------------------


class EntryLine:
    """One transcript line as a person reads it. `mark` is one of: `peer` (an entry
    another session sent), `final` (a turn's final), `held` (a held-peer notice),
    `skipped` (not a JSON object), or empty."""

    # A plain class rather than a dataclass: `coop chats` prints through this module, and
    # importing dataclasses (and inspect) costs more than the rest of its imports.
    __slots__ = ("offset", "mark", "kind", "excerpt", "timestamp")

    def __init__(
        self, offset: int, mark: str, kind: str, excerpt: str, timestamp: str | None = None
    ) -> None:
        self.offset = offset
        self.mark = mark
        self.kind = kind
        self.excerpt = excerpt
        self.timestamp = timestamp

    def _fields(self) -> tuple[Any, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EntryLine) and self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return f"EntryLine{self._fields()!r}"


def _excerpt(entry: dict[str, Any], width: int | None) -> str:
    """What the entry says: an assistant's text, else its content's parts (text, tool
    names, types), else an attachment's prompt; whitespace runs collapsed."""
    from coop_engine import receipts

    said = receipts.assistant_text(entry)
    if said is None:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else entry.get("content")
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text") or part.get("content") or part.get("name") or part.get("type"))
                for part in content
                if isinstance(part, dict)
            )
        attachment = entry.get("attachment")
        if not content and isinstance(attachment, dict):
            content = attachment.get("prompt")
        said = str(content or "")
    text = " ".join(said.split())
    return text if width is None else text[:width]


def _origin(entry: dict[str, Any]) -> Any:
    """Who sent the entry: its own origin, else (an absorbed peer message) its
    attachment's."""
    attachment = entry.get("attachment")
    if entry.get("origin") is None and isinstance(attachment, dict):
        return attachment.get("origin")
    return entry.get("origin")


def entry_line(
    offset: int,
    raw: str,
    finals: frozenset[int] = frozenset(),
    width: int | None = EXCERPT_WIDTH,
) -> EntryLine:
    """One transcript line, for the CLI's `coop chat show` and the app's inspector
    alike. `finals` holds the offsets of turn finals (receipts.finals); `width` cuts the
    excerpt (None: whole). Every string in the answer is printable."""
    from coop_engine import receipts

    entry, reason = receipts.parse(raw)
    if entry is None:
        return EntryLine(offset, "skipped", f"(skipped: {reason})", "")
    kind = "/".join(str(part) for part in (entry.get("type"), entry.get("subtype")) if part)
    mark = ""
    origin = _origin(entry)
    if isinstance(origin, dict) and origin.get("kind") == "peer":
        mark = "peer"
        kind += f" peer from {origin.get('from')} msg_id {origin.get('msg_id')}"
    elif offset in finals:
        mark = "final"
        kind += " FINAL"
    elif receipts.held_notice(entry, offset) is not None:
        mark = "held"
    stamp = entry.get("timestamp")
    return EntryLine(
        offset,
        mark,
        one_line(kind),
        one_line(_excerpt(entry, width)),
        one_line(str(stamp)) if stamp else None,
    )


def entry_lines(lines: list[tuple[int, str]], width: int | None = EXCERPT_WIDTH) -> list[EntryLine]:
    """A run of transcript lines, each rendered with its turn's finals marked."""
    from coop_engine import receipts

    finals = frozenset(final.offset for final in receipts.finals(lines))
    return [entry_line(offset, text, finals, width) for offset, text in lines]
