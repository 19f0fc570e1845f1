"""Every listing writing into a pipe its reader closed stops quietly, the way `cat` does:
no traceback, no error line on stderr (`coop chats | head -1`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from .support import Steps

REPO = Path(__file__).resolve().parents[2]
LISTINGS = [
    ("todo", "list"),
    ("todo", "list", "--json"),
    ("outbox",),
    ("events",),
    ("events", "--json"),
    ("sessions",),
    ("notifications",),
    ("chats",),
]


@pytest.mark.parametrize("argv", LISTINGS, ids=[" ".join(a) for a in LISTINGS])
def test_a_listing_into_a_closed_pipe_stops_quietly(
    argv: tuple[str, ...], steps: Steps, coop_home: Path, tmp_path: Path
) -> None:
    for index in range(300):  # more than a pipe's buffer holds
        steps.todo(f"Fix importer number {index} " + "x" * 150)
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first byte
    config = tmp_path / "claude"
    config.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", "--home", str(coop_home), *argv],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env={**os.environ, "CLAUDE_CONFIG_DIR": str(config)},
        timeout=60,
    )
    os.close(write)
    assert done.stderr == ""
    assert done.returncode in (0, 141)
