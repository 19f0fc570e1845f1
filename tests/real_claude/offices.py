"""One Mac's worth of chats, real or simulated, and the Coop CLI pointed at them.

An ``Office`` is one ``CLAUDE_CONFIG_DIR`` with several project folders, a Coop home,
and chats started in it: the real Claude Code 2.1.328 (``RealOffice``, through
harness.py) or the simulator (``SimOffice``, ``python -m hosts.sim chat``). Both hand
out ``Receiver``s that are driven the same way, so a scenario runs unchanged against
either; ``coop(...)`` runs the real CLI in a subprocess with ``CLAUDE_CONFIG_DIR`` set
to the office's, exactly as a user's Coop sees the user's chats. Stopping an office
stops every process it started, by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from . import harness
from .frames import coop_frame, write_frame, write_frame_read
from .launch import ChatConfig, prepare_config_dir, write_user_settings

REPO = Path(__file__).resolve().parents[2]
PROJECTS = 6
START_SECONDS = 15.0
# Variables that would point Coop at someone's real state or fleet.
OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")
# A tool-calling turn: three Bash calls of 1.5 s at least, the real model server's
# COOP_WORK, then more until the test opens the chat's tool gate; the simulator gets the
# same rhythm from its options.
TOOL_CALLS, TOOL_SECONDS = 3, 1.5
SIM_TIMING = ("--think", "0.1", "--tool-interval", str(TOOL_SECONDS), "--busy-seconds", "3")
T = TypeVar("T")
Entry = dict[str, Any]


def wait_until(check: Callable[[], T], timeout: float, what: str) -> T:
    return harness.wait_until(check, timeout, what, interval=0.05)


def read_lines(path: Path | None) -> list[tuple[int, Entry]]:
    """A transcript's complete lines with their byte offsets; [] while it does not exist."""
    try:
        data = path.read_bytes() if path else b""
    except FileNotFoundError:
        return []
    out, offset = [], 0
    for line in data.split(b"\n")[:-1]:
        out.append((offset, json.loads(line)))
        offset += len(line) + 1
    return out


def _nudge_parent(pid: int) -> None:
    """Send SIGCHLD again to the parent of a zombie: the chats' tmux server now and then
    misses the one the kernel sent for a killed pane process (seen under load), and
    waits in poll() with the zombie unreaped for good."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return
    if fields[0] == "Z" and int(fields[1]) > 1:
        with contextlib.suppress(OSError):
            os.kill(int(fields[1]), signal.SIGCHLD)


def _state(pid: int) -> str:
    """A process's state letter and its parent's, for a failure message."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        parent = Path(f"/proc/{fields[1]}/stat").read_text().rsplit(")", 1)[1].split()
        command = Path(f"/proc/{fields[1]}/cmdline").read_bytes().split(b"\0")[0]
    except (OSError, IndexError) as exc:
        return f"unreadable ({exc})"
    return f"state {fields[0]}, parent {fields[1]} ({command.decode()!r}, state {parent[0]})"


class Receiver:
    """One chat, as a scenario drives it. Subclasses say how, for the real one or the
    simulated one."""

    pid: int
    session_id: str
    socket_path: str
    tool_gate: Path  # a tool-calling turn goes on until this file exists

    @property
    def ref(self) -> str:
        return f"claude:{self.session_id}"

    def transcript_path(self) -> Path | None:
        raise NotImplementedError

    def registry(self) -> Entry | None:
        raise NotImplementedError

    def alive(self) -> bool:
        return harness._alive(self.pid)

    def state(self) -> str:
        return "alive" if self.alive() else "gone"

    def lines(self) -> list[tuple[int, Entry]]:
        return read_lines(self.transcript_path())

    def transcript(self) -> list[Entry]:
        return [entry for _, entry in self.lines()]

    def send(self, text: str, *, read: bool = False, **overrides: Any) -> dict[str, Any]:
        """A frame through the harness's raw writer (not Coop's code); with `read`, once
        the chat has hung up on it (it has read and judged it)."""
        frame = {**coop_frame(self.session_id, text), **overrides}
        (write_frame_read if read else write_frame)(self.socket_path, frame)
        return frame

    def start_tool_turn(self) -> None:
        """The human types a prompt that sets off a turn of tool calls, which goes on
        until `end_tool_turn` (so that what must happen mid-turn does, however slow the
        machine)."""
        raise NotImplementedError

    def end_tool_turn(self) -> None:
        self.tool_gate.touch()

    def approve_held(self) -> None:
        """The human chooses Deliver in the held-message dialog."""
        raise NotImplementedError

    def exit_clean(self) -> None:
        """The human ends the chat normally."""
        raise NotImplementedError

    def kill(self) -> None:
        """SIGKILL, then wait until the process is reaped: until then it is a zombie,
        whose /proc entry (and start time) Coop still reads as a live process."""
        os.kill(self.pid, signal.SIGKILL)

        def reaped() -> bool:
            if not os.path.exists(f"/proc/{self.pid}"):
                return True
            _nudge_parent(self.pid)
            return False

        try:
            wait_until(reaped, 30, "the chat to go")
        except TimeoutError:
            raise TimeoutError(f"killed chat {self.pid} still there: {_state(self.pid)}") from None

    def stop(self) -> None:
        raise NotImplementedError


