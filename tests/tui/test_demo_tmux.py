"""End to end: `coop demo` in a real terminal (tmux, 160x48), driven by keys.

The test starts its own tmux server (`tmux -S`, its socket in the test's folder), waits
for the panes, presses keys with `send-keys`, reads the screen with `capture-pane`, quits
with `q`, and checks that every process the demo started is gone and its temporary
folders with them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prerequisites import missing
from waiting import whole_json

from coop_engine.loop.demo import coop_command

pytestmark = pytest.mark.tui

WIDTH, HEIGHT = 160, 48


class Terminal:
    """One tmux server of our own (its socket in the test's folder), one session."""

    def __init__(self, socket: Path, env: dict[str, str]) -> None:
        self.socket = socket
        self.env = env

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["tmux", "-S", str(self.socket), "-f", "/dev/null", *args],
            capture_output=True,
            text=True,
            env=self.env,
            check=check,
            timeout=10,
        )

    def start(self, command: list[str]) -> None:
        size = ["-x", str(WIDTH), "-y", str(HEIGHT)]
        self.tmux("new-session", "-d", "-s", "demo", *size, *command)

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "demo").stdout

    def keys(self, *keys: str, literal: bool = False) -> None:
        self.tmux("send-keys", "-t", "demo", *(["-l"] if literal else []), *keys)

    def pane_pid(self) -> int:
        return int(self.tmux("display", "-p", "-t", "demo", "#{pane_pid}").stdout)

    def running(self) -> bool:
        return self.tmux("has-session", "-t", "demo", check=False).returncode == 0

    # A bound on a hang only: two suites side by side on two cores take their time.
    def wait_for(self, check: Callable[[str], bool], what: str, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if check(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {timeout}s: {what}\n{screen}")
            time.sleep(0.1)

    def wait_text(self, text: str, timeout: float = 60) -> str:
        return self.wait_for(lambda screen: text in " ".join(screen.split()), text, timeout)

    def stop(self) -> None:
        """Quit the demo the way a user does, so it stops what it started; only a demo
        that does not quit is hung up on (tmux's SIGHUP to its process group)."""
        if self.running():
            self.keys("Escape")
            self.keys("q")
            deadline = time.monotonic() + 15
            while self.running() and time.monotonic() < deadline:
                time.sleep(0.1)
        self.tmux("kill-server", check=False)


def descendants(root: int) -> set[int]:
    """Every live process under `root`, read from /proc."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def socket_folders(temp: Path) -> set[Path]:
    """The folders in /tmp holding the sockets the demo's chats publish in their
    registry entries (the demo's other folders are under `temp`); another demo running
    beside this one has its own."""
    found: set[Path] = set()
    for entry in temp.glob("coop-demo-*/*/claude/sessions/*.json"):
        published = whole_json(entry, f"a whole registry entry in {entry}") or {}
        socket = Path(published.get("messagingSocketPath") or "/")
        found |= {folder for folder in socket.parents if folder.parent == Path("/tmp")}
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    if shutil.which("tmux") is None:
        missing("tmux (make test installs it)")
    temp = tmp_path / "tmp"
    temp.mkdir()
    # Not COLUMNS and LINES either (pytest-xdist sets them in its workers): the app
    # would take them over the size of tmux's pane.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("COOP_", "PIPPA_", "TMUX", "CLAUDE_CONFIG_DIR"))
        and key not in ("COLUMNS", "LINES")
    }
    env.update(TMPDIR=str(temp), TERM="xterm-256color", LANG="C.UTF-8")
    terminal = Terminal(tmp_path / "tmux.sock", env)
    try:
        yield terminal
    finally:
        terminal.stop()


def row_of(screen: str, *words: str) -> int:
    """The index, among the outbox's rows, of the first row holding any of `words`."""
    rows = [line for line in screen.splitlines() if "invitation" in line or " work " in line]
    return next(index for index, line in enumerate(rows) if any(w in line for w in words))


def test_coop_demo_in_tmux_from_keys_to_quit_leaves_nothing_running(
    terminal: Terminal, tmp_path: Path
) -> None:
    terminal.start([*coop_command(), "demo"])
    screen = terminal.wait_for(
        lambda s: "Outbox ·" in s and "expired" in s and "reachable" in s and "try: " in s,
        "the three panes, live, and the status line with its hint",
        timeout=60,
    )
    assert "try: enter on an envelope" in screen
    assert "laptop" in screen and "office" in screen
    started = descendants(terminal.pane_pid())
    assert len(started) >= 8  # the simulated chats and the laptop's helper, at least
    sockets = socket_folders(tmp_path / "tmp")
    assert sockets, "no chat of the demo published its socket"

    # Delivery detail of the selected envelope, and back.
    terminal.keys("Enter")
    terminal.wait_text("Inbound prediction at send")
    terminal.wait_text("History")
    terminal.keys("Escape")
    terminal.wait_text("Outbox ·")

    # Only the proven losses; the cursor onto one not yet sent again.
    terminal.keys("f")
    terminal.wait_text("Filter the outbox")
    terminal.keys("expired", literal=True)
    terminal.keys("Enter")
    screen = terminal.wait_text("matching 'expired'")
    for _ in range(row_of(screen, "refused-by-receiver-policy", "receiver-idle-without")):
        terminal.keys("Down")
    terminal.keys("r")
    terminal.wait_text("Proven not delivered:")
    terminal.keys("y")
    terminal.wait_text("Sent again as")
    terminal.keys("r")
    terminal.wait_text("This delivery was already sent again")
    terminal.keys("Escape")
    terminal.wait_for(lambda s: "matching" not in s, "the filter cleared")

    # The adoption review lists the laptop's CLI taker.
    terminal.keys("a")
    terminal.wait_text("CLI takers")
    terminal.wait_for(lambda s: "observed" in s and "laptop" in s, "the laptop's CLI taker")
    terminal.keys("Escape")
    terminal.wait_text("Outbox ·")

    terminal.keys("q")
    deadline = time.monotonic() + 30
    while terminal.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not terminal.running(), "q did not end the demo"
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in started if alive(pid)], "processes left behind"
    assert not list((tmp_path / "tmp").iterdir()), "temporary folders left behind"
    assert not [folder for folder in sockets if folder.exists()], "socket folder left"


def test_coop_demo_says_its_home_before_the_app_and_after_it_and_the_cli_is_its_client(
    terminal: Terminal, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    terminal.start([*coop_command(), "demo", "--home", str(home)])
    terminal.tmux("set-option", "-t", "demo", "remain-on-exit", "on")  # to read it after
    terminal.wait_for(lambda s: "Outbox ·" in s and "try: " in s, "the app, live", timeout=60)

    def coop(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*coop_command(), "--home", str(home), *args],
            capture_output=True,
            text=True,
            env=terminal.env,
            timeout=120,
        )

    hosts = coop("hosts", "--json")
    assert hosts.returncode == 0, hosts.stderr
    assert [(row["host"], row["via"]) for row in json.loads(hosts.stdout)] == [
        ("office", "serve"),
        ("laptop", "serve"),
    ]
    outbox = json.loads(coop("outbox", "--json").stdout)
    locked = next(row for row in outbox if row["reason"] == "refused-by-receiver-policy")
    refused = coop("resend", locked["id"], "--by", "dad")
    assert refused.returncode == 1
    assert refused.stderr.startswith("coop: the receiver still refuses peer messages")
    assert len(json.loads(coop("outbox", "--json").stdout)) == len(outbox)

    terminal.keys("q")
    terminal.wait_for(lambda s: "its ledger stays in" in s, "the demo's last line", 30)
    # The screen the app leaves: the lines said before it took the screen, and after.
    said = terminal.tmux("capture-pane", "-p", "-J", "-t", "demo").stdout
    terminal.tmux("kill-session", "-t", "demo")
    assert f"coop demo: its home is {home} (kept after the demo)" in said
    assert f"coop demo: its ledger stays in {home}; its chats have stopped" in said
    assert said.index("its home is") < said.index("its ledger stays in")
    assert (home / "coop.db").exists()
