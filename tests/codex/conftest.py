"""Fixtures for Codex thread lists: simulated homes, the real fixture rollouts, the real CLI.

- ``sim_codex(home, *args, env=None) -> dict``: runs ``python -m hosts.sim codex
  --codex-home HOME ARGS...`` in a subprocess and returns its one JSON line.
- ``fixture_rollouts``: the real rollouts in ../shared/fixtures/real (skips when absent).
- ``codex_binary`` (session): the real Codex CLI 0.171.0, fetched by npm into the test
  cache. Skips with a one-line reason when it cannot run here; fails instead when
  ``COOP_REQUIRE_REAL_CODEX=1`` or ``COOP_REQUIRE_REAL_CLAUDE=1``.
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
from prerequisites import missing

from . import real_codex

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO.parent / "shared" / "fixtures" / "real"

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
    found = sorted(FIXTURES.glob("codex_*rollout-*.jsonl"))
    if not found:
        missing(f"no real Codex rollouts in {FIXTURES}")
    return found


def _unavailable(reason: str) -> None:
    required = ("COOP_REQUIRE_REAL_CODEX", "COOP_REQUIRE_REAL_CLAUDE")
    if any(os.environ.get(name) == "1" for name in required):
        pytest.fail(f"real Codex CLI required but unavailable: {reason}", pytrace=False)
    pytest.skip(f"real Codex CLI unavailable: {reason}")


@pytest.fixture(scope="session")
def codex_binary() -> Path:
    try:
        real_codex.check_prerequisites()
        return real_codex.codex_binary()
    except real_codex.Unavailable as exc:
        _unavailable(str(exc))
        raise  # unreachable: skip and fail raise
