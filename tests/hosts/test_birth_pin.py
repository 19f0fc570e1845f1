"""The birth pin on Linux (DESIGN 5.2): an entry is live only when its recorded
`procStart` is the live process's start. An entry that records none cannot prove it
belongs to the process now holding its pid: never live, never targeted."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from hosts.mac import native
from hosts.mac.identity import detect_claude_session
from hosts.mac.platforms import LinuxPlatform


def test_an_entry_without_proc_start_is_never_live_on_linux(
    tmp_path: Path, live_process: subprocess.Popen[bytes], inbox: Path
) -> None:
    pid = live_process.pid
    entry = {
        "pid": pid,
        "sessionId": f"session-{pid}",
        "cwd": "/tmp",
        "startedAt": int(time.time() * 1000),
        "peerProtocol": 1,
        "status": "idle",
        "messagingSocketPath": str(inbox),
    }
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / f"{pid}.json").write_text(json.dumps(entry))
    (seen,) = native.scan_registry(tmp_path, LinuxPlatform()).entries
    assert seen.birth is not None  # the process is alive ...
    assert not seen.live  # ... but nothing proves the entry is its
    with pytest.raises(native.NativeRefusal, match="No live chat"):
        native.target(tmp_path, LinuxPlatform(), f"session-{pid}")


def test_a_lingering_entry_naming_the_callers_pid_is_not_its_chat(tmp_path: Path) -> None:
    """An exited chat's entry can name a pid the system gave since to this very process:
    the CLI typed here is not inside that chat."""
    pid = os.getpid()
    entry = {"pid": pid, "sessionId": "gone-chat", "procStart": "1", "peerProtocol": 1}
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / f"{pid}.json").write_text(json.dumps(entry))
    assert detect_claude_session(tmp_path, LinuxPlatform(), pid=pid) is None
    entry["procStart"] = LinuxPlatform().births([pid])[pid]
    (tmp_path / "sessions" / f"{pid}.json").write_text(json.dumps(entry))
    assert detect_claude_session(tmp_path, LinuxPlatform(), pid=pid) == "claude:gone-chat"
