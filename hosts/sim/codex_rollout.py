"""The lines of a simulated Codex rollout, in the shape the real Codex CLI 0.171.0 writes.

Every line is ``{"timestamp", "ordinal", "type", "payload"}`` (compact JSON, one write
each). Line 0 is ``session_meta``; a turn is ``event_msg task_started``, on the first
turn the developer and environment messages, ``world_state``, ``turn_context`` and
``event_msg thread_settings_applied``, then the user's ``response_item`` message,
``event_msg item_completed`` for it and for the answer, the assistant ``response_item``,
``token_usage_record``, ``event_msg token_count`` and ``event_msg task_complete``. A
turn the queue starts on a resumed thread (``queue_turn``) has ``turn_trigger: "queue"``,
only ``turn_context`` before the user's message, and a ``client_id`` on its
``UserMessage`` item; one interrupted ends with a ``<turn_aborted>`` user message and
``event_msg turn_aborted``. Also here: UUIDv7 ids and the rollout's file name.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hosts.sim.codex_shapes import (
    APPROVAL_POLICY,
    CONTEXT_WINDOW,
    MODEL,
    RATE_LIMITS,
    TURN_ABORTED,
    TURN_SETTINGS,
    USAGE,
)

CLI_VERSION = "0.171.0"
PROVIDER = "openai"
# Which program started the thread: (originator, source), as session_meta records them.
CLIENTS = {
    "tui": ("codex-tui", "cli"),
    "exec": ("codex_exec", "exec"),
    "desktop": ("Codex Desktop", "vscode"),
}
OPENING_ITEMS = 2


def uuid7(now: float | None = None) -> str:
    """A lowercase UUIDv7: 48 bits of unix milliseconds, version 7, variant 10, random."""
    millis = int((time.time() if now is None else now) * 1000) & ((1 << 48) - 1)
    value = (millis << 80) | secrets.randbits(80)
    value = (value & ~(0xF << 76)) | (0x7 << 76)
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    text = f"{value:032x}"
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:]}"


def iso_ms(now: float) -> str:
    """UTC with milliseconds and ``Z``: the rollout lines' ``timestamp``."""
    moment = datetime.fromtimestamp(now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def iso_ns(now: float) -> str:
    """UTC with nine fractional digits and ``Z``: ``session_index.jsonl``'s ``updated_at``."""
    # A float holds microseconds, not nanoseconds: the last three digits are zeros.
    moment = datetime.fromtimestamp(now, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}000Z"


def rollout_name(thread_id: str, now: float) -> tuple[str, str]:
    """(``YYYY/MM/DD`` folder, file name) in LOCAL time, as Codex names a new rollout."""
    local = datetime.fromtimestamp(now)
    return local.strftime("%Y/%m/%d"), f"rollout-{local:%Y-%m-%dT%H-%M-%S}-{thread_id}.jsonl"


def append_line(path: Path, entry: dict[str, Any]) -> None:
    """One complete line in one write, so a reader never sees half of it."""
    data = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def resume_counts(path: Path) -> tuple[int, int]:
    """(complete lines, response items) already in a rollout: where numbering goes on."""
    lines = items = 0
    with path.open("rb") as f:
        for line in f:
            if line.endswith(b"\n"):
                lines += 1
                items += b'"type":"response_item"' in line
    return lines, items


@dataclass(frozen=True)
class OpenTurn:
    """A turn whose opening lines are written: its id and when it started."""

    turn_id: str
    started: float


@dataclass
class Rollout:
    """Writes one thread's rollout file. ``ordinal`` numbers every line, ``history``
    the response items (their ``metadata.history_sequence``)."""

    path: Path
    thread_id: str
    cwd: str
    client: str = "tui"
    ordinal: int = 0
    history: int = 0

    def _line(
        self, now: float, kind: str, payload: dict[str, Any], **extra: dict[str, Any]
    ) -> None:
        entry = {"timestamp": iso_ms(now), "ordinal": self.ordinal, "type": kind}
        append_line(self.path, {**entry, "payload": payload, **extra})
        self.ordinal += 1

    def session_meta(self, now: float) -> None:
        """Line 0: who started the thread, where, with which CLI."""
        originator, source = CLIENTS[self.client]
        self._line(
            now,
            "session_meta",
            {
                "account_scoped": True,
                "session_id": self.thread_id,
                "id": self.thread_id,
                "timestamp": iso_ms(now),
                "cwd": self.cwd,
                "runtime_workspace_roots": [self.cwd],
                "originator": originator,
                "cli_version": CLI_VERSION,
                "source": source,
                "thread_source": "user",
                "model_provider": PROVIDER,
                "base_instructions": {"text": "You are Codex, simulated for Coop's tests."},
                "history_mode": "paginated",
                "context_window": {"window_id": uuid7(now)},
            },
        )

    def turn(self, now: float, prompt: str, answer: str, first: bool) -> None:
        """One complete turn: the prompt, one assistant answer, the turn's bookkeeping."""
        trigger = "exec" if self.client == "exec" else "user"  # the TUI's value is assumed
        turn = self._task_started(now, trigger)
        if first:
            self._opening(now, turn.turn_id)
        self._user_input(now, turn, [text_part(prompt)], None)
        self.finish_turn(now, turn, answer)

    def queue_turn(self, now: float, client_id: str, content: list[dict[str, Any]]) -> OpenTurn:
        """The first lines of a turn the queue started on a resumed thread, up to the
        ``UserMessage`` item carrying ``client_id``; ``finish_turn`` writes the rest."""
        turn = self._task_started(now, "queue")
        self._turn_context(now, turn.turn_id)
        self._user_input(now, turn, content, client_id)
        return turn

    def finish_turn(self, now: float, turn: OpenTurn, answer: str) -> None:
        """The answer and the turn's bookkeeping, ending with ``task_complete``."""
        message_id = f"msg_{secrets.token_hex(16)}"
        agent = {"type": "AgentMessage", "id": message_id}
        self._item(now, turn.turn_id, {**agent, "content": [{"type": "Text", "text": answer}]})
        payload = {"type": "message", "status": "completed", "id": message_id}
        content = [{"type": "output_text", "text": answer, "annotations": []}]
        self._message(
            now,
            turn.turn_id,
            {**payload, "role": "assistant", "content": content},
            {"content_item_kinds": ["unknown"]},
            retained=True,
        )
        self._usage(now, turn.turn_id)
        duration = max(1, int((now - turn.started) * 1000))
        self._event(
            now,
            "task_complete",
            root_turn_id=turn.turn_id,
            turn_id=turn.turn_id,
            last_agent_message=answer,
            started_at=int(turn.started),
            completed_at=int(now),
            duration_ms=duration,
            time_to_first_token_ms=duration,
        )

    def abort_turn(self, now: float, turn: OpenTurn) -> None:
        """End an open turn as interrupted: what a holder closed mid-turn writes."""
        content = [{"type": "input_text", "text": TURN_ABORTED}]
        payload = {"type": "message", "id": f"msg_{uuid7(now)}", "role": "user", "content": content}
        passthrough = {
            "create_time": now,
            "content_item_kinds": ["generic.turn_aborted"],
            "content_item_metadata": [{"provenance": {"type": "harness", "hook": False}}],
        }
        self._message(now, turn.turn_id, payload, passthrough, retained=False)
        self._event(
            now,
            "turn_aborted",
            root_turn_id=turn.turn_id,
            turn_id=turn.turn_id,
            reason="interrupted",
            started_at=int(turn.started),
            completed_at=int(now),
            duration_ms=max(1, int((now - turn.started) * 1000)),
        )

    def _task_started(self, now: float, trigger: str) -> OpenTurn:
        turn_id = uuid7(now)
        self._event(
            now,
            "task_started",
            turn_attribution={
                "turn_id": turn_id,
                "turn_trigger": trigger,
                "parent_turn_id": None,
                "initiating_agent_path": None,
                "root_turn_id": turn_id,
            },
            turn_id=turn_id,
            root_turn_id=turn_id,
            started_at=int(now),
            model_context_window=CONTEXT_WINDOW,
            collaboration_mode_kind="default",
        )
        return OpenTurn(turn_id, now)

    def _user_input(
        self, now: float, turn: OpenTurn, content: list[dict[str, Any]], client_id: str | None
    ) -> None:
        """The user's response item, then its ``UserMessage`` item (with ``client_id``
        when an app-server client named it)."""
        parts = [{"type": "input_text", "text": part["text"]} for part in content]
        passthrough = {
            "create_time": now,
            "content_item_kinds": ["user.text"] * len(parts),
            "content_item_metadata": [{"provenance": {"type": "user"}}] * len(parts),
        }
        payload = {"type": "message", "id": f"msg_{uuid7(now)}", "role": "user", "content": parts}
        self._message(now, turn.turn_id, payload, passthrough, retained=True, mcp=True)
        item: dict[str, Any] = {"type": "UserMessage", "id": uuid7(now)}
        if client_id is not None:
            item["client_id"] = client_id
        self._item(now, turn.turn_id, {**item, "content": content})

    def _item(self, now: float, turn_id: str, item: dict[str, Any]) -> None:
        millis = int(now * 1000)
        self._event(
            now,
            "item_completed",
            thread_id=self.thread_id,
            turn_id=turn_id,
            item=item,
            started_at_ms=millis,
            completed_at_ms=millis,
        )

    def _usage(self, now: float, turn_id: str) -> None:
        """``token_usage_record`` and ``event_msg token_count`` for one model call."""
        self._line(
            now,
            "token_usage_record",
            {
                "thread_id": self.thread_id,
                "turn_id": turn_id,
                "session_id": self.thread_id,
                "root_turn_id": turn_id,
                "response_id": f"resp_{secrets.token_hex(16)}",
                "usage": USAGE,
                "turn_token_usage": USAGE,
                "thread_token_usage": USAGE,
            },
        )
        info = {
            "total_token_usage": USAGE,
            "last_token_usage": USAGE,
            "last_usage_includes_reasoning": False,
            "model_context_window": CONTEXT_WINDOW,
        }
        self._event(now, "token_count", info=info, rate_limits=RATE_LIMITS)

    def _opening(self, now: float, turn_id: str) -> None:
        """The first turn's context lines: instructions, environment, settings."""
        developer = [{"type": "input_text", "text": "<permissions instructions>"}]
        self._context_message(now, turn_id, "developer", developer, mcp=True)
        context = f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n</environment_context>"
        self._context_message(now, turn_id, "user", [{"type": "input_text", "text": context}])
        local = datetime.fromtimestamp(now).astimezone()
        environment = {"cwd": self.cwd, "status": "available", "shell": "bash"}
        state = {
            "model": MODEL,
            "environments": {
                "environments": {"local": environment},
                "current_date": f"{local:%Y-%m-%d}",
                "timezone": local.tzname(),
            },
        }
        self._line(now, "world_state", {"full": True, "state": state})
        self._turn_context(now, turn_id)
        settings = {
            "cwd": self.cwd,
            "approval_policy": APPROVAL_POLICY,
            "sandbox_policy": {"type": "read-only"},
            "model": MODEL,
            "model_provider_id": PROVIDER,
        }
        self._event(
            now, "thread_settings_applied", thread_id=self.thread_id, thread_settings=settings
        )

    def _turn_context(self, now: float, turn_id: str) -> None:
        """The settings a turn runs under, as every turn of 0.171.0 records them."""
        self._line(
            now,
            "turn_context",
            {
                "turn_id": turn_id,
                "root_turn_id": turn_id,
                "disabled_plugin_ids": [],
                "cwd": self.cwd,
                **TURN_SETTINGS,
            },
        )

    def _context_message(
        self, now: float, turn_id: str, role: str, content: list[dict[str, Any]], mcp: bool = False
    ) -> None:
        payload = {"type": "message", "id": f"msg_{uuid7(now)}", "role": role, "content": content}
        self._message(now, turn_id, payload, {}, retained=False, mcp=mcp)

    def _message(
        self,
        now: float,
        turn_id: str,
        payload: dict[str, Any],
        passthrough: dict[str, Any],
        retained: bool,
        mcp: bool = False,
    ) -> None:
        """A ``response_item`` with its ``metadata``; the user's and the assistant's
        messages are "retained" and numbered in ``user_input_order``."""
        self.history += 1
        metadata: dict[str, Any] = {
            "history_sequence": self.history,
            "sampled_through_sequence": self.history - 1,
        }
        if retained:
            metadata["retained_source"] = {
                "id": {"message_id": payload["id"], "turn_id": turn_id, "role": payload["role"]},
                "revision": f"retained_{uuid7(now)}",
                "complete": True,
            }
        metadata["client_authored"] = False
        if retained:
            metadata["user_input_order"] = max(0, self.history - OPENING_ITEMS - 1)
        if mcp:
            metadata["mcp_attribution"] = {"status": "none"}
        metadata["model_search_state"] = "unused"
        passthrough = {"turn_id": turn_id, **passthrough}
        self._line(
            now,
            "response_item",
            {**payload, "internal_chat_message_metadata_passthrough": passthrough},
            metadata=metadata,
        )

    def _event(self, now: float, kind: str, **fields: Any) -> None:
        self._line(now, "event_msg", {"type": kind, **fields})


def text_part(text: str) -> dict[str, Any]:
    """One text part of a user message, as items and the queue store it."""
    return {"type": "text", "text": text, "text_elements": []}
