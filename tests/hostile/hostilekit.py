"""Shared pieces of the hostile-input corpus: a live chat's registry entry to spoil, and
the checks every case ends with (no traceback shown, nothing written to a chat)."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from hosts.sim.launch import SimChat

GOOD_SESSION = "5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"


def proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def live_entry(pid: int, session_id: str = GOOD_SESSION, **changes: Any) -> dict[str, Any]:
    """A registry entry that would be targeted: a live process, its birth, protocol 1."""
    entry: dict[str, Any] = {
        "pid": pid,
        "sessionId": session_id,
        "cwd": "/tmp",
        "startedAt": int(time.time() * 1000),
        "procStart": proc_start(pid),
        "peerProtocol": 1,
        "kind": "interactive",
        "status": "idle",
        "name": "hostile",
    }
    entry.update(changes)
    return entry


def write_registry(config: Path, name: str, content: bytes | str | dict[str, Any]) -> Path:
    folder = config / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    if isinstance(content, dict):
        content = json.dumps(content)
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return path


def shown_cleanly(
    result: subprocess.CompletedProcess[str], codes: tuple[int, ...] = (0, 1, 2)
) -> None:
    """What the user sees: an expected exit code, one line on stderr for a refusal (1)
    or a usage error (2), and never a traceback."""
    assert result.returncode in codes, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr + result.stdout, result.stderr
    if result.returncode in (1, 2):
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("coop"), result.stderr


def no_frames(*chats: SimChat) -> None:
    for chat in chats:
        assert chat.frames() == [], f"a frame reached {chat.ref}"


def env_for(config: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(config)}
