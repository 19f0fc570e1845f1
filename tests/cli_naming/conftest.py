"""Fixtures of the naming tests: simulated chats on this Mac, a Codex home of saved
threads, and the ledger the real `coop` of each test writes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from clock import Clock

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from hosts.sim.launch import SimFleet


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[SimFleet]:
    fleet = SimFleet(tmp_path / "claude")
    fleet.config_dir.mkdir(parents=True)
    try:
        yield fleet
    finally:
        fleet.stop_all()


@pytest.fixture
def codex_home(tmp_path: Path) -> Path:
    home = tmp_path / "codex"
    home.mkdir()
    return home


@pytest.fixture
def env(fleet: SimFleet, codex_home: Path) -> dict[str, str]:
    """What every `coop` of the test sees: this test's chats and threads, no others."""
    return {"CLAUDE_CONFIG_DIR": str(fleet.config_dir), "CODEX_HOME": str(codex_home)}


@pytest.fixture
def engine(coop_home: Path) -> Iterator[Engine]:
    """The test's own hand on the ledger the CLI uses (SQLite in the Coop home)."""
    ledger = open_ledger(coop_home)
    try:
        yield Engine(ledger, clock=Clock())
    finally:
        ledger.close()
