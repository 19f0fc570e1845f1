"""The write itself (seed 000): connect, send exactly one newline-terminated line, shut
down the write side, close. Nothing is read back: the slot never answers, so waiting
for an answer would only wait."""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from hosts.mac import native

OUTBOX_ID = "5f0c7a1e-2b3d-4c5e-8f90-a1b2c3d4e5f6"
HANG = 60.0  # bounds a hang only: a receiver that never closes is released at teardown


def listening(path: Path) -> socket.socket:
    """A private inbox bound at `path`, nobody accepting yet."""
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen(4)
    return server


class SilentReceiver:
    """A private inbox that reads what it is sent until the sender's EOF, then keeps the
    connection open without a word until the test ends."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.server = listening(path)
        self.received: list[bytes] = []
        self.got_eof = threading.Event()
        self.release = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self.server.accept()
        with conn:
            data = b""
            while chunk := conn.recv(65536):
                data += chunk
            self.received.append(data)
            self.got_eof.set()
            self.release.wait(HANG)  # silent, and open

    def close(self) -> None:
        self.release.set()
        self.server.close()


@pytest.fixture
def inbox_path() -> Iterator[Path]:
    """Where an inbox is bound: a socket path in a private folder of its own."""
    folder = Path(tempfile.mkdtemp(prefix="cw", dir="/tmp"))
    os.chmod(folder, 0o700)
    try:
        yield folder / "inbox.sock"
    finally:
        (folder / "inbox.sock").unlink(missing_ok=True)
        folder.rmdir()


@pytest.fixture
def receiver(inbox_path: Path) -> Iterator[SilentReceiver]:
    inbox = SilentReceiver(inbox_path)
    try:
        yield inbox
    finally:
        inbox.close()


def test_a_receiver_that_never_answers_nor_closes_is_written_to_and_left(
    receiver: SilentReceiver,
) -> None:
    line = native.frame("5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11", OUTBOX_ID, "Fix the importer")
    result = native.write_frame(str(receiver.path), line)
    assert result == {"ok": True, "written": True, "stage": "done", "bytes": len(line)}
    assert receiver.got_eof.wait(HANG), "the write side was never shut down"
    assert receiver.received == [line]
    assert line.count(b"\n") == 1 and line.endswith(b"\n")


@pytest.mark.parametrize(
    "line",
    [b'{"type": "user"}\n{"type": "user"}\n', b'{"type": "user"}', b"\n\n"],
    ids=["two-lines", "no-newline", "empty-lines"],
)
def test_a_frame_with_a_line_break_inside_is_never_written(inbox_path: Path, line: bytes) -> None:
    server = listening(inbox_path)
    try:
        with pytest.raises(ValueError, match="exactly one newline-terminated line"):
            native.write_frame(str(inbox_path), line)
        server.setblocking(False)
        with pytest.raises(BlockingIOError):
            server.accept()  # refused before connecting: nobody knocked
    finally:
        server.close()
