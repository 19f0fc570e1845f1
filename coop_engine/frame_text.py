"""What Coop lets into a frame, checked at the door: a todo's title and body are sent on
to a chat, so nothing that could steer the receiver's terminal, or pass for another
line, gets into the ledger to begin with.

A title is one line of at most TITLE_MOST characters; a body at most BODY_MOST (the
seed's HTTP fallback rejects more than 65,536 characters). Neither holds a C0 control
(a body may hold tab and newline), DEL, a C1 control or a bidi control. A refusal names
the character and its position, in one line.
"""

from __future__ import annotations

import re

from coop_engine.errors import BadInput
from coop_engine.formats import STEERING

TITLE_MOST = 200
BODY_MOST = 64 * 1024
_NAMES = {
    0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "newline", 0x0B: "VT",
    0x0C: "FF", 0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL", 0x9B: "CSI", 0x9D: "OSC",
    0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x202D: "LEFT-TO-RIGHT OVERRIDE",
}  # fmt: skip


def character(char: str) -> str:
    """A character as a refusal names it: `U+001B (ESC)`."""
    code = ord(char)
    name = _NAMES.get(code)
    return f"U+{code:04X}" + (f" ({name})" if name else "")


def _refuse_controls(what: str, text: str, allowed: str = "") -> None:
    for found in STEERING.finditer(text):
        if found.group() not in allowed:
            at = found.start() + 1
            raise BadInput(f"{what} cannot hold {character(found.group())} (character {at})")


def title(text: str) -> str:
    """The title as it is kept (stripped), or BadInput saying why not."""
    text = text.strip()
    if not text:
        raise BadInput("A todo needs a title")
    newline = re.search(r"[\n\r\u2028\u2029]", text)
    if newline is not None:
        at = newline.start() + 1
        raise BadInput(f"A todo title is one line: {character(newline.group())} at character {at}")
    _refuse_controls("A todo title", text)
    if len(text) > TITLE_MOST:
        raise BadInput(f"A todo title is at most {TITLE_MOST} characters, not {len(text):,}")
    return text


def body(text: str) -> str:
    """The body as it is kept, or BadInput saying why not."""
    if len(text) > BODY_MOST:
        raise BadInput(f"A todo body is at most {BODY_MOST:,} characters, not {len(text):,}")
    _refuse_controls("A todo body", text, allowed="\t\n")
    return text
