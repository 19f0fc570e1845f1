"""Fixtures for Codex thread lists: simulated homes, the real fixture rollouts, the real CLI.

- ``sim_codex(home, *args, env=None) -> dict``: runs ``python -m hosts.sim codex
  --codex-home HOME ARGS...`` in a subprocess and returns its one JSON line.
- ``fixture_rollouts``: the real rollouts in ../shared/fixtures/real.
- ``codex_binary`` (session): the real Codex CLI 0.171.0, fetched by npm into the test
  cache.
Each skips with a one-line reason when it cannot be had here, and fails naming it instead
under CI's switch (tests/prerequisites.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prerequisites import missing, shared_fixtures

from . import real_codex

REPO = Path(__file__).resolve().parents[2]

SimCodex = Callable[..., dict[str, Any]]


@pytest.fixture
def sim_codex() -> SimCodex:
    def run(home: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(home), *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            timeout=30,
        )
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert len(lines) == 1, done.stdout
        report: dict[str, Any] = json.loads(lines[0])
        return report

    return run


@pytest.fixture
def fixture_rollouts() -> list[Path]:
    real = shared_fixtures() / "real"
    found = sorted(real.glob("codex_*rollout-*.jsonl"))
    if not found:
        missing(f"the real Codex rollouts in {real}")
    return found


@pytest.fixture(scope="session")
def codex_binary() -> Path:
    try:
        real_codex.check_prerequisites()
        return real_codex.codex_binary()
    except real_codex.Unavailable as exc:
        missing(f"the real Codex CLI: {exc}")
