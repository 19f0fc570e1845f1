"""Facts about processes that a Claude Code chat records: birth, peer, tmux, git branch.

Everything here reads the operating system directly (``/proc``, socket options, a
``tmux`` call) and degrades to ``None`` where a platform lacks the source, the way the
real receiver omits ``procStart`` or ``verifiedPeerPid`` when it cannot know them.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Protocol

# macOS: getsockopt(SOL_LOCAL, LOCAL_PEERPID); Python has no names for them.
_SOL_LOCAL = 0
_LOCAL_PEERPID = 0x002


def parse_stat_start(stat: str) -> str:
    """Field 22 (starttime, clock ticks after boot) of a ``/proc/<pid>/stat`` line.

    The second field is the command name in parentheses and may itself contain spaces
    and parentheses, so the fields are counted from the LAST ``)``: after it come field 3
    (state) onwards. Raises ValueError when the line is not a stat line.
    """
    close = stat.rfind(")")
    if close < 0:
        raise ValueError("no command field in stat line")
    rest = stat[close + 1 :].split()
    # rest[0] is field 3, so field 22 is rest[19].
    if len(rest) < 20 or not rest[19].isdigit():
        raise ValueError("stat line too short")
    return rest[19]


def proc_start(pid: int) -> str | None:
    """The process's start time as Linux records it (field 22), or None if unknown."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    try:
        return parse_stat_start(text)
    except ValueError:
        return None


class SocketLike(Protocol):
    """What peer_pid needs: a socket, or asyncio's wrapper around one."""

    def getsockopt(self, level: int, option: int, buflen: int = ..., /) -> int | bytes: ...


def peer_pid(sock: SocketLike) -> int | None:
    """The pid of the process on the other end of a connected AF_UNIX socket, or None."""
    try:
        if hasattr(socket, "SO_PEERCRED"):
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            pid = struct.unpack("3i", raw)[0] if isinstance(raw, bytes) else 0
            return pid if pid > 0 else None
        if sys.platform == "darwin":
            value = sock.getsockopt(_SOL_LOCAL, _LOCAL_PEERPID)
            return value if isinstance(value, int) and value > 0 else None
    except OSError:
        return None
    return None


def pid_domain() -> str:
    """A name for the pid namespace this chat's pid belongs to.

    Two chats whose pids can be compared share this value; on Linux, as the real chat
    writes it, ``linux:<machine id>:<pid namespace link>``; elsewhere the host name.
    """
    try:
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return "host:" + socket.gethostname()
    try:
        machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        machine = socket.gethostname()
    return f"linux:{machine}:{namespace}"


# A simulated chat outside tmux may be given a pane of its own (the demo gives each chat
# one), so the TMUX column never shows the pane the app itself runs in.
TMUX_ENV = "COOP_SIM_TMUX"


def tmux_location() -> str | None:
    """``session:@window.%pane`` of the pane this chat runs in, only inside tmux, or the
    simulated location in ``COOP_SIM_TMUX``."""
    simulated = os.environ.get(TMUX_ENV)
    if simulated is not None:
        return simulated or None
    pane = os.environ.get("TMUX_PANE")
    if not os.environ.get("TMUX") or not pane:
        return None
    try:
        out = subprocess.run(
            ["tmux", "display", "-p", "-t", pane, "#{session_name}:#{window_id}.#{pane_id}"],
            capture_output=True,
            text=True,
            timeout=2,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    line = out.stdout.strip()
    return line if out.returncode == 0 and line else None


def git_branch(cwd: str) -> str:
    """The checked-out branch of the repository containing ``cwd``; "" outside one.

    Reads ``.git/HEAD`` rather than running git: a detached head reads "HEAD".
    """
    here = Path(cwd)
    for folder in (here, *here.parents):
        git = folder / ".git"
        if git.is_file():
            # A worktree or submodule: ".git" is a file naming the real git dir.
            text = git.read_text(encoding="utf-8", errors="replace").strip()
            if not text.startswith("gitdir:"):
                return ""
            git = (folder / text.removeprefix("gitdir:").strip()).resolve()
        if git.is_dir():
            try:
                head = (git / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                return ""
            prefix = "ref: refs/heads/"
            return head.removeprefix(prefix) if head.startswith(prefix) else "HEAD"
    return ""
