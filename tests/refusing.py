"""A chat whose inbox refuses every connect, for the tests and the benchmark of refusals
before connecting: a live process registered as a Claude chat, its socket bound and
private but never listened on."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path


class RefusingChat:
    """Registered in `sessions` (a Claude folder's sessions/), its socket in `inbox` (a
    short path: AF_UNIX), its conversation `session_id`. `close` ends it all."""

    def __init__(self, sessions: Path, inbox: Path, cwd: Path, session_id: str) -> None:
        sessions.mkdir(parents=True, exist_ok=True)
        inbox.mkdir(mode=0o700, exist_ok=True)
        self.inbox = inbox
        self.path = inbox / "inbox.sock"
        self.path.unlink(missing_ok=True)
        self.bound = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.bound.bind(str(self.path))  # no listen(): a connect is refused
        self.path.chmod(0o600)
        self.process = subprocess.Popen(["sleep", "3600"])
        stat = Path(f"/proc/{self.process.pid}/stat").read_text().rpartition(")")[2].split()
        entry = {
            "pid": self.process.pid,
            "sessionId": session_id,
            "cwd": str(cwd),
            "startedAt": int(time.time() * 1000),
            "procStart": stat[19],
            "peerProtocol": 1,
            "kind": "interactive",
            "status": "idle",
            "name": "refusing",
            "messagingSocketPath": str(self.path),
        }
        (sessions / f"{self.process.pid}.json").write_text(json.dumps(entry))
        self.ref = f"claude:{session_id}"

    def close(self) -> None:
        self.bound.close()
        self.path.unlink(missing_ok=True)
        self.inbox.rmdir()
        self.process.kill()
        self.process.wait()
