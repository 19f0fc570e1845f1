"""The processes of a network namespace a test made (`unshare -n`), and only those.

A namespace is known by its inode number, and once its last process has gone the kernel
hands that number to the next namespace made: a sweep by number afterwards could kill
another test's chat (two `make test` runs, or xdist workers, start chats at once). So the
test holds the namespace open (a file descriptor on it) from the moment its process has
entered it until the sweep is over: while held, the namespace and its number stay its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable

WAIT = 30.0  # a bound on a hang only: `unshare -n` enters its namespace at once


def netns(pid: int) -> str:
    """The process's network namespace, as `net:[inode]`; "" once it has gone."""
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return ""


class Held:
    """The namespace a process has entered, held from now until `release()`."""

    def __init__(self, pid: int, gone: Callable[[], bool], timeout: float = WAIT) -> None:
        """`gone()` says the process has ended: then there is nothing to hold."""
        self.fd: int | None = None
        self.name = ""
        own, deadline = netns(os.getpid()), time.monotonic() + timeout
        while not gone() and time.monotonic() < deadline:
            if netns(pid) not in ("", own):
                with contextlib.suppress(OSError):
                    self.fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY)
                    self.name = os.readlink(f"/proc/self/fd/{self.fd}")
                    if self.name == own:  # the pid ended and was reused, in between
                        self.release()
                break
            time.sleep(0.005)

    def members(self) -> list[int]:
        if not self.name:
            return []
        return [int(p) for p in os.listdir("/proc") if p.isdigit() and netns(int(p)) == self.name]

    def sweep(self, rounds: int = 3) -> None:
        """SIGKILL every process left in the namespace (all of them ours)."""
        for _ in range(rounds):
            left = self.members()
            if not left:
                return
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.1)

    def release(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.name = None, ""
