"""Run the real Claude Code offline, in tmux, as a receiver of cross-session frames.

``start_chat(binary, root, ChatConfig(...))`` prepares a private ``CLAUDE_CONFIG_DIR``
(launch.py), then starts, inside one loopback-only network namespace (``unshare -n``),
the scripted model server (model_server.py) and the chat, in a private tmux server. It
returns a ``Chat`` once the registry entry names an inbox socket that exists and a
status. ``Chat.stop()`` ends everything it started, by pid: the chat, every process of
its namespace, the model server, then the tmux server.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from namespaces import Held, netns

from .frames import coop_frame, write_frame
from .launch import ChatConfig, chat_args, check_prerequisites, launch_script, prepare_config

__all__ = ["Chat", "ChatConfig", "check_prerequisites", "coop_frame", "start_chat", "write_frame"]

READY_TIMEOUT = 30.0
HANG = 60.0  # bounds a wait for the chat's screen or transcript: only a hang
RESUBMIT_SECONDS = 5.0
T = TypeVar("T")


def escape_cwd(path: str) -> str:
    """The transcript folder name for a cwd (every char outside [a-zA-Z0-9] -> '-')."""
    return re.sub(r"[^a-zA-Z0-9]", "-", path)


def read_json(path: Path, attempts: int = 5) -> dict[str, Any] | None:
    """A JSON object from a file rewritten in place: retry a torn read, None if gone."""
    for _ in range(attempts):
        try:
            value = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError):
            time.sleep(0.02)
            continue
        return value if isinstance(value, dict) else None
    return None


def wait_until(predicate: Callable[[], T], timeout: float, what: str, interval: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


@dataclass
class Chat:
    """One running chat. Paths are all inside ``root`` except the tmux socket."""

    root: Path
    config_dir: Path
    project_dir: Path
    tmux_socket: Path
    tmux_pid: int
    pid: int = 0
    # The chat's own network namespace, held from its start until `stop()` is done
    # (namespaces.py): a process in it is this chat's, whatever its pid was before.
    namespace: Held | None = None
    tmux_birth: str | None = None
    session_id: str = ""
    socket_path: str = ""
    started: float = 0.0  # time.monotonic() at launch
    ready_seconds: float = 0.0

    # -- looking -------------------------------------------------------------
    def registry_path(self) -> Path:
        return self.config_dir / "sessions" / f"{self.pid}.json"

    def registry(self) -> dict[str, Any] | None:
        return read_json(self.registry_path())

    def transcript_path(self) -> Path:
        """Located by sessionId (DESIGN 5.5), falling back to the escaped cwd."""
        found = sorted(self.config_dir.glob(f"projects/*/{self.session_id}.jsonl"))
        if found:
            return found[0]
        folder = escape_cwd(str(self.project_dir))
        return self.config_dir / "projects" / folder / f"{self.session_id}.jsonl"

    def transcript_size(self) -> int:
        try:
            return self.transcript_path().stat().st_size
        except FileNotFoundError:
            return 0

    def transcript(self, offset: int = 0) -> list[dict[str, Any]]:
        """Complete lines from ``offset`` on, parsed; a torn last line waits."""
        try:
            with self.transcript_path().open("rb") as f:
                f.seek(offset)
                data = f.read()
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")[:-1]
        return [json.loads(line) for line in lines if line.strip()]

    def model_requests(self) -> list[dict[str, Any]]:
        path = self.root / "model.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def screen(self) -> str:
        done = subprocess.run(
            self._tmux("capture-pane", "-p", "-t", "chat"), capture_output=True, text=True
        )
        return done.stdout

    def alive(self) -> bool:
        return _alive(self.pid) and self._ours(self.pid)

    def _ours(self, pid: int) -> bool:
        """In the chat's namespace (a pid reused since belongs to another's)."""
        held = self.namespace.name if self.namespace else ""
        return bool(pid) and (not held or netns(pid) == held)

    def pane(self) -> str:
        """What tmux says of the pane: whether its process is dead, and its status."""
        done = subprocess.run(
            self._tmux("display-message", "-p", "-t", "chat", "#{pane_dead} #{pane_dead_status}"),
            capture_output=True,
            text=True,
        )
        dead, _, status = done.stdout.strip().partition(" ")
        return f"tmux: pane dead {dead or '?'}, exit status {status or '?'}"

    def wait_for(self, predicate: Callable[[], T], timeout: float, what: str) -> T:
        try:
            return wait_until(predicate, timeout, what)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n--- screen ---\n{self.screen()}") from None

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Wait until the registry names an inbox socket that exists, and a status."""

        def ready() -> bool:
            if not self.alive():
                raise RuntimeError(
                    f"the chat (pid {self.pid}) exited before it was ready; {self.pane()}\n"
                    f"--- screen ---\n{self.screen()}\n--- model.err ---\n"
                    + _tail(self.root / "model.err")
                )
            entry = self.registry()
            path = (entry or {}).get("messagingSocketPath")
            # status follows messagingSocketPath by ~0.1 s; wait for both.
            if not entry or not path or not os.path.exists(path) or "status" not in entry:
                return False
            self.session_id = entry["sessionId"]
            self.socket_path = path
            return True

        self.wait_for(ready, timeout, "the chat's inbox socket")
        self.ready_seconds = time.monotonic() - self.started

    # -- acting --------------------------------------------------------------
    def type(self, text: str, timeout: float = HANG) -> None:
        """Type one line into the chat's prompt and press Enter once the screen shows
        it. A chat that reads the text and the Enter in one go (a loaded machine) takes
        them as a paste, the Enter as a newline in the prompt, and never sends it."""
        subprocess.run(self._tmux("send-keys", "-t", "chat", "-l", text), check=True)
        head = text[:20]
        self.wait_for(lambda: head in self.screen(), timeout, f"the prompt to show {head!r}")
        self.keys("Enter")

    def submit(self, text: str, timeout: float = HANG) -> None:
        """`type` a prompt, then `wait_sent`."""
        self.type(text, timeout)
        self.wait_sent(text, timeout)

    def wait_sent(self, text: str, timeout: float = HANG) -> None:
        """Wait until the transcript has ``text`` as the human's prompt, pressing Enter
        again every few seconds while it has not come: a chat that took the first Enter
        as part of a paste leaves the text in its prompt (OBSERVED.md)."""
        pressed = time.monotonic()

        def recorded() -> bool:
            nonlocal pressed
            if any(_typed(entry) == text for entry in self.transcript()):
                return True
            if time.monotonic() - pressed > RESUBMIT_SECONDS:
                self.keys("Enter")
                pressed = time.monotonic()
            return False

        self.wait_for(recorded, timeout, f"the typed prompt {text[:20]!r} in the transcript")

    def keys(self, *keys: str) -> None:
        subprocess.run(self._tmux("send-keys", "-t", "chat", *keys), check=True)

    def set_script(self, script: dict[str, Any]) -> None:
        tmp = self.root / "script.json.tmp"
        tmp.write_text(json.dumps(script))
        tmp.replace(self.root / "script.json")

    def send(self, text: str, msg_id: str | None = None, **overrides: Any) -> dict[str, Any]:
        """Write a Coop frame to this chat's inbox; returns the frame written."""
        frame = {**coop_frame(self.session_id, text, msg_id), **overrides}
        write_frame(self.socket_path, frame)
        return frame

    def send_signal(self, sig: int) -> None:
        if self.alive():
            os.kill(self.pid, sig)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 5.0) -> None:
        """End everything this chat started, by pid, then its tmux server."""
        if self.alive():
            os.kill(self.pid, sig)
            try:
                wait_until(lambda: not self.alive(), timeout, "the chat to exit")
            except TimeoutError:
                self.send_signal(signal.SIGKILL)
        if self.namespace is not None:
            self.namespace.sweep()  # the model server and whatever the chat started
            self.namespace.release()
        subprocess.run(self._tmux("kill-server"), capture_output=True)
        if self.tmux_birth is not None and _birth(self.tmux_pid) == self.tmux_birth:
            _kill(self.tmux_pid)
        shutil.rmtree(self.tmux_socket.parent, ignore_errors=True)
        # A killed chat leaves its inbox socket behind for good; it was ours to remove.
        for path in {self.socket_path, f"/tmp/cc-socks/{self.pid}.sock"} - {""}:
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(path).st_mode):
                    os.unlink(path)

    def _tmux(self, *args: str) -> list[str]:
        return ["tmux", "-S", str(self.tmux_socket), *args]


