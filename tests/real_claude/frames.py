"""A raw frame writer for tests (not Coop's code): the frame of DESIGN 5.4, one line."""

from __future__ import annotations

import json
import os
import socket
import uuid
from typing import Any


def coop_frame(session_id: str, text: str, msg_id: str | None = None) -> dict[str, Any]:
    """The frame Coop writes (DESIGN 5.4), with a fresh UUID4 unless one is given."""
    msg_id = msg_id or str(uuid.uuid4())
    return {
        "type": "user",
        "session_id": session_id,
        "uuid": msg_id,
        "msg_id": msg_id,
        "from": "cwkCoop",
        "priority": "next",
        "message": {"role": "user", "content": text},
    }


def write_frame(socket_path: str | os.PathLike[str], frame: dict[str, Any] | bytes) -> None:
    """One newline-terminated line into the inbox; nothing is read back."""
    data = frame if isinstance(frame, bytes) else (json.dumps(frame) + "\n").encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(5)
        sock.connect(os.fspath(socket_path))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)


def write_frame_read(
    socket_path: str | os.PathLike[str], frame: dict[str, Any] | bytes, timeout: float = 30
) -> None:
    """`write_frame`, then wait until the chat hangs up: it has read the line and judged
    it (Claude Code 2.1.328 closes an inbox connection once it has read it). A positive
    sign to assert what the frame did not leave behind."""
    data = frame if isinstance(frame, bytes) else (json.dumps(frame) + "\n").encode()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        sock.connect(os.fspath(socket_path))
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        while sock.recv(4096):
            pass  # the receiver says nothing back; EOF is its hang-up
