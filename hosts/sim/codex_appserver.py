"""``codex app-server`` (stdio) as the simulator plays it: the queue door of Codex 0.171.0.

One JSON object a line each way, every answer flushed: ``{"id", "result"}`` or
``{"error": {"code", "message"}, "id"}``; notifications carry no id. Lines that are not a
JSON object with a method are ignored, as the real server ignores them. What it answers:

- ``initialize`` (once; anything else first: "Not initialized"), then the notification
  ``remoteControl/status/changed``; the ``initialized`` notification is accepted;
- ``thread/queue/add``, ``thread/queue/list``, ``thread/queue/delete`` over
  ``queue_1.sqlite`` (experimental: refused without ``capabilities.experimentalApi``);
- ``thread/resume``: "already has an active writer" while the thread's writer lock is
  held, otherwise a refusal (the simulator runs no turns); ``turn/start``: "thread not
  found", as for any thread this connection has not loaded;
- an unknown method: the real refusal, listing every real method. With
  ``queue_api=False`` (a Codex without the queue door) the ``thread/queue/*`` methods
  are unknown too.

Every error text is the real server's, measured in tests/codex/OBSERVED.md.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from hosts.sim import codex_queue
from hosts.sim.codex import find_rollout
from hosts.sim.codex_lock import is_held, lock_path
from hosts.sim.codex_methods import METHODS, QUEUE_METHODS, unknown_method
from hosts.sim.codex_rollout import CLI_VERSION

INVALID_REQUEST = -32600
INTERNAL_ERROR = -32603
PART_TYPES = ("text", "image", "localImage", "audio", "localAudio", "skill", "mention")
UUID_GROUPS = (8, 4, 4, 4, 12)
HEX = frozenset("0123456789abcdefABCDEF")

Params = dict[str, Any]


class RpcError(Exception):
    """An error answer: its JSON-RPC code and message."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def invalid(message: str) -> RpcError:
    return RpcError(INVALID_REQUEST, message)


def parse_uuid(text: str) -> str:
    """``text`` as a lowercase hyphenated UUID, read as Codex (Rust's ``uuid`` crate)
    reads one: hyphenated, 32 digits, braced or ``urn:uuid:``. Raises ValueError in
    that crate's words."""
    body = text[9:] if text[:9].lower() == "urn:uuid:" else text
    if len(body) == 38 and body[0] == "{" and body[-1] == "}":
        body = body[1:-1]
    for index, char in enumerate(body):
        if char not in HEX and char != "-":
            raise ValueError(
                "invalid character: expected an optional prefix of `urn:uuid:` followed by"
                f" [0-9a-fA-F-], found `{char}` at {index + 1}"
            )
    groups = body.split("-")
    if len(groups) == 1 and len(body) != 32:
        raise ValueError(f"invalid length: expected length 32 for simple format, found {len(body)}")
    if len(groups) not in (1, 5):
        raise ValueError(f"invalid group count: expected 5, found {len(groups)}")
    for index, (group, wanted) in enumerate(zip(groups, UUID_GROUPS, strict=False)):
        if len(groups) == len(UUID_GROUPS) and len(group) != wanted:
            raise ValueError(
                f"invalid group length in group {index}: expected {wanted}, found {len(group)}"
            )
    digits = "".join(groups).lower()
    return f"{digits[:8]}-{digits[8:12]}-{digits[12:16]}-{digits[16:20]}-{digits[20:]}"


def archived_message(thread_id: str) -> str:
    return (
        f"session {thread_id} is archived. Run `codex unarchive {thread_id}` to unarchive it first."
    )


def queue_thread(home: Path, raw_id: str) -> str:
    """The thread a queue request names, when it may queue: a known, active thread."""
    thread_id = _thread_id(raw_id, "thread")
    path = find_rollout(home, thread_id)
    if path is None:
        raise RpcError(
            INTERNAL_ERROR,
            "failed to read thread: invalid thread-store request: no rollout found for"
            f" thread id {thread_id}",
        )
    if path.parent.name == "archived_sessions":
        raise invalid(archived_message(thread_id))
    return thread_id


