"""The chat's inbox: an AF_UNIX stream socket that only ever reads.

Each connection may carry several newline-terminated JSON lines and is read until EOF;
nothing is ever written back (the real door answers nothing). Lines that are not valid
frames are dropped with a note on stderr; no input can stop the chat.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hosts.sim.options import is_uuid
from hosts.sim.process import peer_pid, proc_start
from hosts.sim.registry import make_private_dir

MAX_LINE = 1 << 20
# A client that connects and goes quiet must not hold a descriptor for ever.
IDLE_SECONDS = 30.0


class FrameRejected(ValueError):
    """A line that is not an acceptable frame; the message says why."""


@dataclass(frozen=True)
class Frame:
    """A well-formed frame, with what the socket proved about its sender."""

    session_id: str
    msg_id: str | None  # None when the frame's msg_id is not a UUID
    uuid: str | None
    sender: str
    text: str
    peer_pid: int | None
    peer_start: str | None


def parse_frame(raw: bytes, pid: int | None = None, start: str | None = None) -> Frame:
    """Check one line against the frame rules; raises FrameRejected with the reason.

    The rules: a JSON object of type "user", a string session_id, and message.content a
    non-empty string. As the real receiver does, a msg_id that is not a UUID is dropped
    from the frame (not the frame itself), and a frame without a sender in "from" comes
    from "unknown". The frame's own uuid is kept only when it is a UUID (the caller
    decides whether to use it).
    """
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise FrameRejected("not UTF-8") from None
    except (ValueError, RecursionError):
        raise FrameRejected("not JSON") from None
    if not isinstance(data, dict):
        raise FrameRejected("not a JSON object")
    if data.get("type") != "user":
        raise FrameRejected("type is not user")
    session_id = data.get("session_id")
    if not isinstance(session_id, str):
        raise FrameRejected("no session_id")
    message = data.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, str) or not content:
        raise FrameRejected("message.content is not a non-empty string")
    msg_id = data.get("msg_id")
    sender = data.get("from")
    if not isinstance(sender, str) or not sender:
        sender = "unknown"
    frame_uuid = data.get("uuid")
    return Frame(
        session_id=session_id,
        msg_id=str(msg_id) if is_uuid(msg_id) else None,
        uuid=frame_uuid if is_uuid(frame_uuid) else None,
        sender=sender,
        text=content,
        peer_pid=pid,
        peer_start=start,
    )


class Inbox:
    """Binds the socket and hands every well-formed frame to ``deliver``."""

    def __init__(
        self,
        path: Path,
        deliver: Callable[[Frame], None],
        note: Callable[[str], None],
        frame_log: Path | None = None,
    ) -> None:
        self.path = path
        self.deliver = deliver
        self.note = note
        self.frame_log = frame_log
        self._server: asyncio.Server | None = None
        self._inode: int | None = None

    async def start(self) -> None:
        """Bind (mode 0600, folder 0700) and start accepting connections."""
        make_private_dir(self.path.parent)
        try:
            if stat.S_ISSOCK(os.lstat(self.path).st_mode):
                os.unlink(self.path)  # a dead chat's leftover with our name
        except FileNotFoundError:
            pass
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)  # no moment at which the socket is reachable by others
        try:
            sock.bind(str(self.path))
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)
        self._inode = os.lstat(self.path).st_ino
        sock.listen(64)
        sock.setblocking(False)
        self._server = await asyncio.start_unix_server(self._serve, sock=sock, limit=MAX_LINE)

    def close(self) -> None:
        """Stop listening and remove the socket, unless another file has taken its name."""
        if self._server is not None:
            self._server.close()
        try:
            if os.lstat(self.path).st_ino == self._inode:
                os.unlink(self.path)
        except FileNotFoundError:
            pass

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        sock = writer.get_extra_info("socket")
        pid = peer_pid(sock) if sock is not None else None
        start = proc_start(pid) if pid else None
        try:
            while True:
                try:
                    line = await asyncio.wait_for(reader.readuntil(b"\n"), IDLE_SECONDS)
                except asyncio.IncompleteReadError as exc:
                    if exc.partial.strip():
                        self.note("dropped an unterminated last line")
                    return
                except asyncio.LimitOverrunError:
                    self.note(f"line longer than {MAX_LINE} bytes; connection dropped")
                    return
                except (TimeoutError, ConnectionError):
                    return
                self._line(line[:-1], pid, start)
        except Exception as exc:  # one bad connection must never stop the chat
            self.note(f"connection failed: {exc!r}")
        finally:
            writer.close()

    def _line(self, raw: bytes, pid: int | None, start: str | None) -> None:
        if not raw.strip():
            return
        if self.frame_log is not None:
            with open(self.frame_log, "ab") as log:
                log.write(raw + b"\n")
        try:
            frame = parse_frame(raw, pid, start)
        except FrameRejected as exc:
            self.note(f"frame dropped: {exc}")
            return
        self.deliver(frame)