class RealReceiver(Receiver):
    def __init__(self, chat: harness.Chat, tool_gate: Path) -> None:
        self.chat = chat
        self.tool_gate = tool_gate

    @property
    def pid(self) -> int:  # type: ignore[override]
        return self.chat.pid

    @property
    def session_id(self) -> str:  # type: ignore[override]
        return self.chat.session_id

    @property
    def socket_path(self) -> str:  # type: ignore[override]
        return self.chat.socket_path

    def transcript_path(self) -> Path:
        return self.chat.transcript_path()

    def alive(self) -> bool:
        return self.chat.alive()

    def state(self) -> str:
        return f"{super().state()}; {self.chat.pane()}"

    def registry(self) -> Entry | None:
        return self.chat.registry()

    def start_tool_turn(self) -> None:
        self.chat.submit(f"COOP_WORK {TOOL_CALLS} {TOOL_SECONDS} UNTIL {self.tool_gate}")

    def approve_held(self) -> None:
        """Down to "Deliver", then Enter; a key pressed before the dialog listens is
        lost, so Down is pressed until the selection has moved."""

        def selected() -> bool:
            if "❯ Deliver" in self.chat.screen():
                return True
            self.chat.keys("Down")
            time.sleep(0.2)
            return "❯ Deliver" in self.chat.screen()

        self.chat.wait_for(lambda: "Deliver this message" in self.chat.screen(), 10, "the dialog")
        self.chat.wait_for(selected, 10, "Deliver to be selected")
        self.chat.keys("Enter")

    def exit_clean(self) -> None:
        self.chat.type("/exit")
        wait_until(lambda: not self.alive(), 60, "the chat to exit")  # bounds a hang

    def stop(self) -> None:
        self.chat.stop()


