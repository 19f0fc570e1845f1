"""The coordinator's hub: a private Unix socket in the Coop home through which the CLI
asks a running coordinator, which keeps warm connections to every Mac of its own fleet,
whatever touches the fleet: the listings (`coop chats`, `coop hosts`, `coop chat show`)
and the commands (`coop invite`, `coop resend`, `coop withdraw`, `coop tick`).

This module is only the transport. The coordinator plugs its answers in as a callback.
`ask`, for a listing, answers None whenever there is no coordinator to ask (no socket,
nobody listening, a socket that is not private, no reply in time), and the caller then
connects itself. `command`, for a command, answers None only when nobody listens, so
nothing was asked; a request sent and not answered is Unanswered, never done again by
the caller with another fleet.

One request per connection: the client sends one JSON line `{"op": str, "args": {...}}`,
the hub replies one JSON line `{"ok": true, "result": ...}` or `{"ok": false, "error":
"...", "kind": "bad-input" | "refused" | "failed"}` (what the answer raised: input no
command could take, a refusal by a rule or a Mac, or anything else), and closes the
connection.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import sys
import time
from pathlib import Path

from coop_engine.errors import BadInput, CoopError
from coop_engine.home import hub_path
from hosts.mac.errors import HostsError
from hosts.mac.native import NativeRefusal, private_socket

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    import selectors
    import socket
    import threading
    from collections.abc import Callable
    from typing import Any

    Answer = Callable[[str, dict[str, Any]], Any]

ASK_TIMEOUT = 15.0
# A command's answer may wait for a Mac (a Codex app-server starting, a pass on each Mac).
COMMAND_TIMEOUT = 120.0
# sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS; keep one for the NUL.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107
MAX_REQUEST = 1 << 20  # bytes in a request line, its newline not counted
READ_TIMEOUT = ASK_TIMEOUT  # a client that never finishes its line gives up its thread
PROBE_TIMEOUT = 1.0  # a listening socket accepts a connect at once, even before accept()
CHUNK = 64 << 10


class HubError(Exception):
    """The hub could not be started: one line naming the path."""


class Unanswered(CoopError):
    """A command was sent to the running coordinator and no whole answer came back: it
    may have been done there, so it is not done again here."""


class _BadRequest(Exception):
    """A request the hub cannot read: answered, never raised out of the hub."""


class Hub:
    """The coordinator's side: serves `answer(op, args)` on the home's hub socket.

    `answer` is called in the hub's threads, one per connection, possibly several at
    once; what it returns must be JSON-serialisable, and what it raises is the reply's
    error."""

    def __init__(self, home: Path, answer: Answer) -> None:
        self.home = home
        self.path = hub_path(home)
        self.answer = answer
        self._listener: socket.socket | None = None
        self._identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the bound socket
        self._wake: tuple[int, int] | None = None  # a pipe whose write ends the accept loop
        self._thread: threading.Thread | None = None
        self._closed = False

    def start(self) -> Hub:
        """Listen at the hub path, mode 0600 whatever the umask, and serve every
        connection in its own daemon thread. Returns the hub. Raises HubError when the
        path is too long for AF_UNIX, when another hub answers there, when something
        that is not a socket holds the name, or when the bind fails; a socket nobody
        listens on (a SIGKILLed coordinator's) is replaced."""
        # Imported here: the CLI imports this module for `ask` on every fleet command.
        import selectors
        import socket
        import tempfile
        import threading

        if self._listener is not None or self._closed:
            raise HubError(f"this hub was already started or closed: {self.path}")
        size = len(os.fsencode(str(self.path)))
        if size > MAX_SOCKET_PATH:
            raise HubError(
                f"hub socket path is {size} bytes, longer than the {MAX_SOCKET_PATH} "
                f"AF_UNIX allows on this platform: {self.path}"
            )
        # Probe, then rename: two coordinators starting at one instant are the claim's to stop.
        self._refuse_a_listening_hub()
        # Bound in a private folder, then renamed into place: os.umask is process-wide,
        # and would also strip the modes of files other threads create meanwhile.
        try:
            folder = tempfile.mkdtemp(prefix=".h", dir=self.home)
        except OSError as error:
            raise HubError(f"cannot start the hub at {self.path}: {error.strerror}") from None
        staged = os.path.join(folder, "s")  # shorter than the hub path, so it fits as well
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(staged)
            os.chmod(staged, 0o600)
            info = os.lstat(staged)
            listener.listen(64)
            listener.setblocking(False)  # a connect reset between select and accept must not block
            os.replace(staged, self.path)
        except OSError as error:
            listener.close()
            _remove(staged)
            raise HubError(
                f"cannot start the hub at {self.path}: {error.strerror or error}"
            ) from None
        finally:
            _rmdir(folder)
        self._listener = listener
        self._identity = (info.st_dev, info.st_ino)
        self._wake = os.pipe()
        selector = selectors.DefaultSelector()
        selector.register(listener, selectors.EVENT_READ)
        selector.register(self._wake[0], selectors.EVENT_READ)
        self._thread = threading.Thread(
            target=self._accept, args=(selector,), name="coop-hub", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop accepting and close the listening socket; remove the socket file only
        while it is still the one this hub bound, never another hub's. Connections
        already accepted finish in their threads. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._wake is not None:
            os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join()
        if self._wake is not None:
            os.close(self._wake[0])
            os.close(self._wake[1])
        if self._listener is not None:
            self._listener.close()
        try:
            info = os.lstat(self.path)
        except OSError:
            return
        if (info.st_dev, info.st_ino) == self._identity:
            _remove(str(self.path))

    def _refuse_a_listening_hub(self) -> None:
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as error:
            raise HubError(f"cannot start the hub at {self.path}: {error.strerror}") from None
        if not stat.S_ISSOCK(info.st_mode):
            raise HubError(f"cannot start the hub at {self.path}: it exists and is not a socket")
        import socket

        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.settimeout(PROBE_TIMEOUT)
        try:
            probe.connect(str(self.path))
        except OSError as error:
            if error.errno in (errno.ECONNREFUSED, errno.ENOENT):
                return  # a dead coordinator's socket: the rename replaces it
            raise HubError(
                f"cannot tell whether a hub listens at {self.path}: {error.strerror or error}"
            ) from None
        finally:
            probe.close()
        raise HubError(f"another coordinator's hub is listening at {self.path}")

    def _accept(self, selector: selectors.BaseSelector) -> None:
        import threading

        assert self._listener is not None
        try:
            while not self._closed:
                ready = {key.fileobj for key, _ in selector.select()}
                if self._closed or self._listener not in ready:
                    continue
                try:
                    connection, _ = self._listener.accept()
                except BlockingIOError:
                    continue
                except OSError:
                    time.sleep(0.05)  # out of descriptors, say: no busy loop while it lasts
                    continue
                threading.Thread(
                    target=self._serve, args=(connection,), name="coop-hub-ask", daemon=True
                ).start()
        finally:
            selector.close()

    def _serve(self, connection: socket.socket) -> None:
        with connection:
            connection.settimeout(READ_TIMEOUT)
            try:
                line, newline, too_long = _read_request(connection)
            except OSError:
                return
            if not line and not newline and not too_long:
                return  # a connect with nothing asked: another hub's probe
            try:
                if too_long:
                    raise _BadRequest(f"line longer than {MAX_REQUEST} bytes")
                op, args = _request(line)
            except _BadRequest as error:
                reply = _failure(f"bad request: {error}", "bad-input")
            else:
                reply = self._reply(op, args)
            try:
                connection.sendall(reply)
                if too_long and not newline:
                    _drain(connection)  # unread bytes would make close reset the reply away
            except OSError:
                return  # the client left; nobody is waiting for the reply

    def _reply(self, op: str, args: dict[str, Any]) -> bytes:
        try:
            result = self.answer(op, args)
        except Exception as error:  # the coordinator's failure is the client's answer
            return _failure(_one_line(error), _kind(error))
        try:
            return _encode({"ok": True, "result": result})
        except (TypeError, ValueError, RecursionError) as error:
            return _failure(f"answer is not JSON: {_one_line(error)}", "failed")


def ask(
    home: Path, op: str, args: dict[str, Any], timeout: float = ASK_TIMEOUT
) -> dict[str, Any] | None:
    """The coordinator's reply ({"ok": ..., "result"/"error": ...}) or None when there is
    no coordinator to ask: no socket file, not a socket, not private, nobody listening
    (ECONNREFUSED), or no complete reply within `timeout` (a coordinator that hangs: the
    caller then connects itself). For a question only: a listing asked twice does no
    harm. `args` must be JSON-serialisable."""
    try:
        return _exchange(home, op, args, timeout)
    except Unanswered:
        return None


def command(
    home: Path, op: str, args: dict[str, Any], timeout: float = COMMAND_TIMEOUT
) -> dict[str, Any] | None:
    """The coordinator's reply to a command, or None when no coordinator listens (nothing
    was sent: the caller may do it itself). Unanswered, naming the hub, when the request
    was sent and no whole reply came within `timeout`: the coordinator may have done it."""
    return _exchange(home, op, args, timeout)


def _exchange(home: Path, op: str, args: dict[str, Any], timeout: float) -> dict[str, Any] | None:
    """None when nobody could be asked; Unanswered once the request may have been read."""
    path = str(hub_path(home))
    try:
        # Never send a request into a socket someone else may own. Its folder is ours
        # and private too, so nobody can swap the file between this check and connect.
        private_socket(path)
    except NativeRefusal:
        return None
    # Only now: socket.py costs milliseconds, and a home nobody serves has no socket.
    import socket

    request = _encode({"op": op, "args": args})
    deadline = time.monotonic() + timeout
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.settimeout(timeout)
        try:
            client.connect(path)
        except OSError:  # refused, gone: no coordinator listens
            return None
        try:
            client.sendall(request)
            client.shutdown(socket.SHUT_WR)
            raw = _read_reply(client, deadline)
        except OSError as error:  # reset, timed out: asked, and not answered
            raise Unanswered(_unanswered(path, error.strerror or "none in time")) from None
    finally:
        client.close()
    reply = _parsed(raw)
    if reply is None:
        raise Unanswered(_unanswered(path, "no whole line"))
    return reply


def _unanswered(path: str, why: str) -> str:
    return (
        f"the running coordinator, asked through {path}, did not answer ({why}); nothing"
        " was done here: see coop status and coop outbox before trying again"
    )


def _parsed(raw: bytes | None) -> dict[str, Any] | None:
    """The reply line as a reply, or None when it is none."""
    if raw is None:
        return None
    try:
        reply = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return None
    return reply


# --- the wire --------------------------------------------------------------------------


def _encode(value: dict[str, Any]) -> bytes:
    # ensure_ascii escapes every newline inside strings: the message stays one line.
    return json.dumps(value, ensure_ascii=True).encode("ascii") + b"\n"


def _failure(error: str, kind: str) -> bytes:
    return _encode({"ok": False, "error": error, "kind": kind})


def _kind(error: BaseException) -> str:
    """What an answer raised, as the client words and exits for it (DESIGN 12)."""
    if isinstance(error, BadInput):
        return "bad-input"
    if isinstance(error, (CoopError, HostsError)):
        return "refused"
    return "failed"


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


def _read_request(connection: socket.socket) -> tuple[bytes, bool, bool]:
    """The request line without its newline, whether its newline came (end of input
    ends a line too), and whether it ran past MAX_REQUEST bytes: then the line is empty
    and, without its newline, the rest of it is left unread."""
    line = bytearray()
    while True:
        chunk = connection.recv(CHUNK)
        if not chunk:
            return bytes(line), False, False
        end = chunk.find(b"\n")
        line += chunk if end < 0 else chunk[:end]
        if len(line) > MAX_REQUEST:
            return b"", end >= 0, True
        if end >= 0:
            return bytes(line), True, False


def _drain(connection: socket.socket) -> None:
    """Read and drop the rest of an over-long line, until its newline or end of input."""
    while True:
        chunk = connection.recv(CHUNK)
        if not chunk or b"\n" in chunk:
            return


def _request(line: bytes) -> tuple[str, dict[str, Any]]:
    """The op and args of a request line; _BadRequest saying what is wrong with it."""
    try:
        value = json.loads(line)
    except (ValueError, RecursionError) as error:
        raise _BadRequest(f"not JSON: {_one_line(error)}") from None
    if not isinstance(value, dict):
        raise _BadRequest(f"not a JSON object but {type(value).__name__}")
    op, args = value.get("op"), value.get("args")
    if not isinstance(op, str):
        raise _BadRequest("op is not a string")
    if not isinstance(args, dict):
        raise _BadRequest("args is not an object")
    return op, args


def _read_reply(client: socket.socket, deadline: float) -> bytes | None:
    """The reply line, or None when the hub closed before its newline."""
    reply = bytearray()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("no reply in time")
        client.settimeout(left)
        chunk = client.recv(CHUNK)
        if not chunk:
            return None
        end = chunk.find(b"\n")
        if end >= 0:
            return bytes(reply + chunk[:end])
        reply += chunk


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass
