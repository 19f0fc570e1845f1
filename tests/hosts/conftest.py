"""Fixtures of the hosts tests: a real live process, and a real private inbox socket."""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture
def live_process() -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(["sleep", "60"])
    yield process
    process.kill()
    process.wait()


@pytest.fixture
def inbox() -> Iterator[Path]:
    """A listening Unix socket, 0600 in a folder of its own (0700)."""
    folder = Path(tempfile.mkdtemp(prefix="cb", dir="/tmp"))
    os.chmod(folder, 0o700)
    path = folder / "1.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    os.chmod(path, 0o600)
    server.listen()
    yield path
    server.close()
    path.unlink()
    folder.rmdir()
