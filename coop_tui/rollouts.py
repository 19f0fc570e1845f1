"""A Codex thread's rollout as the chat inspector shows it: one line a row, its kind (the
line's `type` and its payload's), marks for what Coop looks for, and what it says.

A rollout line is `{"timestamp", "type", "payload"}` (coop_engine/loop/doors/rollouts.py
reads the same lines for receipts): the receipt of an envelope is an `event_msg
item_completed` whose item is a `UserMessage` carrying the envelope's id as its
`client_id` (marked as a peer entry is in a Claude transcript), and a turn's final is the
`last_agent_message` of its `event_msg task_complete` (marked as a final). Every string
comes from the thread and is returned printable, on one line.
"""

from __future__ import annotations

import json
from typing import Any

from coop_engine.formats import EXCERPT_WIDTH, EntryLine, one_line

# Where a payload keeps what it says, in the order looked at.
SAID = ("message", "last_agent_message", "text", "output", "arguments", "reason")


def _texts(content: Any) -> str:
    """The text parts of a message's or an item's content."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [part.get("text") for part in content if isinstance(part, dict)]
    return " ".join(str(part) for part in parts if part)


def _said(payload: dict[str, Any]) -> str:
    """What a payload says: its message or final, its content's text, or a tool call's
    name and arguments; else nothing."""
    item = payload.get("item")
    if isinstance(item, dict):
        return _texts(item.get("content"))
    if payload.get("content") is not None:
        return _texts(payload.get("content"))
    if payload.get("type") == "session_meta" or "cli_version" in payload:
        return f"{payload.get('originator')} {payload.get('cli_version')} in {payload.get('cwd')}"
    summary = _texts(payload.get("summary"))
    if summary:
        return summary
    for key in SAID:
        value = payload.get(key)
        if isinstance(value, str) and value:
            name = payload.get("name")
            return f"{name} {value}" if key == "arguments" and name else value
    return ""


def rollout_line(offset: int, raw: str, width: int | None = EXCERPT_WIDTH) -> EntryLine:
    """One rollout line: `peer` for a UserMessage carrying a client id (an envelope's
    receipt), `final` for a turn's task_complete, `skipped` for what is not a JSON line."""
    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError) as error:
        return EntryLine(offset, "skipped", one_line(f"(skipped: {error})"), "")
    if not isinstance(entry, dict):
        return EntryLine(offset, "skipped", "(skipped: not a JSON object)", "")
    given = entry.get("payload")
    payload: dict[str, Any] = given if isinstance(given, dict) else {}
    kind = "/".join(str(p) for p in (entry.get("type"), payload.get("type")) if p)
    item = payload.get("item")
    mark = ""
    if isinstance(item, dict):
        kind += f" {item.get('type')}"
        if item.get("type") == "UserMessage" and item.get("client_id"):
            mark = "peer"
            kind += f" client_id {item['client_id']}"
    if payload.get("type") == "task_complete":
        mark = "final"
        kind += " FINAL"
    said = " ".join(_said(payload).split())
    stamp = entry.get("timestamp")
    return EntryLine(
        offset,
        mark,
        one_line(kind),
        one_line(said if width is None else said[:width]),
        one_line(str(stamp)) if stamp else None,
    )


def rollout_lines(lines: list[tuple[int, str]]) -> list[EntryLine]:
    return [rollout_line(offset, text) for offset, text in lines]
