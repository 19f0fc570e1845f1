"""Which chat a CLI call was typed in, found without asking the model (seed 003).

A `coop` command run inside a Claude Code chat is a descendant of that chat's process,
so walking up the parent chain finds the first pid with a registry entry.
"""

from __future__ import annotations

import os
from pathlib import Path

from hosts.mac import native
from hosts.mac.platforms import Platform

MAX_ANCESTORS = 16


def detect_claude_session(
    config_dir: Path, platform: Platform, pid: int | None = None
) -> str | None:
    """`claude:<sessionId>` of the nearest ancestor (at most 16 steps up, this process
    included) that has a live registry entry; None when there is none."""
    folder = os.path.join(config_dir, "sessions")
    if not os.path.isdir(folder):
        return None
    pid = os.getpid() if pid is None else pid
    for _ in range(MAX_ANCESTORS):
        path = os.path.join(folder, f"{pid}.json")
        if os.path.isfile(path):
            return _session_of(path, pid, platform)
        parent = platform.parent(pid)
        if parent is None or parent <= 1:
            return None
        pid = parent
    return None


def _session_of(path: str, pid: int, platform: Platform) -> str | None:
    data, _ = native.read_entry(path)
    if data is None or data.get("pid") != pid:
        return None
    entry = native.RegistryEntry(pid, path, data)
    birth = platform.births([pid]).get(pid)
    # An exited chat's entry can name a pid that now belongs to this shell: not a chat.
    if birth is None or not platform.birth_matches(data, birth) or entry.session_id is None:
        return None
    return f"claude:{entry.session_id}"
