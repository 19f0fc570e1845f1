"""The chat's transcript: ``<config>/projects/<escaped cwd>/<sessionId>.jsonl``.

Every entry is one complete JSON line appended in a single write. Conversation entries
(user, assistant, attachment, system) carry the keys Claude Code 2.1.328 writes on them
and chain through ``parentUuid``; ``queue-operation``, ``mode`` and ``permission-mode``
records stand outside the chain, as in the real transcripts. The file does not exist
until the first entry, and starts with the ``mode`` and ``permission-mode`` records.
The real chat's other bookkeeping records (api-request*, tools-used, atis-latch,
last-prompt, context attachments, cost-state) are not written: Coop reads none of them.
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
        self.common = {
            "userType": "external",
            "entrypoint": "cli",
            "cwd": cwd,
            "sessionId": session_id,
            "version": VERSION,
            "gitBranch": git_branch,
        }
        self.last_uuid: str | None = None
        self.prompt_id: str | None = None  # the running turn's prompt
        self._answered = False  # the first assistant entry carries a classifier request id

    def _append(self, entry: dict[str, Any]) -> None:
        if not self.path.exists():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._write({"type": "mode", "mode": "normal", "sessionId": self.session_id})
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

    def chained(
        self,
        body: dict[str, Any],
        entry_id: str | None = None,
        at: str | None = None,
        tail: dict[str, Any] | None = None,
    ) -> str:
        """Append a conversation entry after the previous one; returns its uuid. ``tail``
        keys follow the uuid and timestamp, as the real entries order them."""
        entry_id = entry_id or new_id()
        entry = {"parentUuid": self.last_uuid, "isSidechain": False, **body}
        entry["uuid"] = entry_id
        entry["timestamp"] = at or timestamp()
        entry.update(tail or {})
        entry.update(self.common)
        self._append(entry)
        self.last_uuid = entry_id
        return entry_id

    def queue_operation(self, operation: str, **extra: Any) -> None:
        """A ``queue-operation`` record (enqueue, dequeue, remove)."""
        entry = {"type": "queue-operation", "operation": operation, "timestamp": timestamp()}
        self._append({**entry, "sessionId": self.session_id, **extra})

    def _prompt(
        self, content: str, position: dict[str, int], origin: dict[str, Any], entry_id: str | None
    ) -> str:
        peer = origin.get("kind") == "peer"
        body: dict[str, Any] = {
            "promptId": self.prompt_id,
            "type": "user",
            "message": {"role": "user", "content": content},
        }
        if peer:
            body["isMeta"] = True
        tail: dict[str, Any] = {"permissionMode": self.mode, "origin": origin}
        if peer:
            tail |= {"promptSource": "system", "queueSkipSlashCommands": True}
        else:
            tail["promptSource"] = "typed"
        tail |= {"turnOrigin": "peer" if peer else "human", "turnPosition": position}
        if peer:
            tail["queueSkipAttachments"] = True
        return self.chained(body, entry_id, tail=tail)

    def typed_prompt(self, text: str, position: dict[str, int]) -> str:
        """A prompt the human typed: the start of a turn."""
        return self._prompt(text, position, {"kind": "human"}, None)

    def peer_prompt(
        self, content: str, origin: dict[str, Any], entry_id: str, position: dict[str, int]
    ) -> str:
        """Shape 1: a peer message that starts a turn (or joins the batch starting one)."""
        return self._prompt(content, position, origin, entry_id)

    def absorbed(
        self,
        prompt: str,
        rendered: str,
        origin: dict[str, Any],
        command_uuid: str,
        delivery_id: str,
        enqueued_at: str,
    ) -> str:
        """Shape 2: a peer message absorbed by a running turn, as a queued_command. Only
        the attachment carries ``isMeta``; both timestamps are the enqueue time."""
        attachment = {
            "type": "queued_command",
            "prompt": prompt,
            "source_uuid": command_uuid,
            "delivery_id": delivery_id,
            "commandMode": "prompt",
            "origin": origin,
            "timestamp": enqueued_at,
            "isMeta": True,
        }
        tail = {
            "rendered": [{"content": rendered}],
            "renderedRole": "system",
            "session_id": self.session_id,
        }
        body = {"attachment": attachment, "type": "attachment"}
        return self.chained(body, at=enqueued_at, tail=tail)

    def assistant(self, content: list[dict[str, Any]]) -> str:
        """An assistant message (text or tool_use blocks); ``stop_reason`` stays null."""
        message = {
            "id": "msg_" + uuid.uuid4().hex[:24],
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
            "stop_details": None,
        }
        body: dict[str, Any] = {"message": message}
        if any(block.get("type") == "tool_use" for block in content):
            body["toolInputStreamMs"] = 20
        if not self._answered:
            body["serverClassifierRequest"] = new_id()
            self._answered = True
        body |= {
            "apiBlockIndex": 0,
            "requestId": "req_" + uuid.uuid4().hex[:24],
            "requestRef": new_id(),
            "requestedModel": MODEL,
            "promptCacheRequested": "5m",
            "type": "assistant",
        }
        tail = {
            "effort": "medium",
            "perTurnEffort": "medium",
            "madeBy": "model",
            "session_id": self.session_id,
        }
        return self.chained(body, tail=tail)

    def tool_result(self, tool_use_id: str, output: str, tool_use: str) -> str:
        """The user-side entry that returns a tool's output (of entry ``tool_use``)."""
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": output}
        body = {
            "promptId": self.prompt_id,
            "type": "user",
            "message": {"role": "user", "content": [{**block, "is_error": False}]},
        }
        tail = {
            "toolUseResult": {
                "stdout": output,
                "stderr": "",
                "interrupted": False,
                "isImage": False,
                "noOutputExpected": False,
            },
            "sandboxed": False,
            "sourceToolAssistantUUID": tool_use,
            "permissionDecision": {
                "decision": "accept",
                "source": "config",
                "reasonType": "subcommandResults",
            },
            "session_id": self.session_id,
        }
        return self.chained(body, tail=tail)

    def system(self, subtype: str, **fields: Any) -> str:
        """A ``type: system`` entry: turn_duration (durationMs, messageCount) or an
        informational notice (content, level)."""
        level = fields.pop("level", None)
        body = {"type": "system", "subtype": subtype, **fields, "isMeta": False}
        return self.chained(body, tail={"level": level} if level else None)

    def cleared(self, session_id: str) -> Transcript:
        """The human typed /clear: this file ends with a `cost-state` line, and the new
        conversation's file is written at once with the /clear itself (a caveat, the
        command, its local_command result), naming nothing of this one."""
        self._write({"type": "cost-state", "sessionId": self.session_id, "timestamp": timestamp()})
        cwd, branch = str(self.common["cwd"]), str(self.common["gitBranch"])
        folder = self.path.parent.parent.parent
        after = Transcript(folder, session_id, cwd, branch, self.mode)
        caveat = (
            "<local-command-caveat>The command below was run directly in Claude Code, not"
            " sent to you: do not respond to it.</local-command-caveat>"
        )
        command = (
            "<command-name>/clear</command-name>\n            <command-message>clear"
            "</command-message>\n            <command-args></command-args>"
        )
        after.chained(
            {"type": "user", "message": {"role": "user", "content": caveat}, "isMeta": True}
        )
        after.chained({"type": "user", "message": {"role": "user", "content": command}})
        after.system(
            "local_command",
            content="<local-command-stdout></local-command-stdout>",
            commandRun={"command": "clear", "args": ""},
        )
        return after

    def notice(self, content: str) -> str:
        """A warning shown in the chat (held, released, dropped messages)."""
        return self.system("informational", content=content, level="warning")
