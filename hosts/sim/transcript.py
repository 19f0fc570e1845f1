"""The chat's transcript: ``<config>/projects/<escaped cwd>/<sessionId>.jsonl``.

Every entry is one complete JSON line appended in a single write. Conversation entries
(user, assistant, attachment, system) carry the usual envelope keys and chain through
``parentUuid``; ``queue-operation`` and ``permission-mode`` records stand outside the
chain, as in the real transcripts. The file does not exist until the first entry.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hosts.sim.registry import VERSION

_UNSAFE = re.compile(r"[^a-zA-Z0-9]")
MAX_PROJECT_NAME = 200
MODEL = "claude-sim"


def _base36(number: int) -> str:
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while True:
        number, rest = divmod(number, 36)
        out = digits[rest] + out
        if not number:
            return out


def _path_hash(text: str) -> int:
    """Java-style string hash over UTF-16 code units, wrapped to a signed 32-bit int."""
    value = 0
    units = text.encode("utf-16-le")
    for i in range(0, len(units), 2):
        value = (value * 31 + int.from_bytes(units[i : i + 2], "little")) & 0xFFFFFFFF
    return value - (1 << 32) if value & 0x80000000 else value


def project_folder_name(cwd: str) -> str:
    """The projects folder name for ``cwd``: every character outside [a-zA-Z0-9] becomes
    '-'; a name over 200 characters is cut to 200 and suffixed with '-' and a hash of the
    original path (base 36), so long paths with a common prefix do not collide."""
    name = _UNSAFE.sub("-", cwd)
    if len(name) <= MAX_PROJECT_NAME:
        return name
    return f"{name[:MAX_PROJECT_NAME]}-{_base36(abs(_path_hash(cwd)))}"


def timestamp() -> str:
    """Now as ISO-8601 UTC with milliseconds and a Z."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def new_id() -> str:
    """A receiver-minted id (UUID4)."""
    return str(uuid.uuid4())


class Transcript:
    """Appends entries to one session's transcript, keeping the ``parentUuid`` chain."""

    def __init__(
        self, config_dir: Path, session_id: str, cwd: str, git_branch: str, mode: str
    ) -> None:
        self.path = config_dir / "projects" / project_folder_name(cwd) / f"{session_id}.jsonl"
        self.session_id = session_id
        self.mode = mode
        self.envelope = {
            "isSidechain": False,
            "userType": "external",
            "cwd": cwd,
            "sessionId": session_id,
            "version": VERSION,
            "gitBranch": git_branch,
            "entrypoint": "cli",
        }
        self.last_uuid: str | None = None

    def _append(self, entry: dict[str, Any]) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            first = {"type": "permission-mode", "permissionMode": self.mode}
            self._write({**first, "sessionId": self.session_id})
        self._write(entry)

    def _write(self, entry: dict[str, Any]) -> None:
        line = json.dumps(entry, separators=(",", ":"), ensure_ascii=False) + "\n"
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # One write of the whole line: O_APPEND makes it land after any earlier one.
            os.write(fd, line.encode())
        finally:
            os.close(fd)

    def chained(self, body: dict[str, Any], entry_id: str | None = None) -> str:
        """Append a conversation entry after the previous one; returns its uuid."""
        entry_id = entry_id or new_id()
        entry = {**self.envelope, "parentUuid": self.last_uuid, **body}
        entry["uuid"] = entry_id
        entry["timestamp"] = timestamp()
        self._append(entry)
        self.last_uuid = entry_id
        return entry_id

    def queue_operation(self, operation: str, **extra: Any) -> None:
        """A ``queue-operation`` record (enqueue, dequeue, remove)."""
        entry = {"type": "queue-operation", "operation": operation, "timestamp": timestamp()}
        self._append({**entry, "sessionId": self.session_id, **extra})

    def typed_prompt(self, text: str) -> str:
        """A prompt the human typed: the start of a turn."""
        return self.chained(
            {
                "type": "user",
                "permissionMode": self.mode,
                "promptSource": "typed",
                "origin": {"kind": "human"},
                "message": {"role": "user", "content": text},
            }
        )

    def peer_prompt(self, content: str, origin: dict[str, Any], entry_id: str) -> str:
        """Shape 1: a peer message that starts a new turn."""
        return self.chained(
            {
                "type": "user",
                "isMeta": True,
                "permissionMode": self.mode,
                "promptSource": "system",
                "turnOrigin": "peer",
                "origin": origin,
                "message": {"role": "user", "content": content},
            },
            entry_id,
        )

    def absorbed(self, content: str, origin: dict[str, Any], command_uuid: str) -> str:
        """Shape 2: a peer message absorbed by a running turn, as a queued_command."""
        attachment = {
            "type": "queued_command",
            "prompt": content,
            "source_uuid": command_uuid,
            "origin": origin,
            "isMeta": True,
            "commandMode": "prompt",
            "timestamp": timestamp(),
        }
        return self.chained({"type": "attachment", "isMeta": True, "attachment": attachment})

    def assistant(self, content: list[dict[str, Any]]) -> str:
        """An assistant message (text or tool_use blocks); ``stop_reason`` stays null."""
        message = {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": None,
        }
        return self.chained(
            {"type": "assistant", "requestId": "req_" + uuid.uuid4().hex[:24], "message": message}
        )

    def tool_result(self, tool_use_id: str, output: str) -> str:
        """The user-side entry that returns a tool's output to the model."""
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": output}
        return self.chained(
            {"type": "user", "message": {"role": "user", "content": [{**block, "is_error": False}]}}
        )

    def system(self, subtype: str, **fields: Any) -> str:
        """A ``type: system`` entry (informational notice, turn_duration, ...)."""
        return self.chained({"type": "system", "subtype": subtype, "isMeta": False, **fields})
