"""Beside a running coordinator the fleet commands ask it over its hub: the short ids
`coop chats` prints through it are accepted back by `coop chat show` through it too."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serving import started_serve

from hosts.sim.launch import SimFleet

from .namingkit import CLAUDE_A, CLAUDE_B, one_object, rows, table

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def serving(coop_home: Path, env: dict[str, str], tmp_path: Path) -> Iterator[Path]:
    """`coop serve` on the test's home until the test ends; its log."""
    log = tmp_path / "serve.log"
    argv = [sys.executable, "-m", "coop_engine.cli", "--home", str(coop_home), "serve"]
    process = started_serve(argv, log, {**os.environ, **env}, cwd=REPO)
    try:
        yield log
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def test_short_ids_printed_through_serve_are_accepted_back_through_serve(
    run_coop: Any, fleet: SimFleet, env: dict[str, str], serving: Path
) -> None:
    fleet.start("--session-id", CLAUDE_A, "--name", "reviewer-7")
    fleet.start("--session-id", CLAUDE_B, "--name", "reviewer-8")
    listed = rows(run_coop("chats", "--json", env=env))
    assert {row["via"] for row in listed} == {"serve"}
    assert {row["short_id"] for row in listed} == {"abcd1111-2", "abcd1111-9"}
    for row in table(run_coop("chats", env=env)):
        shown = one_object(run_coop("chat", "show", row["SESSION_ID"], "--json", env=env))
        assert shown["via"] == "serve"
        assert shown["chat"]["name"] == row["NAME"]
    done = run_coop("chat", "show", "abcd", env=env)
    assert done.returncode == 2 and "names 2 chats" in done.stderr
