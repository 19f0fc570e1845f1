"""The Codex door's half on a Mac (DESIGN.md 5.10): Codex's own queue, and its records.

- `AppServer` drives this Mac's `codex app-server` over stdio (newline-delimited
  JSON-RPC, `experimentalApi`) for the only two requests Coop makes of it:
  `thread/queue/add` with the outbox id as `clientUserMessageId`, and
  `thread/queue/delete`. Never `thread/resume`, `turn/start` or `exec resume`: they take
  the thread's writer lock and fail (or, for `exec resume`, make a new thread) while the
  user has it open.
- `queue_cli` is the fallback where the queue API is missing: `codex queue --thread ID
  --message TEXT`, argv only, with the envelope's marker in the text (no client id).
- `queued` reads `queue_1.sqlite` read-only: which envelopes still wait in the queue.
- `position` says where the thread's rollout stands, and whether the thread is open now
  (some process holds `thread-writer-locks/<id>.lock`).

Standard library only, Python 3.9 or newer: the ssh helper runs this on remote Macs.
"""

from __future__ import annotations

import json
import os
import select
import sqlite3
import subprocess
import time
from pathlib import Path

from hosts.mac.codex_records import is_thread_id

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from hosts.mac.platforms import Platform

START_TIMEOUT = 20.0  # seconds for `codex app-server` to answer `initialize`
ANSWER_TIMEOUT = 15.0  # seconds for one queue request's answer
QUEUE_DB = "queue_1.sqlite"
LOCKS = "thread-writer-locks"
# What a Codex without the queue API answers `thread/queue/add` (measured on 0.171.0 for
# a method it lacks, and for an experimental one without the capability); the door then
# falls back to `codex queue`. JSON-RPC's own "method not found" too.
NO_SUCH_METHOD = -32601
INVALID_REQUEST = -32600
NO_QUEUE_API = ("Invalid request: unknown variant `thread/queue/add`", "requires experimentalApi")
MARKER = "coop-envelope:"  # what `codex queue` messages carry instead of a client id


class AppServerGone(Exception):
    """`codex app-server` could not be started, died, or did not answer in time."""


class CodexRefused(Exception):
    """`codex app-server` answered a request with an error."""

    def __init__(self, code: object, message: str) -> None:
        super().__init__(message)
        self.code = code

    @property
    def no_queue_api(self) -> bool:
        """Whether this Codex lacks the queue API, rather than refusing this message."""
        said = str(self)
        if self.code == NO_SUCH_METHOD:
            return True
        return self.code == INVALID_REQUEST and any(sign in said for sign in NO_QUEUE_API)


def marker(outbox_id: str) -> str:
    """The line `codex queue` messages end with: the envelope's id, as its receipt."""
    return f"[{MARKER}{outbox_id}]"


