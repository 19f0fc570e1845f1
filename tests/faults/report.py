"""The FAULTS report: a line per fault run and a total, at the end of the test run.

Under pytest-xdist the runs happen in a worker and the report is printed by the
controller: each worker hands its runs over as it finishes (`workeroutput`)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pytest


@dataclass
class Run:
    """What one fault run found; collected for the FAULTS line."""

    point: str
    flavour: str
    outcome: str  # old, or new: the command that recorded the failure
    raised: str | None
    state: str  # the envelope's state after the faulted pass
    recovered: bool


RESULTS: list[Run] = []


def pytest_sessionfinish(session: pytest.Session) -> None:
    output = getattr(session.config, "workeroutput", None)
    if output is not None:  # an xdist worker
        output["faults"] = [asdict(run) for run in RESULTS]


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """The controller's side: the runs of a worker that finished."""
    output = getattr(node, "workeroutput", None) or {}
    RESULTS.extend(Run(**run) for run in output.get("faults", []))


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
