"""End to end in a real terminal (tmux): live simulated chats whose names, transcripts
and held notices hold escape sequences (a window title, OSC 52's clipboard, a screen
clear, a C1 CSI), markup and a bidi override, watched by the real app (`coop tui`, its
coordinator inviting them), and a todo pasted with controls.

Every byte the app writes to the terminal is recorded (`tmux pipe-pane`): none of the
chats' sequences is ever in it. The pane's title never changes, the app never crashes,
the names show escaped (`\\x1b]2;PWNED\\x07`) in the panes, the inspector, the notices;
the pasted todo is refused in the door's one line and nothing is recorded; the CLI's
human output holds no control byte either."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from test_demo_tmux import Terminal, terminal  # noqa: F401 (the fixture)
from waiting import wait_until

from coop_engine.db import open_ledger
from coop_engine.formats import STEERING, one_line
from coop_engine.loop.demo import coop_command
from hosts.sim.launch import SimChat, SimFleet

pytestmark = pytest.mark.tui

DEADLINE = 60.0
ACCEPTS = "\x1b]2;PWNED\x07ev\x1b[2Jil\x9b31m\u202egnp.exe"  # the chat
HOLDS = "[/] [bold]x \x1b]52;c;cGFzdGU=\x07 \u2066ok"
SAID = "Done \x1b]2;PWNED-AGAIN\x07 \x1b[2J [/] \u202eevil"
HELD = "Held peer message — from cwkCoop · awaiting your approval «\x1b]2;PWNED-HELD\x07 ok»"
PASTED = "Fix \x9b2J the \u202eimporter\x07 test"
# What no byte the app writes may hold: the chats' and the paste's sequences, raw.
NEVER = (
    b"\x1b]2;PWNED",
    b"\x1b]52;",
    b"\x1b[2Jil",
    b"\x1b[2J [/]",
    "\u009b".encode(),
    "\u202e".encode(),
    "\u2066".encode(),
)


@pytest.fixture
def chats(tmp_path: Path) -> Iterator[tuple[SimFleet, SimChat, SimChat]]:
    """Two live chats on this Mac: one accepts peer messages, one holds them for its
    user; the first wrote escapes into its transcript and a held notice of its own."""
    fleet = SimFleet(tmp_path / "claude")
    try:
        accepts = fleet.start("--name", ACCEPTS, "--answer", "accept", "--history")
        holds = fleet.start("--name", HOLDS, "--inbound", "hold", "--dialog-expiry", "never")
        lines = [
            {"type": "assistant", "message": {"role": "assistant", "content": SAID}},
            {"type": "system", "subtype": "informational", "level": "warning", "content": HELD},
        ]
        wait_until(accepts.transcript.exists, "the chat's transcript")
        with accepts.transcript.open("a", encoding="utf-8") as transcript:
            transcript.writelines(json.dumps(line) + "\n" for line in lines)
        yield fleet, accepts, holds
    finally:
        fleet.stop_all()


def coop(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """The real CLI beside the app (a client of its coordinator), its bytes as printed."""
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config)}
    return subprocess.run(
        [*coop_command(), "--home", str(home), *args],
        capture_output=True,
        env=env,
        timeout=DEADLINE,
        check=True,
    )


def chat_row(screen: str, short: str) -> int:
    """The index, among the chats pane's rows, of the row holding the chat's short id."""
    lines = screen.splitlines()
    top = next(at for at, line in enumerate(lines) if "Chats ·" in line) + 2  # its header
    rows = lines[top : next(at for at in range(top, len(lines)) if "╰" in lines[at])]
    return next(at for at, row in enumerate(rows) if short in row)


def back(pane: Terminal, shown: str) -> None:
    """Escape from a screen or a dialog, and wait until it is gone."""
    pane.keys("Escape")
    pane.wait_for(lambda screen: shown not in screen, f"{shown!r} closed", DEADLINE)


def bare(text: str) -> str:
    return "".join(text.split())


def test_chats_with_escapes_in_their_names_transcripts_and_notices_steer_nothing_in_tmux(
    terminal: Terminal,  # noqa: F811
    chats: tuple[SimFleet, SimChat, SimChat],
    tmp_path: Path,
) -> None:
    fleet, accepts, holds = chats
    home = tmp_path / "coop-home"
    open_ledger(home)
    written = tmp_path / "pane-output"
    terminal.env["CLAUDE_CONFIG_DIR"] = str(fleet.config_dir)
    # The app starts once the pane's output is recorded: not one byte is missed.
    start = 'read go; exec "$@"'
    terminal.start(["sh", "-c", start, "sh", *coop_command(), "--home", str(home), "tui"])
    terminal.tmux("pipe-pane", "-O", "-t", "demo", f"cat >> {shlex.quote(str(written))}")
    title = terminal.tmux("display", "-p", "-t", "demo", "#{pane_title}").stdout

    def untouched(what: str) -> str:
        """The screen, once the pane's title is checked: no chat retitled it."""
        now = terminal.tmux("display", "-p", "-t", "demo", "#{pane_title}").stdout
        assert now == title, f"the pane's title changed ({what}): {now!r}"
        assert terminal.running(), f"the app ended ({what})"
        return terminal.screen()

    terminal.keys("Enter")
    shown = one_line(ACCEPTS)
    terminal.wait_text(shown, timeout=DEADLINE)
    terminal.wait_text(one_line(HOLDS), timeout=DEADLINE)
    screen = untouched("the chats pane")
    assert "Macs" in screen and "Outbox ·" in screen, "the screen was cleared"

    # The inspector: the chat's transcript and its held notice, printed.
    terminal.keys("2")
    time.sleep(0.5)  # a focus moves after the key: the next keys go to the chats pane
    row = chat_row(untouched("the chats pane"), accepts.session_id[:8])
    terminal.keys("g", *["Down"] * row, "c")
    terminal.wait_text("Registry entry", timeout=DEADLINE)
    terminal.wait_text(one_line(SAID), timeout=DEADLINE)
    screen = untouched("the inspector")
    assert bare(shown) in bare(screen.splitlines()[0])  # its header names the chat
    assert "\\x1b]2;PWNED-HELD\\x07" in screen
    back(terminal, "Registry entry")

    # Invited by the CLI: the holding chat's held notice is an alert, a toast, a notice.
    todo = coop(home, fleet.config_dir, "todo", "add", "Check the names").stdout.decode()
    # The holding chat first: the accepting one takes the todo as soon as its invitation
    # lands, and a taken todo cannot be offered again.
    for chat in (holds, accepts):
        coop(home, fleet.config_dir, "invite", todo.strip(), "--session", chat.ref)
    terminal.wait_text("Delivery held", timeout=DEADLINE)  # the toast's title
    untouched("the held notice's toast")
    terminal.keys("!")
    terminal.wait_text("notifications", timeout=DEADLINE)
    terminal.wait_for(lambda s: bare(one_line(HOLDS)) in bare(s), "the notice's chat", DEADLINE)
    untouched("the notices")
    back(terminal, "notifications")

    # A todo pasted with controls: refused in the door's words, kept, nothing recorded.
    terminal.keys("+")
    terminal.wait_text("Add a todo")
    paste = b"\x1b[200~" + PASTED.encode() + b"\x1b[201~"
    terminal.tmux("send-keys", "-t", "demo", "-H", *(f"{byte:02x}" for byte in paste))
    terminal.wait_text("Fix �2J the �importer␇ test")
    terminal.keys("Enter")
    terminal.wait_text("A todo title cannot hold U+009B (CSI) (character 5)")
    untouched("the add dialog")
    back(terminal, "Add a todo")
    todos = json.loads(coop(home, fleet.config_dir, "todo", "list", "--json").stdout)
    assert [todo["title"] for todo in todos] == ["Check the names"]

    # A filter of markup: the outbox's title says it as typed.
    terminal.keys("f")
    terminal.wait_text("Filter the outbox")
    terminal.keys("[/]", literal=True)
    terminal.keys("Enter")
    terminal.wait_text("matching '[/]'")
    untouched("the filter")

    # The CLI's human output: the names escaped, no control byte.
    listed = coop(home, fleet.config_dir, "chats").stdout
    assert shown.encode() in listed
    assert not STEERING.search(listed.decode().replace("\n", ""))

    terminal.keys("Escape")
    terminal.keys("q")
    deadline = time.monotonic() + 30
    while terminal.running() and time.monotonic() < deadline:
        time.sleep(0.1)
    sent = written.read_bytes()
    assert sent, "nothing recorded of the app's output"
    assert [raw for raw in NEVER if raw in sent] == []
    assert_names_were_drawn(sent)


def assert_names_were_drawn(sent: bytes) -> None:
    """The recording holds the app's drawing: the escaped name, as plain bytes."""
    assert "\\x1b]2;PWNED\\x07ev" in sent.decode("utf-8", "replace")
