"""Fixtures of the fault-injection runs, and the FAULTS report at the end of a run."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .kit import RESULTS, Fleet, tempdir


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


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not RESULTS:
        return
    write = terminalreporter.write_line
    for run in RESULTS:
        raised = f", raised {run.raised}" if run.raised else ""
        write(
            f"FAULT {run.point} [{run.flavour}]: ledger in the {run.outcome} state, "
            f"envelope {run.state}{raised}; next passes recovered: {run.recovered}"
        )
    points = {run.point for run in RESULTS}
    old = sum(run.outcome == "old" for run in RESULTS)
    recovered = sum(run.recovered for run in RESULTS)
    write(
        f"FAULTS points={len(points)} runs={len(RESULTS)} old={old} "
        f"new={len(RESULTS) - old} recovered={recovered}"
    )
