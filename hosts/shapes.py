"""What a Mac's answers must look like before anything on the office reads them.

A helper on another Mac is untrusted input: a Mac that answers garbage (a wrong shape,
a string where a list was due) is refused here, at the boundary, as a `Malformed`
answer that the channel turns into a HostError naming the Mac, so that no pass of the
office ever meets a KeyError in what a Mac said. Only what the office reads is checked;
a key it never reads may hold anything.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Shape = Any

INT = (int,)
STR = (str,)
OPT_STR = (str, type(None))
OPT_INT = (int, type(None))
BOOL = (bool,)
DICT = (dict,)
OPT_DICT = (dict, type(None))
LIST = (list,)


def _lines() -> Shape:
    return [[INT, STR]]  # (offset, text) pairs


CHUNK: Shape = {
    "path": OPT_STR,
    "start": INT,
    "end": INT,
    "size": INT,
    "rotated": BOOL,
    "lines": _lines(),
}
CHAT: Shape = {
    "session_id": STR,
    "pid": INT,
    "live": BOOL,
    "entry": DICT,
}
SHAPES: dict[str, Shape] = {
    "chats": {"chats": [CHAT]},
    "survey": {
        "cursor": STR,
        "full": BOOL,
        "chats": [CHAT],
        "gone": [STR],
        "sightings": DICT,
        "more": BOOL,
        "watch": OPT_DICT,
    },
    "health": {"chats_live": INT, "chats_registered": INT},
    "transcript_position": {"path": OPT_STR, "size": INT},
    "transcript_scan": CHUNK,
    "transcript_read": CHUNK,
    "transcript_tail": CHUNK,
    "rollout_scan": CHUNK,
    "rollout_read": CHUNK,
    "rollout_tail": CHUNK,
    "find_session": {"matches": INT},
}


class Malformed(ValueError):
    """An answer of the wrong shape: `str()` says where."""


def check(op: str, result: Any) -> Any:
    """`result` when it has the shape `op`'s answers have, else Malformed."""
    shape = SHAPES.get(op)
    if shape is not None:
        _check(shape, result, op)
    return result


def _check(shape: Shape, value: Any, where: str) -> None:
    if isinstance(shape, tuple):
        # bool is an int to Python; an answer's count is never true or false.
        if not isinstance(value, shape) or (isinstance(value, bool) and bool not in shape):
            raise Malformed(f"{where} is {type(value).__name__}, not {_named(shape)}")
    elif isinstance(shape, dict):
        if not isinstance(value, dict):
            raise Malformed(f"{where} is {type(value).__name__}, not an object")
        for key, inner in shape.items():
            if key not in value:
                raise Malformed(f"{where} has no {key!r}")
            _check(inner, value[key], f"{where}.{key}")
    elif len(shape) == 1:  # [item]: a list of items
        if not isinstance(value, list):
            raise Malformed(f"{where} is {type(value).__name__}, not a list")
        for index, item in enumerate(value):
            _check(shape[0], item, f"{where}[{index}]")
    else:  # [a, b]: a pair, as JSON carries a tuple
        if not isinstance(value, list) or len(value) != len(shape):
            raise Malformed(f"{where} is not a pair")
        for index, (inner, item) in enumerate(zip(shape, value, strict=True)):
            _check(inner, item, f"{where}[{index}]")


def _named(shape: tuple[type, ...]) -> str:
    return " or ".join("null" if kind is type(None) else kind.__name__ for kind in shape)
