"""Fixtures of the hostile-input corpus."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hosts.sim.launch import SimFleet


@pytest.fixture
def sims(tmp_path: Path) -> Iterator[SimFleet]:
    fleet = SimFleet(tmp_path / "claude")
    fleet.config_dir.mkdir(parents=True)
    try:
        yield fleet
    finally:
        fleet.stop_all()


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A live process for registry entries to name."""
    process = subprocess.Popen(["sleep", "120"])
    try:
        yield process
    finally:
        process.kill()
        process.wait()
