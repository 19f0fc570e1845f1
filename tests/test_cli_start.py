"""`coop` starts often (by hand, in scripts, inside chats), so each command imports what
it uses and nothing more (issue 32, item 1): a command that only reads or writes the
ledger never loads the fleet, ssh, Codex, the app or the file watcher; `coop chats`
never loads the ledger, the app or the watcher, nor the hub's client and socket module
when no coordinator serves the home; `--version` and `completion` load neither ledger nor fleet,
nor the formatter of chats' text.

Each command runs in a new interpreter under `-X importtime`, which names every module
it imported, so nothing this test process has loaded can hide one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

from tests.refusing import RefusingChat

REPO = Path(__file__).resolve().parent.parent

# What a ledger-only command must never load: the fleet and its ssh (paramiko), the Codex
# door, the app (Textual, Rich) and the coordinator's file watcher (watchdog).
FLEET_AND_FACES = {
    "hosts.fleet",
    "hosts.ssh",
    "hosts.sshconnect",
    "paramiko",
    "hosts.mac.local",
    "hosts.mac.codex",
    "hosts.mac.codex_door",
    "hosts.mac.codex_records",
    "coop_tui",
    "textual",
    "rich",
    "watchdog",
    "coop_engine.loop.serve",
}
APP_AND_WATCHER = {"coop_tui", "textual", "rich", "watchdog", "coop_engine.loop.serve"}
# What `coop chats` never loads on a Mac without Codex (each costs milliseconds of every
# call): Codex's readers and sqlite3, hashlib (only a pass digests), dataclasses with
# inspect, typing (types are for the checker), threading (one Mac is asked in the
# caller's thread), subprocess (Linux reads /proc; macOS's one `ps` imports it then) and
# argparse with the gettext and locale it translates its words with (a well-formed line
# is read from the command table by cli/quick.py; argparse words help and errors).
NOT_FOR_A_LISTING = {
    "argparse",
    "gettext",
    "locale",
    "hosts.mac.codex",
    "hosts.mac.codex_door",
    "hosts.mac.codex_records",
    "sqlite3",
    "hashlib",
    "dataclasses",
    "inspect",
    "typing",
    "threading",
    "subprocess",
}

LEDGER_COMMANDS = [
    ("todo", "list", "--json"),
    ("todo", "add", "a title", "--json"),
    ("outbox", "--json"),
    ("sessions", "--json"),
    ("events", "--json"),
    ("obligations", "--json"),
    ("notifications", "--json"),
    ("status", "--json"),
    ("chief", "show"),
]


def imported_by(home: Path, tmp_path: Path, *args: str) -> set[str]:
    """Every module `python -m coop_engine.cli --home HOME ARGS` imported; the command
    must succeed. The chats it could list are in folders of the test's own (a Codex
    home only when the test made `tmp_path/codex`)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "CODEX_HOME": str(tmp_path / "codex"),
    }
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "coop_engine.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {
        line.rsplit("|", 1)[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }


@pytest.mark.parametrize("command", LEDGER_COMMANDS, ids=" ".join)
def test_a_ledger_command_loads_no_fleet_ssh_codex_app_or_watcher(
    coop_home: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    modules = imported_by(coop_home, tmp_path, *command)
    assert "peewee" in modules  # the ledger was opened: the probe saw the command run
    assert sorted(modules & FLEET_AND_FACES) == []


def test_coop_chats_loads_neither_ledger_nor_app_nor_the_hubs_socket(
    coop_home: Path, tmp_path: Path
) -> None:
    modules = imported_by(coop_home, tmp_path, "chats", "--json")
    assert "hosts.mac.local" in modules  # this Mac was asked
    assert sorted(modules & (APP_AND_WATCHER | {"peewee", "paramiko", "hosts.ssh"})) == []
    # No coordinator serves this home: there is no socket to connect to, and the hub's
    # client with socket.py costs milliseconds of every `coop chats`.
    assert sorted(modules & {"coop_engine.loop.hub", "socket"}) == []


@pytest.mark.parametrize("command", [("--version",), ("completion", "bash")], ids=" ".join)
def test_version_and_completion_load_neither_ledger_nor_fleet(
    coop_home: Path, tmp_path: Path, command: tuple[str, ...]
) -> None:
    modules = imported_by(coop_home, tmp_path, *command)
    assert "coop_engine.cli.main" in modules
    assert sorted(modules & (FLEET_AND_FACES | {"peewee", "coop_engine.loop.hub"})) == []
    # `eval "$(coop completion bash)"` runs in every new shell: nor the formatter of
    # chats' text (dataclasses costs milliseconds), which only a refusal needs.
    assert sorted(modules & {"coop_engine.formats", "dataclasses"}) == []


@pytest.fixture
def a_live_chat(tmp_path: Path) -> Iterator[None]:
    """One live chat in the test's Claude folder, so `coop chats` has a row to print."""
    sessions = tmp_path / "claude" / "sessions"
    chat = RefusingChat(sessions, Path(f"/tmp/coop-start-{os.getpid()}"), tmp_path, str(uuid4()))
    try:
        yield
    finally:
        chat.close()


@pytest.mark.parametrize("output", [("--json",), ()], ids=["json", "table"])
@pytest.mark.usefixtures("a_live_chat")
def test_coop_chats_on_a_mac_without_codex_loads_no_codex_sqlite_hashlib_or_dataclasses(
    coop_home: Path, tmp_path: Path, output: tuple[str, ...]
) -> None:
    modules = imported_by(coop_home, tmp_path, "chats", *output)
    assert "hosts.mac.codex_home" in modules  # Codex's home was looked for, and is not there
    assert sorted(modules & NOT_FOR_A_LISTING) == []
    # A table's cells go through the formatter; JSON escapes what a chat wrote itself.
    assert ("coop_engine.formats" in modules) == (output == ())


def test_coop_chats_on_a_mac_with_codex_reads_its_threads(coop_home: Path, tmp_path: Path) -> None:
    (tmp_path / "codex").mkdir()
    modules = imported_by(coop_home, tmp_path, "chats", "--json")
    assert {"hosts.mac.codex", "hosts.mac.codex_records"} <= modules
