"""Starting simulated chats, Codex threads and Codex thread holders as real processes:
the one launcher the demo and the tests share. Like the rest of `hosts.sim`, it imports
nothing of Coop."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
START_SECONDS = 15.0
# The simulated `codex` executable: `codex app-server` and `codex queue`.
CODEX_EXECUTABLE = ROOT / "hosts" / "sim" / "bin" / "codex"


@dataclass
class SimChat:
    """One running `python -m hosts.sim chat` and what it said when it was ready."""

    process: subprocess.Popen[str]
    ready: dict[str, Any]
    config_dir: Path
    frame_log: Path

    @property
    def pid(self) -> int:
        return int(self.ready["pid"])

    @property
    def session_id(self) -> str:
        return str(self.ready["session_id"])

    @property
    def ref(self) -> str:
        return f"claude:{self.session_id}"

    @property
    def socket(self) -> Path:
        return Path(self.ready["socket"])

    @property
    def registry(self) -> Path:
        return Path(self.ready["registry"])

    @property
    def transcript(self) -> Path:
        return Path(self.ready["transcript"])

    def type(self, line: str) -> None:
        """Type a line into the chat, as its user would (`/clear`)."""
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def entry(self) -> dict[str, Any]:
        """Its registry entry, read again while the chat is rewriting it."""
        for _ in range(50):
            try:
                value: dict[str, Any] = json.loads(self.registry.read_text())
                return value
            except ValueError:
                time.sleep(0.01)
        raise RuntimeError(f"the registry entry {self.registry} stayed torn")

    def rewrite_entry(self, **changes: Any) -> None:
        entry = self.entry()
        entry.update(changes)
        self.registry.write_text(json.dumps(entry))

    def frames(self) -> list[dict[str, Any]]:
        """Every line the inbox received, parsed."""
        if not self.frame_log.exists():
            return []
        return [
            json.loads(line) for line in self.frame_log.read_text().splitlines() if line.strip()
        ]

    def transcript_entries(self) -> list[dict[str, Any]]:
        if not self.transcript.exists():
            return []
        lines = self.transcript.read_text().splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(5)


@dataclass
class SimFleet:
    """Chats on one simulated Mac: one Claude config dir, one socket dir."""

    config_dir: Path
    socket_dir: Path = field(
        default_factory=lambda: Path(tempfile.mkdtemp(prefix="cs", dir="/tmp"))
    )
    chats: list[SimChat] = field(default_factory=list)

    def start(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = START_SECONDS
    ) -> SimChat:
        """One simulated chat (`args` as `python -m hosts.sim chat` takes them); returns
        once its inbox is bound. Its stderr notes go beside its frame log."""
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.socket_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        frame_log = Path(tempfile.mkstemp(prefix="frames", dir=self.socket_dir)[1])
        # The chat notes each decision on stderr; a pipe nobody reads would stall it.
        stderr = open(frame_log.with_suffix(".err"), "w")  # noqa: SIM115 - closed below
        command = [
            sys.executable,
            "-m",
            "hosts.sim",
            "chat",
            "--config-dir",
            str(self.config_dir),
            "--socket-dir",
            str(self.socket_dir),
            "--frame-log",
            str(frame_log),
            "--typed",
            *args,
        ]
        process = subprocess.Popen(
            command,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            env={**os.environ, **(env or {})},
        )
        stderr.close()
        line = _ready_line(process, timeout, frame_log.with_suffix(".err"))
        chat = SimChat(process, json.loads(line), self.config_dir, frame_log)
        self.chats.append(chat)
        return chat

    def stop_all(self) -> None:
        for chat in self.chats:
            chat.stop()


def _ready_line(process: subprocess.Popen[str], timeout: float, errors: Path) -> str:
    assert process.stdout is not None
    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    if not selector.select(timeout):
        process.kill()
        process.wait(5)
        raise RuntimeError(f"simulated chat not ready within {timeout}s; see {errors}")
    line = process.stdout.readline()
    if not line:
        process.wait(5)
        raise RuntimeError(f"simulated chat exited with {process.returncode}; see {errors}")
    return line


def codex_thread(codex_home: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """One saved thread in a simulated Codex home (`python -m hosts.sim codex`); its
    description as the simulator printed it."""
    done = subprocess.run(
        [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(codex_home), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, **(env or {})},
    )
    thread: dict[str, Any] = json.loads(done.stdout)
    return thread


@dataclass
class SimHolder:
    """One running `python -m hosts.sim codex-holder` and its ready file's contents."""

    process: subprocess.Popen[str]
    ready: dict[str, Any]

    @property
    def pid(self) -> int:
        return int(self.ready["pid"])

    @property
    def lock(self) -> Path:
        return Path(self.ready["lock"])

    def stop(self) -> int:
        """SIGTERM: the holder lets go cleanly (the lock file goes); its exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.wait(START_SECONDS)

    def kill(self) -> None:
        """SIGKILL: a turn in progress stays open, the lock file stays behind."""
        self.process.kill()
        self.process.wait(START_SECONDS)


def codex_holder(
    codex_home: Path, thread_id: str, *args: str, timeout: float = START_SECONDS
) -> SimHolder:
    """A process holding the thread open (`args` as `codex-holder` takes them: --poll,
    --answer); returns once it holds the writer lock. Raises RuntimeError, with its
    stderr, when it exits first (another writer, no such thread)."""
    ready_file = Path(tempfile.mkstemp(prefix="holder", suffix=".ready")[1])
    ready_file.unlink()
    command = [sys.executable, "-m", "hosts.sim", "codex-holder", "--codex-home", str(codex_home)]
    command += ["--thread", thread_id, "--ready-file", str(ready_file), *args]
    process = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not ready_file.exists():
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            _, errors = process.communicate()
            raise RuntimeError(f"codex-holder for {thread_id} not ready: {errors.strip()}")
        time.sleep(0.02)
    ready: dict[str, Any] = json.loads(ready_file.read_text())
    ready_file.unlink()
    return SimHolder(process, ready)