def queue_add(home: Path, params: Params) -> dict[str, Any]:
    """``thread/queue/add``: the new item as ``queuedSubmission``."""
    raw_id = _string(params, "threadId")
    client_id = _string(params, "clientUserMessageId")
    content = _content(params)
    thread_id = queue_thread(home, raw_id)
    if not content:
        raise invalid("only user input can be added to the user-message queue")
    with closing(codex_queue.connect(home)) as conn:
        item = codex_queue.add(conn, thread_id, client_id, content)
    return {"queuedSubmission": item.submission()}


def queue_list(home: Path, params: Params) -> dict[str, Any]:
    thread_id = queue_thread(home, _string(params, "threadId"))
    with closing(codex_queue.connect(home)) as conn:
        items = codex_queue.list_items(conn, thread_id)
    return {"data": [item.submission() for item in items], "nextCursor": None}


def queue_delete(home: Path, params: Params) -> dict[str, Any]:
    raw_id = _string(params, "threadId")
    item_id = _string(params, "queuedSubmissionId")
    thread_id = queue_thread(home, raw_id)
    with closing(codex_queue.connect(home)) as conn:
        return {"deleted": codex_queue.delete(conn, thread_id, item_id)}


def thread_resume(home: Path, params: Params) -> dict[str, Any]:
    """Refused either way: held by another writer, or not simulated."""
    thread_id = _thread_id(_string(params, "threadId"), "session")
    path = find_rollout(home, thread_id)
    if path is None:
        raise invalid(f"no rollout found for thread id {thread_id}")
    if path.parent.name == "archived_sessions":
        raise invalid(archived_message(thread_id))
    if is_held(lock_path(home, thread_id)):
        raise invalid(f"thread {thread_id} already has an active writer")
    raise invalid(f"codex-sim runs no turns: it cannot resume thread {thread_id}")


def turn_start(home: Path, params: Params) -> dict[str, Any]:
    """Refused: a turn needs a thread this connection resumed, and none can be."""
    raw_id = _string(params, "threadId")
    if "input" not in params:
        raise invalid("Invalid request: missing field `input`")
    raise invalid(f"thread not found: {_thread_id(raw_id, 'thread')}")


HANDLERS: dict[str, Callable[[Path, Params], dict[str, Any]]] = {
    "thread/queue/add": queue_add,
    "thread/queue/list": queue_list,
    "thread/queue/delete": queue_delete,
    "thread/resume": thread_resume,
    "turn/start": turn_start,
}


