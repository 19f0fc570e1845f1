"""Fixtures for the simulated Claude Code chat: real processes, real sockets, real files.

``start_chat(*args)`` runs ``python -m hosts.sim chat`` in a short /tmp home and returns
a ``SimChat`` once its ready line arrives. Frames are written with this file's own tiny
socket client, never with Coop's code. The chat's stderr notes ("frame X: refuse ...")
are collected so a test can wait for a decision instead of sleeping.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import waiting

REPO = Path(__file__).resolve().parents[2]
START_SECONDS = 30.0  # hang bounds only: a loaded machine never reaches them
WAIT_SECONDS = 30.0
# Fast defaults; a test that cares passes its own value (argparse: the last one wins).
FAST = ("--think", "0.05", "--tool-interval", "0.1", "--busy-seconds", "0.6")


@dataclass
class SimHome:
    """Short paths for one test: AF_UNIX socket paths must stay under 108 bytes."""

    root: Path
    config: Path
    cwd: Path
    sockets: Path
    managed: Path


def wait_until(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``predicate`` until it returns something truthy (tests/waiting.py)."""
    return waiting.wait_until(predicate, what, timeout)


class SimChat:
    """A running simulated chat and the ways a test talks to it."""

    def __init__(self, proc: subprocess.Popen[bytes], ready: dict[str, Any], home: SimHome):
        self.proc = proc
        self.ready = ready
        self.home = home
        self.pid: int = ready["pid"]
        self.session_id: str = ready["session_id"]
        self.socket = Path(ready["socket"])
        self.registry_path = Path(ready["registry"])
        self.transcript_path = Path(ready["transcript"])
        self.notes: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._collect_notes, daemon=True).start()

    def _collect_notes(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            with self._cond:
                self.notes.append(raw.decode(errors="replace").rstrip("\n"))
                self._cond.notify_all()

    def frame(
        self,
        text: str,
        *,
        msg_id: str | None = None,
        session_id: str | None = None,
        sender: str = "cwkCoop",
    ) -> dict[str, Any]:
        """A frame as DESIGN.md 5.4 describes it, uuid and msg_id both the same id."""
        msg_id = msg_id or str(uuid.uuid4())
        return {
            "type": "user",
            "session_id": session_id or self.session_id,
            "uuid": msg_id,
            "msg_id": msg_id,
            "from": sender,
            "priority": "next",
            "message": {"role": "user", "content": text},
        }

    def send(self, *items: dict[str, Any] | bytes, path: Path | None = None) -> None:
        """One connection: each dict as one JSON line, bytes exactly as given; then EOF."""
        payload = b"".join(
            item if isinstance(item, bytes) else json.dumps(item).encode() + b"\n" for item in items
        )
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5)
            sock.connect(str(path or self.socket))
            sock.sendall(payload)
            sock.shutdown(socket.SHUT_WR)

    def registry(self) -> dict[str, Any]:
        """The registry entry; a torn read (the chat rewrites in place) is retried."""
        entry = waiting.whole_json(self.registry_path, "a whole registry entry", WAIT_SECONDS)
        if entry is None:
            raise FileNotFoundError(self.registry_path)
        return entry

    def transcript(self) -> list[dict[str, Any]]:
        """The transcript's complete lines, parsed; [] while the file does not exist."""
        try:
            data = self.transcript_path.read_bytes()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")[:-1]  # a last line without its newline is not yet
        return [json.loads(line) for line in lines]

    def wait_note(self, needle: str, timeout: float = WAIT_SECONDS) -> str:
        """The first stderr note containing ``needle`` (waits for it)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for line in self.notes:
                    if needle in line:
                        return line
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no note with {needle!r}; notes: {self.notes}")
                self._cond.wait(left)

    def wait_transcript(
        self, predicate: Callable[[list[dict[str, Any]]], bool], timeout: float = WAIT_SECONDS
    ) -> list[dict[str, Any]]:
        """The transcript once ``predicate`` holds for it."""
        return wait_until(
            lambda: (lines := self.transcript()) and predicate(lines) and lines,
            timeout,
            "the transcript",
        )

    def wait_turn_end(self, count: int = 1) -> list[dict[str, Any]]:
        """The transcript once it holds ``count`` turn_duration entries."""
        return self.wait_transcript(
            lambda lines: len(self.of_type(lines, "system", "turn_duration")) >= count
        )

    def wait_status(self, status: str, timeout: float = WAIT_SECONDS) -> dict[str, Any]:
        """The registry entry once its status is ``status``."""
        return wait_until(
            lambda: (entry := self.registry()).get("status") == status and entry,
            timeout,
            f"status {status}",
        )

    @staticmethod
    def of_type(lines: list[dict[str, Any]], kind: str, subtype: str | None = None) -> list[dict]:
        """The entries of one ``type`` (and ``subtype``), in order."""
        return [
            e
            for e in lines
            if e.get("type") == kind and (subtype is None or e.get("subtype") == subtype)
        ]

    @staticmethod
    def peer_entries(lines: list[dict[str, Any]], msg_id: str) -> list[dict[str, Any]]:
        """Entries of either peer shape whose origin names ``msg_id``."""
        found = []
        for entry in lines:
            origin = entry.get("origin") or (entry.get("attachment") or {}).get("origin") or {}
            if origin.get("msg_id") == msg_id:
                found.append(entry)
        return found

    @staticmethod
    def finals(lines: list[dict[str, Any]]) -> list[str]:
        """For each turn, its last assistant text before the turn_duration entry."""
        out: list[str] = []
        last: str | None = None
        for entry in lines:
            if entry.get("type") == "assistant":
                texts = [b["text"] for b in entry["message"]["content"] if b.get("type") == "text"]
                last = texts[-1] if texts else last
            if entry.get("type") == "system" and entry.get("subtype") == "turn_duration":
                out.append(last or "")
                last = None
        return out

    def type(self, line: str) -> None:
        """Type a line into a chat started with ``--typed``, as its user would."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def kill(self, sig: int) -> None:
        """Send ``sig`` to the chat process."""
        os.kill(self.pid, sig)

    def stop(self) -> int:
        """SIGTERM, then the exit status."""
        if self.proc.poll() is None:
            self.kill(signal.SIGTERM)
        return self.proc.wait(timeout=WAIT_SECONDS)