def _typed(entry: dict[str, Any]) -> str | None:
    """The prompt of a user entry the human typed, stripped; None for any other."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    peer = (entry.get("origin") or {}).get("kind") == "peer"
    if entry.get("type") != "user" or peer or not isinstance(content, str):
        return None
    return content.strip()


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def _kill(pid: int) -> None:
    if pid and _alive(pid):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _tail(path: Path, size: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-size:]
    except OSError:
        return ""


def _birth(pid: int) -> str | None:
    """When the process started (field 22 of its stat): a pid reused has another."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _pids(tmux: list[str], env: dict[str, str]) -> tuple[int, int]:
    """The tmux server's pid and the pane's, asked until tmux says both."""

    def asked() -> tuple[int, int] | None:
        shown = subprocess.run(
            [*tmux, "display-message", "-p", "-t", "chat", "#{pid} #{pane_pid}"],
            capture_output=True,
            text=True,
            env=env,
        ).stdout.split()
        return (int(shown[0]), int(shown[1])) if len(shown) == 2 else None

    pids = wait_until(asked, READY_TIMEOUT, "tmux to name the pane's process")
    assert pids is not None
    return pids


def start_chat(
    binary: Path,
    root: Path,
    config: ChatConfig | None = None,
    wait: bool = True,
    config_dir: Path | None = None,
    project_dir: Path | None = None,
) -> Chat:
    """Start a chat; with ``wait``, wait until its inbox is published (stop it on failure).
    ``config_dir`` and ``project_dir``: a config dir shared by several chats, prepared
    with ``launch.prepare_config_dir``, and one of the project folders it trusts."""
    config = config or ChatConfig()
    root.mkdir(parents=True, exist_ok=True)
    config_dir, project_dir = prepare_config(root, config, config_dir, project_dir)
    launcher = root / "launch.sh"
    args = chat_args(binary, root, config)
    launcher.write_text(launch_script(root, config_dir, project_dir, args, config))
    # A dead pane stays on screen, so a failed start can show why.
    (root / "tmux.conf").write_text("set -g remain-on-exit on\n")
    # tmux sockets live in a short private folder: unix socket paths are limited.
    tmux_socket = Path(tempfile.mkdtemp(prefix="coop-tmux-", dir="/tmp")) / "sock"
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin",
        "HOME": str(root / "home"),
        "TERM": "xterm-256color",
        "LANG": "C.UTF-8",
        "SHELL": "/bin/bash",
    }
    tmux = ["tmux", "-S", str(tmux_socket), "-f", str(root / "tmux.conf")]
    started = time.monotonic()
    pane = ["unshare", "-n", "--", "/bin/sh", str(launcher)]
    new = ["new-session", "-d", "-s", "chat", "-x", "200", "-y", "50", *pane]
    subprocess.run([*tmux, *new], check=True, env=env)
    tmux_pid, pid = _pids(tmux, env)
    chat = Chat(
        root=root,
        config_dir=config_dir,
        project_dir=project_dir,
        tmux_socket=tmux_socket,
        tmux_pid=tmux_pid,
        pid=pid,
        namespace=Held(pid, lambda: not _alive(pid)),
        tmux_birth=_birth(tmux_pid),
        started=started,
    )
    if wait:
        try:
            chat.wait_ready()
        except BaseException:
            chat.stop(signal.SIGKILL)
            raise
    return chat
