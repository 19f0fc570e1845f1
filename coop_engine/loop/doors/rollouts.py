"""What a Codex thread's rollout says about one envelope (DESIGN.md 5.10).

The receipt is the line Codex writes when it runs the queued message as a turn:
`{"type": "event_msg", "payload": {"type": "item_completed", "turn_id": T, "item":
{"type": "UserMessage", "client_id": <outbox id>, ...}}}`. A message sent by the
`codex queue` fallback carries a client id the CLI made up and never printed: its
receipt is a UserMessage whose text ends with the envelope's marker. The turn T then
ends with `task_complete` (its `last_agent_message` is the final, the answer) or
`turn_aborted`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from hosts.mac.codex_door import marker

Lines = Iterable[tuple[int, str]]


@dataclass(frozen=True)
class Receipt:
    offset: int
    turn_id: str | None
    item_id: str | None
    shape: str  # client-id | marker
    timestamp: str | None

    def evidence(self) -> dict[str, Any]:
        return {
            "offset": self.offset,
            "turn_id": self.turn_id,
            "item_id": self.item_id,
            "shape": self.shape,
            "timestamp": self.timestamp,
        }


@dataclass(frozen=True)
class TurnEnd:
    offset: int
    ended: str  # task_complete | turn_aborted
    final: str | None  # the agent's last message of the turn
    timestamp: str | None


def _event(text: str) -> tuple[dict[str, Any], str | None] | None:
    """An `event_msg` line's payload and timestamp, or None for any other line."""
    try:
        entry = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("type") != "event_msg":
        return None
    payload = entry.get("payload")
    if not isinstance(payload, dict):
        return None
    stamp = entry.get("timestamp")
    return payload, stamp if isinstance(stamp, str) else None


def _user_text(item: dict[str, Any]) -> str:
    parts = item.get("content")
    if not isinstance(parts, list):
        return ""
    return "".join(str(part.get("text") or "") for part in parts if isinstance(part, dict))


def receipts(lines: Lines, outbox_id: str) -> Iterator[Receipt]:
    """Every line of `lines` that is this envelope's receipt, in order."""
    tag = marker(outbox_id)
    for offset, text in lines:
        event = _event(text)
        if event is None:
            continue
        payload, stamp = event
        item = payload.get("item")
        if payload.get("type") != "item_completed" or not isinstance(item, dict):
            continue
        if item.get("type") != "UserMessage":
            continue
        if item.get("client_id") == outbox_id:
            shape = "client-id"
        elif _user_text(item).rstrip().endswith(tag):
            shape = "marker"
        else:
            continue
        turn, item_id = payload.get("turn_id"), item.get("id")
        yield Receipt(
            offset,
            turn if isinstance(turn, str) else None,
            item_id if isinstance(item_id, str) else None,
            shape,
            stamp,
        )


def turn_end(lines: Lines, turn_id: str) -> TurnEnd | None:
    """How the turn ended, when `lines` hold its end; None while it runs (or when its
    holder died before it could end it)."""
    for offset, text in lines:
        event = _event(text)
        if event is None:
            continue
        payload, stamp = event
        kind = payload.get("type")
        if kind not in ("task_complete", "turn_aborted") or payload.get("turn_id") != turn_id:
            continue
        final = payload.get("last_agent_message")
        return TurnEnd(offset, str(kind), final if isinstance(final, str) else None, stamp)
    return None
