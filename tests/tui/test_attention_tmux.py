"""End to end in a real terminal (tmux): the app watching a real `coop serve` says in
its header that the coordinator runs; once the serve is SIGKILLed, within a few
seconds, that it stopped and deliveries are not moving."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from serving import started_serve
from test_demo_tmux import Terminal, terminal  # noqa: F401 (the fixture)

from coop_engine.db import open_ledger
from coop_engine.loop.demo import coop_command

pytestmark = pytest.mark.tui

DEADLINE = 30.0


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[Path, subprocess.Popen[bytes]]]:
    home = tmp_path / "coop-home"
    open_ledger(home)
    log = tmp_path / "serve.log"
    env = {
        "COOP_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
        "PATH": os.environ["PATH"],
    }
    env |= {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    process = started_serve([*coop_command(), "serve", "--interval", "0.2"], log, env)
    try:
        yield home, process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE)


def test_the_header_says_stopped_within_seconds_of_the_serve_being_sigkilled(
    terminal: Terminal,  # noqa: F811
    serve: tuple[Path, subprocess.Popen[bytes]],
) -> None:
    home, process = serve
    terminal.start([*coop_command(), "--home", str(home), "tui", "--attach"])
    named = f"coop serve (pid {process.pid})"
    screen = terminal.wait_text(f"coordinator running: {named}, last pass", timeout=DEADLINE)
    assert screen.splitlines()[0].count("coordinator running") == 1  # in the header
    process.kill()
    process.wait(DEADLINE)
    # The claim is asked every 3 s: "a few seconds", with room for a slow machine.
    screen = terminal.wait_text(f"coordinator stopped: {named}", timeout=DEADLINE)
    header = " ".join(screen.splitlines()[0].split())
    assert f"coordinator stopped: {named}, last seen" in header
    assert "coordinator running" not in " ".join(screen.split())