@dataclass
class Session:
    """One client's connection: whether it initialized, and with which capabilities."""

    home: Path
    queue_api: bool = True
    initialized: bool = False
    experimental: bool = False

    def receive(self, line: bytes) -> list[dict[str, Any]]:
        """The lines to write back for one line read (none for a notification)."""
        try:
            message = json.loads(line)
        except ValueError:
            return []
        if not isinstance(message, dict) or not isinstance(message.get("method"), str):
            return []
        if "id" not in message:
            return []  # a notification: `initialized` needs nothing, others are ignored
        try:
            result = self._call(message["method"], message)
        except RpcError as error:
            return [{"error": {"code": error.code, "message": error.message}, "id": message["id"]}]
        except sqlite3.Error as error:
            return [{"error": {"code": INTERNAL_ERROR, "message": str(error)}, "id": message["id"]}]
        answer = {"id": message["id"], "result": result}
        if message["method"] == "initialize":
            return [answer, self._status_notification()]
        return [answer]

    def _call(self, method: str, message: dict[str, Any]) -> dict[str, Any]:
        if method not in METHODS or (not self.queue_api and method in QUEUE_METHODS):
            raise invalid(unknown_method(method, self.queue_api))
        if method == "initialize":
            return self._initialize(_params(message))
        if not self.initialized:
            raise invalid("Not initialized")
        handler = HANDLERS.get(method)
        if handler is None:
            raise RpcError(INTERNAL_ERROR, f"codex-sim does not simulate `{method}`")
        if method in QUEUE_METHODS and not self.experimental:
            raise invalid(f"{method} requires experimentalApi capability")
        return handler(self.home, _params(message))

    def _initialize(self, params: Params) -> dict[str, Any]:
        if self.initialized:
            raise invalid("Already initialized")
        client = params.get("clientInfo")
        if not isinstance(client, dict):
            raise invalid("Invalid request: missing field `clientInfo`")
        name, version = _string(client, "name"), _string(client, "version")
        capabilities = params.get("capabilities")
        self.experimental = isinstance(capabilities, dict) and (
            capabilities.get("experimentalApi") is True
        )
        self.initialized = True
        if self.queue_api:
            codex_queue.connect(self.home).close()  # the real server opens it from the start
        system = f"{platform.system()} {platform.release()}; {platform.machine()}"
        return {
            "userAgent": f"{name}/{CLI_VERSION} ({system}) unknown ({name}; {version})",
            "codexHome": str(self.home),
            "platformFamily": "unix" if os.name == "posix" else "windows",
            "platformOs": {"darwin": "macos", "win32": "windows"}.get(sys.platform, sys.platform),
        }

    def _status_notification(self) -> dict[str, Any]:
        """What the real server says unasked right after ``initialize``."""
        try:
            installation = (self.home / "installation_id").read_text().strip()
        except OSError:
            installation = str(uuid.uuid4())
        params = {
            "status": "disabled",
            "serverName": socket.gethostname(),
            "installationId": installation,
            "environmentId": None,
        }
        stamp = int(time.time() * 1000)
        return {"method": "remoteControl/status/changed", "params": params, "emittedAtMs": stamp}


def serve(home: Path, lines: Iterable[bytes], out: TextIO, queue_api: bool) -> int:
    """Answer every request line until the input ends; the exit status (0)."""
    session = Session(home, queue_api)
    for line in lines:
        for reply in session.receive(line):
            out.write(json.dumps(reply, separators=(",", ":")) + "\n")
            out.flush()
    return 0


def _thread_id(raw: str, noun: str) -> str:
    try:
        return parse_uuid(raw)
    except ValueError as exc:
        raise invalid(f"invalid {noun} id: {exc}") from None


def _params(message: dict[str, Any]) -> Params:
    params = message.get("params")
    if params is None:
        raise invalid("Invalid request: missing field `params`")
    if not isinstance(params, dict):
        raise invalid(f"Invalid request: invalid type: {_kind(params)}, expected a map")
    return params


def _string(params: Params, name: str) -> str:
    if name not in params:
        raise invalid(f"Invalid request: missing field `{name}`")
    value = params[name]
    if not isinstance(value, str):
        raise invalid(f"Invalid request: invalid type: {_kind(value)}, expected a string")
    return value


def _content(params: Params) -> list[dict[str, Any]]:
    """The ``input`` parts as the queue stores them; only text parts are simulated."""
    if "input" not in params:
        raise invalid("Invalid request: missing field `input`")
    parts = params["input"]
    if not isinstance(parts, list):
        raise invalid(f"Invalid request: invalid type: {_kind(parts)}, expected a sequence")
    content = []
    for part in parts:
        if not isinstance(part, dict) or "type" not in part:
            raise invalid("Invalid request: missing field `type`")
        if part["type"] not in PART_TYPES:
            expected = ", ".join(f"`{name}`" for name in PART_TYPES)
            raise invalid(
                f"Invalid request: unknown variant `{part['type']}`, expected one of {expected}"
            )
        if part["type"] != "text":
            raise invalid(f"codex-sim queues text input only, not `{part['type']}`")
        _string(part, "text")
        content.append(codex_queue.part_from_api(part))
    return content


def _kind(value: object) -> str:
    """A JSON value as serde names it in "invalid type" errors."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f'string "{value}"'
    return "sequence" if isinstance(value, list) else "map"
