"""A Codex thread's writer lock: ``CODEX_HOME/thread-writer-locks/<id>.lock``.

The process that writes a thread (the Desktop app, a ``codex resume`` TUI, an app-server
that did ``thread/resume``) holds ``flock(LOCK_EX)`` on that file. As in Codex CLI
0.171.0 the file exists only while it is held: a holder that stops cleanly removes it; a
killed one leaves it behind, unlocked. Beside the lock files lies an empty
``.coordination.lock``, made by the first process that writes a thread (``codex exec``
too), not by an app-server that only queues.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

LOCKS = "thread-writer-locks"
COORDINATION = ".coordination.lock"


def lock_path(home: Path, thread_id: str) -> Path:
    return home / LOCKS / f"{thread_id}.lock"


def coordination(home: Path) -> None:
    """The lock folder and its ``.coordination.lock``, which every thread writer makes."""
    (home / LOCKS).mkdir(parents=True, exist_ok=True)
    (home / LOCKS / COORDINATION).touch(exist_ok=True)


def is_held(path: Path) -> bool:
    """Whether some process holds the lock (a probe: it takes and drops it when free)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def acquire(path: Path) -> int | None:
    """Hold the lock, creating its folder and file; the open descriptor, or None when
    another process holds it."""
    coordination(path.parent.parent)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            return fd
        # The last holder removed the file between our open and our lock: lock anew.
        os.close(fd)


def release(fd: int, path: Path) -> None:
    """Let go cleanly: remove the file, then drop the lock."""
    path.unlink(missing_ok=True)
    os.close(fd)
