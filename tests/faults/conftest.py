"""Fixtures of the fault-injection runs (their FAULTS report: report.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from .kit import Fleet, tempdir


@pytest.fixture(scope="session")
def fault_root() -> Iterator[Path]:
    root = tempdir("coop-faults-")
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def fleet(fault_root: Path) -> Iterator[Fleet]:
    fleet = Fleet(fault_root)
    try:
        yield fleet
    finally:
        fleet.stop()