@pytest.fixture
def sim_home() -> Iterator[SimHome]:
    """A fresh, short home under /tmp with config, project, socket and managed folders."""
    root = Path(tempfile.mkdtemp(prefix="sim", dir="/tmp"))
    home = SimHome(root, root / "cfg", root / "proj", root / "s", root / "m")
    home.cwd.mkdir()
    home.managed.mkdir()
    yield home
    shutil.rmtree(root, ignore_errors=True)


def sim_command(home: SimHome, *args: str) -> list[str]:
    """The full command line of a simulated chat in ``home``."""
    return [
        sys.executable,
        "-m",
        "hosts.sim",
        "chat",
        "--config-dir",
        str(home.config),
        "--cwd",
        str(home.cwd),
        "--socket-dir",
        str(home.sockets),
        "--managed-settings-dir",
        str(home.managed),
        *FAST,
        *args,
    ]


@pytest.fixture
def start_chat(sim_home: SimHome) -> Iterator[Callable[..., SimChat]]:
    """Start simulated chats; every one still running is SIGKILLed at teardown."""
    started: list[SimChat] = []

    def start(*args: str, time_scale: float | None = None) -> SimChat:
        env = dict(os.environ)
        env.pop("TMUX", None)
        if time_scale is not None:
            env["COOP_SIM_TIME_SCALE"] = str(time_scale)
        proc = subprocess.Popen(
            sim_command(sim_home, *args),
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE if "--typed" in args else None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        lines: queue.Queue[bytes] = queue.Queue()
        assert proc.stdout is not None
        stdout = proc.stdout
        threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
        try:
            first = lines.get(timeout=START_SECONDS)
        except queue.Empty:
            proc.kill()
            raise AssertionError("the simulated chat never printed its ready line") from None
        if not first:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise AssertionError(f"the simulated chat exited before ready: {err}")
        chat = SimChat(proc, json.loads(first), sim_home)
        started.append(chat)
        return chat

    yield start
    for chat in started:
        if chat.proc.poll() is None:
            chat.proc.kill()
        chat.proc.wait(timeout=WAIT_SECONDS)
