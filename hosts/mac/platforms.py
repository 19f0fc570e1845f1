"""What differs between macOS and Linux: process births, command lines, parents, and
where managed settings live.

Process births are read for all pids of one registry scan at once: `/proc` on Linux,
one `ps` call for every pid on macOS; never one process per chat. `MacPlatform` also
runs on Linux (procps `ps` speaks the same options), which is how its path is tested.
"""

from __future__ import annotations

import os
import sys
import time
from abc import ABC, abstractmethod
from pathlib import Path

from hosts.mac.files import read_file

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

# ps reports start times to the second; Claude Code stamps startedAt a little after exec.
STARTED_AT_SLACK_SECONDS = 10


class Platform(ABC):
    """The process and path facts of one operating system."""

    name = "generic"
    managed_settings_dir = Path("/etc/claude-code")

    @abstractmethod
    def births(self, pids: Iterable[int]) -> dict[int, str]:
        """Birth tokens of the live processes among `pids` (absent pids are not live)."""

    @abstractmethod
    def birth_matches(self, entry: Mapping[str, Any], birth: str) -> bool:
        """Whether a registry entry's recorded start is this live process's birth."""

    @abstractmethod
    def cmdline(self, pid: int) -> list[str] | None:
        """The process's argument vector, or None when it cannot be read."""

    @abstractmethod
    def parent(self, pid: int) -> int | None:
        """The parent pid, or None when the process is gone."""

    @abstractmethod
    def lock_held(self, path: str) -> bool:
        """Whether some process holds a lock on the file (Codex's writer lock), asked
        without taking one: a probe lock would make the thread's holder fail to open."""


def _proc_stat_fields(pid: int, wanted: int) -> list[bytes] | None:
    """Fields 3 to 3 + `wanted` of /proc/<pid>/stat, undecoded, and the rest in one
    piece (a listing reads two fields of fifty); the command name, before them, may hold
    spaces and parentheses."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4096)  # the kernel hands over a stat line whole, in one read
    except OSError:
        return None
    finally:
        os.close(fd)
    return raw.rpartition(b")")[2].split(None, wanted)


class LinuxPlatform(Platform):
    name = "linux"
    managed_settings_dir = Path("/etc/claude-code")

    def births(self, pids: Iterable[int]) -> dict[int, str]:
        found = {}
        for pid in pids:
            fields = _proc_stat_fields(pid, 20)
            # A zombie (state Z) still has its start time, but it has exited: not live.
            if fields is not None and len(fields) > 19 and fields[0] != b"Z":
                # Field 22: the start time in clock ticks since boot.
                found[pid] = fields[19].decode("ascii", "replace")
        return found

    def birth_matches(self, entry: Mapping[str, Any], birth: str) -> bool:
        recorded = entry.get("procStart")
        if recorded is not None:
            return str(recorded) == birth
        # An entry without procStart cannot prove it belongs to this process.
        return False

    def cmdline(self, pid: int) -> list[str] | None:
        try:
            raw = read_file(f"/proc/{pid}/cmdline")
        except OSError:
            return None
        # Decoded whole, then split: a NUL is never part of a UTF-8 sequence.
        return raw.decode("utf-8", "replace").split("\0")[:-1] or None

    def parent(self, pid: int) -> int | None:
        fields = _proc_stat_fields(pid, 2)
        if fields is None or len(fields) < 2:
            return None
        return int(fields[1])

    def lock_held(self, path: str) -> bool:
        try:
            info = os.stat(path)
            with open("/proc/locks") as locks:
                table = locks.read()
        except OSError:
            return False
        # "1: FLOCK  ADVISORY  WRITE 14286 fe:00:2170935 0 EOF": field 6 is the file's
        # major:minor:inode; a "->" line is a process waiting for the lock, not holding it.
        major, minor = os.major(info.st_dev), os.minor(info.st_dev)
        wanted = f"{major:02x}:{minor:02x}:{info.st_ino}"
        return any(
            len(fields) >= 8 and fields[1] != "->" and fields[5] == wanted
            for fields in (line.split() for line in table.splitlines())
        )


def _run_ps(args: list[str]) -> str:
    import subprocess

    env = {**os.environ, "LC_ALL": "C"}
    result = subprocess.run(
        ["ps", *args], capture_output=True, text=True, timeout=10, env=env, check=False
    )
    # ps exits 1 when some pids are gone; what it printed for the others still counts.
    return result.stdout


class MacPlatform(Platform):
    name = "darwin"
    managed_settings_dir = Path("/Library/Application Support/ClaudeCode")

    def births(self, pids: Iterable[int]) -> dict[int, str]:
        wanted = sorted(set(pids))
        if not wanted:
            return {}
        out = _run_ps(["-o", "pid=,stat=,lstart=", "-p", ",".join(map(str, wanted))])
        found = {}
        for line in out.splitlines():
            parts = line.split(None, 2)
            if len(parts) != 3 or not parts[0].isdigit():
                continue
            if parts[1].startswith("Z"):
                continue  # a zombie has exited, whatever its start time says
            try:
                started = time.mktime(time.strptime(parts[2].strip(), "%a %b %d %H:%M:%S %Y"))
            except ValueError:
                continue
            found[int(parts[0])] = str(int(started))
        return found

    def birth_matches(self, entry: Mapping[str, Any], birth: str) -> bool:
        started_ms = entry.get("startedAt")
        if not isinstance(started_ms, (int, float)) or isinstance(started_ms, bool):
            return False
        # startedAt is stamped after exec: never before the process's start second, and
        # not long after it. A reused pid starts later than the entry says.
        delta = started_ms / 1000 - int(birth)
        return -1 < delta <= STARTED_AT_SLACK_SECONDS

    def cmdline(self, pid: int) -> list[str] | None:
        if sys.platform == "darwin":
            from hosts.mac.procargs import darwin_procargs

            return darwin_procargs(pid)
        out = _run_ps(["-ww", "-o", "args=", "-p", str(pid)]).strip()
        return out.split() if out else None

    def parent(self, pid: int) -> int | None:
        out = _run_ps(["-o", "ppid=", "-p", str(pid)]).strip()
        return int(out) if out.isdigit() else None

    def lock_held(self, path: str) -> bool:
        # macOS shows no lock table; the holder keeps its locked file open for as long as
        # it holds it, and removes the file when it lets go: an open file is a held lock.
        import subprocess

        if not os.path.exists(path):
            return False
        try:
            found = subprocess.run(
                ["lsof", "-t", "--", path], capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return any(pid.strip().isdigit() for pid in found.stdout.splitlines())


def current_platform() -> Platform:
    return MacPlatform() if sys.platform == "darwin" else LinuxPlatform()
