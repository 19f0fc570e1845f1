"""The lines of a simulated Codex rollout, in the shape the real Codex CLI 0.171.0 writes.

Every line is ``{"timestamp", "ordinal", "type", "payload"}`` (compact JSON, one write
each). Line 0 is ``session_meta``; a turn is ``event_msg task_started``, on the first
turn the developer and environment messages, ``world_state``, ``turn_context`` and
``event_msg thread_settings_applied``, then the user's ``response_item`` message,
``event_msg item_completed`` for it and for the answer, the assistant ``response_item``,
``token_usage_record``, ``event_msg token_count`` and ``event_msg task_complete``. Also
here: UUIDv7 ids and a zstd frame writer for compressed rollouts (stored blocks: what
``zstd -d`` reads, no compression library needed).
"""

from __future__ import annotations

import json
import os
import secrets
import struct
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CLI_VERSION = "0.171.0"
MODEL = "codex-sim"
PROVIDER = "openai"
CONTEXT_WINDOW = 258400
# Which program started the thread: (originator, source), as session_meta records them.
CLIENTS = {
    "tui": ("codex-tui", "cli"),
    "exec": ("codex_exec", "exec"),
    "desktop": ("Codex Desktop", "vscode"),
}
ZSTD_MAGIC = 0xFD2FB528
ZSTD_BLOCK = 128 * 1024  # the largest block a frame may hold


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
        turn_id = uuid7(now)
        trigger = "exec" if self.client == "exec" else "user"  # the TUI's value is assumed
        started = int(now)
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
            started_at=started,
            model_context_window=CONTEXT_WINDOW,
            collaboration_mode_kind="default",
        )
        if first:
            self._opening(now, turn_id)
        self._message(now, turn_id, "user", "input_text", prompt)
        for kind, text_type, text in (
            ("UserMessage", "text", prompt),
            ("AgentMessage", "Text", answer),
        ):
            item = {"type": kind, "id": uuid7(now), "content": [{"type": text_type, "text": text}]}
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
        self._message(now, turn_id, "assistant", "output_text", answer)
        usage = {
            "input_tokens": 10,
            "cached_input_tokens": 0,
            "cache_write_input_tokens": 0,
            "output_tokens": 2,
            "reasoning_output_tokens": 0,
            "total_tokens": 12,
        }
        self._line(
            now,
            "token_usage_record",
            {
                "thread_id": self.thread_id,
                "turn_id": turn_id,
                "session_id": self.thread_id,
                "root_turn_id": turn_id,
                "response_id": f"resp_{secrets.token_hex(16)}",
                "usage": usage,
                "turn_token_usage": usage,
                "thread_token_usage": usage,
            },
        )
        info = {"total_token_usage": usage, "last_token_usage": usage}
        self._event(now, "token_count", info=info, rate_limits=None)
        self._event(
            now,
            "task_complete",
            root_turn_id=turn_id,
            turn_id=turn_id,
            last_agent_message=answer,
            started_at=started,
            completed_at=int(now),
            duration_ms=1,
            time_to_first_token_ms=1,
        )

    def _opening(self, now: float, turn_id: str) -> None:
        """The first turn's context lines: instructions, environment, settings."""
        self._message(now, turn_id, "developer", "input_text", "<permissions instructions>")
        context = f"<environment_context>\n  <cwd>{self.cwd}</cwd>\n</environment_context>"
        self._message(now, turn_id, "user", "input_text", context)
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
        settings = {
            "cwd": self.cwd,
            "approval_policy": "on-request",
            "sandbox_policy": {"type": "read-only"},
            "model": MODEL,
        }
        self._line(
            now,
            "turn_context",
            {"turn_id": turn_id, "root_turn_id": turn_id, **settings, "summary": "none"},
        )
        applied = {**settings, "model_provider_id": PROVIDER}
        self._event(
            now, "thread_settings_applied", thread_id=self.thread_id, thread_settings=applied
        )

    def _message(self, now: float, turn_id: str, role: str, text_type: str, text: str) -> None:
        self.history += 1
        metadata = {
            "history_sequence": self.history,
            "sampled_through_sequence": self.history - 1,
            "client_authored": False,
            "model_search_state": "unused",
        }
        self._line(
            now,
            "response_item",
            {
                "type": "message",
                "id": f"msg_{uuid7(now)}",
                "role": role,
                "content": [{"type": text_type, "text": text}],
                "internal_chat_message_metadata_passthrough": {"turn_id": turn_id},
            },
            metadata=metadata,
        )

    def _event(self, now: float, kind: str, **fields: Any) -> None:
        self._line(now, "event_msg", {"type": kind, **fields})


def zstd_frame(data: bytes) -> bytes:
    """A single zstd frame holding ``data`` in raw (stored) blocks, with its size."""
    # Frame header: single segment, an 8-byte content size, no checksum, no dictionary.
    out = bytearray(struct.pack("<IB", ZSTD_MAGIC, 0xE0) + struct.pack("<Q", len(data)))
    offsets = list(range(0, len(data), ZSTD_BLOCK)) or [0]
    for i, start in enumerate(offsets):
        block = data[start : start + ZSTD_BLOCK]
        last = 1 if i == len(offsets) - 1 else 0
        header = last | (0 << 1) | (len(block) << 3)  # block type 0: raw
        out += header.to_bytes(3, "little") + block
    return bytes(out)