class SimReceiver(Receiver):
    def __init__(
        self, process: subprocess.Popen[bytes], ready: dict[str, Any], tool_gate: Path
    ) -> None:
        self.process = process
        self.tool_gate = tool_gate
        self.pid = int(ready["pid"])
        self.session_id = str(ready["session_id"])
        self.socket_path = str(ready["socket"])
        self._registry = Path(ready["registry"])
        self._transcript = Path(ready["transcript"])

    def transcript_path(self) -> Path:
        return self._transcript

    def registry(self) -> Entry | None:
        return harness.read_json(self._registry)

    def alive(self) -> bool:
        return self.process.poll() is None

    def start_tool_turn(self) -> None:
        os.kill(self.pid, signal.SIGUSR2)

    def approve_held(self) -> None:
        os.kill(self.pid, signal.SIGUSR1)

    def exit_clean(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        # A killed chat's socket stays behind, as a real one's does; it was ours.
        with contextlib.suppress(OSError):
            if stat.S_ISSOCK(os.lstat(self.socket_path).st_mode):
                os.unlink(self.socket_path)


class Office:
    """A config dir, its project folders, a Coop home, and the chats started in it."""

    backend = ""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_dir = root / "config"
        self.home = root / "coop-home"
        self.projects = [(root / f"project{n}").resolve() for n in range(PROJECTS)]
        for project in self.projects:
            project.mkdir(parents=True, exist_ok=True)
        self.receivers: list[Receiver] = []
        self.user_settings: dict[str, Any] = {}

    def next_tool_gate(self) -> Path:
        """The tool gate of the next chat started."""
        return self.root / f"tool-gate{len(self.receivers)}"

    def set_user_settings(self, settings: dict[str, Any]) -> None:
        self.user_settings = dict(settings)
        write_user_settings(self.config_dir, settings)

    def start(
        self,
        *,
        bypass: bool = False,
        settings_flag: dict[str, Any] | None = None,
        think: float | None = None,
    ) -> Receiver:
        """Start one chat in the next project folder and wait until it is reachable.
        ``think``: how long the simulator's answers take (the real model server is told
        with COOP_SLOW in the text instead)."""
        raise NotImplementedError

    def start_many(self, *specs: dict[str, Any]) -> list[Receiver]:
        return [self.start(**spec) for spec in specs]

    def _project(self) -> Path:
        return self.projects[len(self.receivers)]

    # --- the Coop CLI -----------------------------------------------------------------

    def coop(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in OUTSIDE_STATE}
        env["CLAUDE_CONFIG_DIR"] = str(self.config_dir)
        return subprocess.run(
            [sys.executable, "-m", "coop_engine.cli", "--home", str(self.home), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=60,
        )

    def coop_ok(self, *args: str) -> str:
        done = self.coop(*args)
        assert done.returncode == 0, f"coop {' '.join(args)}: {done.stderr}{self.chats_now()}"
        return done.stdout

    def chats_now(self) -> str:
        """Each chat's pid and whether it still lives, for a failure message."""
        return "".join(f"\n  chat pid {r.pid}: {r.state()}" for r in self.receivers)

    def coop_json(self, *args: str) -> Any:
        return json.loads(self.coop_ok(*args, "--json"))

    def tick(self, at: float | None = None) -> None:
        self.coop_ok("tick", *(["--at", repr(at)] if at is not None else []))

    def outbox(self) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = self.coop_json("outbox")
        return rows

    def envelope(self, outbox_id: str) -> dict[str, Any]:
        (row,) = [r for r in self.outbox() if r["id"] == outbox_id]
        return row

    def events(self, command: str, outbox_id: str | None = None) -> list[dict[str, Any]]:
        """Ledger events of one command, oldest first (about one envelope, if given)."""
        rows = self.coop_json("events", "--limit", "1000")
        return [
            e
            for e in reversed(rows)
            if e["command"] == command and (outbox_id is None or outbox_id in e["subject"])
        ]

    def tick_until(
        self, check: Callable[[list[dict[str, Any]]], bool], what: str, timeout: float = 30
    ) -> list[dict[str, Any]]:
        """Coordinator passes, as of the real time, until ``check(outbox rows)`` holds."""
        deadline = time.monotonic() + timeout
        while True:
            self.tick()
            rows = self.outbox()
            if check(rows):
                return rows
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; outbox: {rows}")
            time.sleep(0.1)

    def stop(self) -> None:
        for receiver in reversed(self.receivers):
            with contextlib.suppress(Exception):
                receiver.stop()


class RealOffice(Office):
    backend = "real"

    def __init__(self, root: Path, binary: Path) -> None:
        super().__init__(root)
        self.binary = binary
        prepare_config_dir(self.config_dir, self.projects, {})

    def start(
        self,
        *,
        bypass: bool = False,
        settings_flag: dict[str, Any] | None = None,
        think: float | None = None,
    ) -> Receiver:
        (receiver,) = self.start_many({"bypass": bypass, "settings_flag": settings_flag})
        return receiver

    def start_many(self, *specs: dict[str, Any]) -> list[Receiver]:
        """Start the chats at once, then wait for each (start-up overlaps)."""
        started: list[RealReceiver] = []
        for spec in specs:
            config = ChatConfig(
                bypass=spec.get("bypass", False), settings_flag=spec.get("settings_flag")
            )
            root = self.root / f"chat{len(self.receivers)}"
            chat = harness.start_chat(
                self.binary, root, config, False, self.config_dir, self._project()
            )
            receiver = RealReceiver(chat, self.next_tool_gate())
            self.receivers.append(receiver)
            started.append(receiver)
        for receiver in started:
            receiver.chat.wait_ready()
        return list(started)


class SimOffice(Office):
    backend = "sim"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.config_dir.mkdir(parents=True, exist_ok=True)
        write_user_settings(self.config_dir, {})

    def start(
        self,
        *,
        bypass: bool = False,
        settings_flag: dict[str, Any] | None = None,
        think: float | None = None,
    ) -> Receiver:
        gate = self.next_tool_gate()
        args = ["--config-dir", str(self.config_dir), "--cwd", str(self._project()), *SIM_TIMING]
        args += ["--tool-gate", str(gate)]
        if think is not None:
            args += ["--think", str(think)]
        if bypass:
            args.append("--dangerously-skip-permissions")
        if settings_flag is not None:
            flag_file = self.root / f"flag-settings{len(self.receivers)}.json"
            flag_file.write_text(json.dumps(settings_flag))
            args += ["--settings", str(flag_file)]
        env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
        err = open(self.root / f"sim{len(self.receivers)}.err", "wb")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "hosts.sim", "chat", *args],
            cwd=REPO,
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
        )
        err.close()
        assert process.stdout is not None
        ready = select.select([process.stdout], [], [], START_SECONDS)[0]
        line = process.stdout.readline() if ready else b""
        if not line:
            process.kill()
            process.wait(5)
            raise AssertionError(f"the simulated chat exited with {process.returncode}")
        receiver = SimReceiver(process, json.loads(line), gate)
        self.receivers.append(receiver)
        return receiver
