"""Fixtures every test directory may use: a private Coop home and the real `coop` CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The FAULTS report, printed by the one process that prints (xdist's controller).
from faults.report import pytest_sessionfinish, pytest_terminal_summary, pytest_testnodedown

# The suite's one PostgreSQL server per process: each test resets the database it uses.
from pgserver import PgServer, start_or_skip

# Under CI's switch, every skip not on prerequisites.ALLOWED_SKIPS fails, naming itself.
from prerequisites import pytest_make_collect_report, pytest_runtest_makereport

__all__ = [
    "pytest_make_collect_report",
    "pytest_runtest_makereport",
    "pytest_sessionfinish",
    "pytest_terminal_summary",
    "pytest_testnodedown",
]

REPO = Path(__file__).resolve().parent.parent

# Variables that would point a test at someone's real state or fleet.
_OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")

RunCoop = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def postgresql_server() -> Iterator[PgServer]:
    """A real PostgreSQL for this test process (tests/pgserver.py), started once."""
    server = start_or_skip()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def coop_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh Coop home (not yet created, so Coop creates it) and an environment
    that names no other ledger."""
    for name in _OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "coop-home"


@pytest.fixture
def run_coop(coop_home: Path) -> RunCoop:
    """Run the real CLI in a subprocess: `run_coop("todo", "list", "--json")`.

    `--home` is passed unless `home=None`; `env` adds variables."""

    def run(
        *args: str,
        home: Path | None = coop_home,
        env: dict[str, str] | None = None,
        timeout: float = 30,
    ) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, "-m", "coop_engine.cli"]
        if home is not None:
            argv += ["--home", str(home)]
        return subprocess.run(
            [*argv, *args],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={**os.environ, **(env or {})},
            timeout=timeout,
        )

    return run
