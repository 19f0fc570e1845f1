"""Whether a Codex thread is open: some process holds its writer lock
(`thread-writer-locks/<id>.lock`, flock), asked without taking the lock. Linux reads
/proc/locks; macOS has no lock table and asks lsof who has the file open (its path is
run here through MacPlatform, lsof speaking the same options)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hosts.mac.platforms import LinuxPlatform, MacPlatform, Platform

HOLD = (
    "import fcntl, sys, time\n"
    "f = open(sys.argv[1], 'a')\n"
    "fcntl.flock(f, fcntl.LOCK_EX)\n"
    "print('held', flush=True)\n"
    "time.sleep(300)\n"
)
PLATFORMS = [LinuxPlatform(), MacPlatform()]


@contextmanager
def holder(path: Path) -> Iterator[subprocess.Popen[str]]:
    """A real process holding an exclusive flock on `path` until the block ends."""
    child = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == "held\n"
        yield child
    finally:
        child.kill()
        child.wait()


@pytest.mark.parametrize("platform", PLATFORMS, ids=lambda p: p.name)
def test_a_held_writer_lock_is_seen_and_a_released_one_is_not(
    tmp_path: Path, platform: Platform
) -> None:
    lock, other = tmp_path / "thread.lock", tmp_path / "other.lock"
    lock.touch()
    other.touch()
    assert not platform.lock_held(str(lock))
    with holder(lock):
        assert platform.lock_held(str(lock))
        assert not platform.lock_held(str(other))  # that file's lock, not any lock
    assert not platform.lock_held(str(lock))  # a SIGKILLed holder's lock is gone with it


def test_a_missing_lock_file_is_not_held(tmp_path: Path) -> None:
    for platform in PLATFORMS:
        assert not platform.lock_held(str(tmp_path / "absent.lock"))
