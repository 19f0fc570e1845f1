"""The `coop` program leaves as soon as a fleet listing's output is flushed (issue 32,
item 1): the interpreter's teardown, freeing every module and object one by one, is
about 2 ms of each `coop chats`, and nobody is left to see it. Everything the listing
printed still reaches its reader, however full the pipe; every other command ends the
usual way. Each command runs as the `coop` program does (cli.main.run), in a new
interpreter whose exit hook says on stderr whether the teardown ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest

REPO = Path(__file__).resolve().parent
LONG_NAME = "n" * 1000  # 60 rows of it are more than a pipe's buffer holds
TORN_DOWN = "the interpreter's teardown ran"
AS_THE_PROGRAM = (
    "import atexit, sys\n"
    f"atexit.register(print, {TORN_DOWN!r}, file=sys.stderr)\n"
    "from coop_engine.cli.main import run\n"
    "sys.argv[0] = 'coop'\n"
    "run()\n"
)


# stdout buffered, as in a user's shell (a test runner may have set it unbuffered).
AS_A_USER = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}


@pytest.fixture(params=[1, 60], ids=["one-row-in-the-buffer", "rows-past-the-pipe"])
def claude_config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """A Claude folder with live processes registered as chats, each named long: one
    (its row waits in stdout's buffer until the flush) or 60 (more than the pipe holds:
    the command waits for its reader)."""
    sessions = tmp_path / "claude" / "sessions"
    sessions.mkdir(parents=True)
    processes = [subprocess.Popen(["sleep", "3600"]) for _ in range(request.param)]
    try:
        for process in processes:
            stat = Path(f"/proc/{process.pid}/stat").read_text().rpartition(")")[2].split()
            entry = {
                "pid": process.pid,
                "sessionId": str(uuid4()),
                "cwd": str(tmp_path),
                "startedAt": int(time.time() * 1000),
                "procStart": stat[19],
                "peerProtocol": 1,
                "kind": "interactive",
                "status": "idle",
                "name": LONG_NAME,
            }
            (sessions / f"{process.pid}.json").write_text(json.dumps(entry))
        yield sessions.parent
    finally:
        for process in processes:
            process.kill()
            process.wait()


def as_the_program(home: Path, config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", AS_THE_PROGRAM, "--home", str(home), *args],
        capture_output=True,  # a pipe, read as the command writes: it fills and drains
        text=True,
        cwd=REPO.parent,
        env={**AS_A_USER, "CLAUDE_CONFIG_DIR": str(config), "CODEX_HOME": str(config)},
        timeout=60,
    )


def test_coop_chats_leaves_without_the_teardown_once_every_row_reached_the_pipe(
    coop_home: Path, claude_config: Path
) -> None:
    done = as_the_program(coop_home, claude_config, "chats", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    chats = len(os.listdir(claude_config / "sessions"))
    assert len(rows) == chats and {row["name"] for row in rows} == {LONG_NAME}
    assert TORN_DOWN not in done.stderr


def test_a_ledger_command_ends_the_usual_way(coop_home: Path, claude_config: Path) -> None:
    done = as_the_program(coop_home, claude_config, "outbox", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
    assert TORN_DOWN in done.stderr


def test_a_refused_listing_says_why_and_ends_the_usual_way(
    coop_home: Path, claude_config: Path
) -> None:
    done = as_the_program(coop_home, claude_config, "chats", "--host", "nowhere")
    assert done.returncode == 1
    assert done.stderr.startswith("coop: ") and TORN_DOWN in done.stderr