class AppServer:
    """One `codex app-server` child for one Codex home, asked one request at a time."""

    def __init__(self, executable: str, codex_home: str) -> None:
        self.executable = executable
        self.codex_home = codex_home
        self.last_used = time.monotonic()
        self._buffer = b""
        self._next_id = 0
        env = {**os.environ, "CODEX_HOME": codex_home}
        try:
            self.proc = subprocess.Popen(
                [executable, "app-server"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=env,
                cwd=codex_home if os.path.isdir(codex_home) else None,
            )
        except OSError as error:
            raise AppServerGone(f"cannot start {executable} app-server: {error}") from None
        try:
            self.request(
                "initialize",
                {
                    "clientInfo": {"name": "coop", "title": "Coop", "version": "2"},
                    "capabilities": {"experimentalApi": True},
                },
                START_TIMEOUT,
            )
            self._send({"method": "initialized"})
        except (AppServerGone, CodexRefused) as error:
            self.close()
            raise AppServerGone(f"{executable} app-server did not start: {error}") from None

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(message).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as error:
            raise AppServerGone(f"app-server's stdin: {error}") from None

    def _line(self, deadline: float) -> bytes:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AppServerGone(f"no answer in {ANSWER_TIMEOUT:g} s")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            data = os.read(fd, 1 << 16)
            if not data:
                raise AppServerGone(f"app-server exited ({self.proc.poll()})")
            self._buffer += data
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def request(self, method: str, params: dict[str, Any], timeout: float = ANSWER_TIMEOUT) -> Any:
        """The result of one request. CodexRefused for an error answer; AppServerGone
        when none came (the request may have been carried out)."""
        self._next_id += 1
        asked = self._next_id
        self.last_used = time.monotonic()
        self._send({"id": asked, "method": method, "params": params})
        deadline = time.monotonic() + timeout
        while True:
            try:
                message = json.loads(self._line(deadline))
            except ValueError:
                continue  # not a protocol line
            if not isinstance(message, dict):
                continue
            if "method" in message:
                if "id" in message:  # the server asks something of Coop: Coop answers nothing
                    refusal = {"code": NO_SUCH_METHOD, "message": "Coop answers no requests"}
                    self._send({"id": message["id"], "error": refusal})
                continue
            if message.get("id") != asked:
                continue
            error = message.get("error")
            if isinstance(error, dict):
                raise CodexRefused(error.get("code"), str(error.get("message") or error))
            return message.get("result")

    def close(self) -> None:
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def add(app: AppServer, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
    """`thread/queue/add` with the envelope's id as the client id: the send's transport
    answer (`ok`, `written`, `queued_id`, `stage`, `error`, `via`)."""
    params = {
        "threadId": thread_id,
        "clientUserMessageId": client_id,
        "input": [{"type": "text", "text": text, "text_elements": []}],
    }
    try:
        result = app.request("thread/queue/add", params)
    except AppServerGone as error:
        # The request left: Codex may have queued it. Never infer unsent.
        return {"ok": False, "written": True, "stage": "answer", "error": str(error)}
    submission = (result or {}).get("queuedSubmission") if isinstance(result, dict) else None
    queued_id = submission.get("id") if isinstance(submission, dict) else None
    if not isinstance(queued_id, str):
        return {"ok": False, "written": True, "stage": "answer", "error": f"odd answer {result!r}"}
    return {"ok": True, "written": True, "queued_id": queued_id, "via": "app-server"}


def delete(app: AppServer, thread_id: str, queued_id: str) -> dict[str, Any]:
    """`thread/queue/delete`: `{"deleted": true}` only while the item was still queued."""
    params = {"threadId": thread_id, "queuedSubmissionId": queued_id}
    result = app.request("thread/queue/delete", params)
    if not isinstance(result, dict) or not isinstance(result.get("deleted"), bool):
        raise CodexRefused(None, f"odd answer to thread/queue/delete: {result!r}")
    return {"deleted": result["deleted"]}


def queue_cli(executable: str, codex_home: str, thread_id: str, text: str) -> dict[str, Any]:
    """The fallback send: `codex queue --thread ID --message TEXT` (argv, no shell)."""
    argv = [executable, "queue", "--thread", thread_id, "--message", text]
    env = {**os.environ, "CODEX_HOME": codex_home}
    failed = {"ok": False, "via": "codex queue"}
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            env=env,
            timeout=ANSWER_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        late = f"codex queue did not finish in {ANSWER_TIMEOUT:g} s"
        return {**failed, "written": True, "stage": "answer", "error": late}
    except OSError as error:
        return {**failed, "written": False, "stage": "start", "error": f"cannot run: {error}"}
    if done.returncode != 0:
        said = done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}"
        refused = "Codex refused: " + said.splitlines()[0][:300]
        return {**failed, "written": False, "stage": "add", "error": refused}
    words = done.stdout.split()
    queued_id = words[2] if len(words) > 2 and words[:2] == ["Queued", "message"] else None
    return {"ok": True, "written": True, "queued_id": queued_id, "via": "codex queue"}


def queued(codex_home: str, thread_id: str) -> dict[str, list[str]]:
    """Client id -> the queue row ids still waiting for this thread, read-only in place
    (WAL honoured). No queue database: nothing waits."""
    path = Path(codex_home) / QUEUE_DB
    if not path.exists():
        return {}
    conn = sqlite3.connect(path.absolute().as_uri() + "?mode=ro", uri=True, timeout=2.0)
    try:
        rows = conn.execute(
            "SELECT id, payload_json FROM queued_items WHERE thread_id = ? ORDER BY queue_order",
            (thread_id,),
        ).fetchall()
    except sqlite3.Error as error:
        if "no such table" in str(error):
            return {}
        raise OSError(f"{path}: {error}") from None
    finally:
        conn.close()
    waiting: dict[str, list[str]] = {}
    for row_id, payload in rows:
        waiting.setdefault(_client_id(payload), []).append(str(row_id))
    return waiting


def _client_id(payload: object) -> str:
    """The client id a queue row carries (`UserInput.client_id`), or "" for none."""
    try:
        value = json.loads(str(payload)).get("UserInput", {}).get("client_id")
    except (ValueError, AttributeError):
        return ""
    return value if isinstance(value, str) else ""


def open_threads(codex_home: str, platform: Platform) -> set[str]:
    """The threads some process holds open now: only a thread with a lock file can be."""
    try:
        names = os.listdir(os.path.join(codex_home, LOCKS))
    except OSError:
        return set()
    ids = [name[: -len(".lock")] for name in names if name.endswith(".lock")]
    return {tid for tid in ids if is_open(codex_home, tid, platform)}


def is_open(codex_home: str, thread_id: str, platform: Platform) -> bool:
    """Whether some process holds the thread open (its writer lock): the Desktop app, a
    `codex resume` TUI, an app-server that resumed it. Such a holder polls the queue."""
    if not is_thread_id(thread_id):
        return False
    return platform.lock_held(os.path.join(codex_home, LOCKS, f"{thread_id}.lock"))


def rollout_of(codex_home: str, thread_id: str) -> dict[str, Any] | None:
    """The thread's rollout as this Codex home holds it now (it moves when archived, and
    may be compressed to `.jsonl.zst`): `{path, archived, compressed}`, or None."""
    from hosts.mac.codex import find_thread

    found = find_thread(codex_home, thread_id)
    thread = found["thread"]
    if thread is None or not thread.get("rollout_path"):
        return None
    path = str(thread["rollout_path"])
    if not os.path.exists(path) and os.path.exists(path + ".zst"):
        path += ".zst"  # compressed since the state row was written
    return {"path": path, "archived": bool(found["archived"]), "compressed": path.endswith(".zst")}


def compressed_lines(path: str, offset: int) -> tuple[list[tuple[int, bytes]], int, int]:
    """A compressed rollout's complete lines from `offset` (offsets into the content),
    the offset after the last one, and the content's size. Decompressed by `zstd -dc`
    (argv), the standard library having no zstd before Python 3.14."""
    from hosts.mac.transcripts import split_lines

    try:
        done = subprocess.run(
            ["zstd", "-dc", "--", path], capture_output=True, timeout=60, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise OSError(f"cannot read the compressed rollout {path}: {error}") from None
    if done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[:200]
        raise OSError(f"cannot read the compressed rollout {path}: {said}")
    content = done.stdout
    lines, end = split_lines(content[offset:], offset)
    return lines, end, len(content)
