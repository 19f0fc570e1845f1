"""A test that needs what this machine may lack (root, sshd, tmux, a Python 3.9, a mount,
../shared, the real Claude Code and Codex binaries, a PostgreSQL server): skipped on a
developer's machine with the reason, a failure naming the missing piece in CI.

One switch: CI sets COOP_REQUIRE_REAL_CLAUDE=1 (`.ci/run`), and `make test` provides
every prerequisite (scripts/ensure-system-programs). COOP_REQUIRE_REAL_CODEX=1, older,
means the same. Under the switch the only skips allowed are those on ALLOWED_SKIPS; any
other skip, wherever it comes from, is turned into a failure by tests/conftest.py.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NoReturn

import pytest

CI_SWITCH = "COOP_REQUIRE_REAL_CLAUDE"
ALIASES = ("COOP_REQUIRE_REAL_CODEX",)

# Where ../shared is: beside the checkout, or where COOP_TEST_SHARED says (a test of the
# switch points it at a folder that does not exist).
SHARED_ENV = "COOP_TEST_SHARED"

# The reasons a skip may give in CI: the PostgreSQL variants of the properties of the
# SQLite ledger file (tests/engine/conftest.py). Nothing else.
ALLOWED_SKIPS = ("a property of the SQLite ledger file",)


def required() -> bool:
    """Whether this run is CI's: every prerequisite must be there."""
    return any(os.environ.get(name) == "1" for name in (CI_SWITCH, *ALIASES))


def missing(what: str) -> NoReturn:
    """Skip (or, in CI, fail) because `what` is not there."""
    if required():
        pytest.fail(f"required in CI but missing: {what}", pytrace=False)
    pytest.skip(what)


def allowed_skip(reason: str) -> bool:
    """Whether a skip with this reason may stand in CI."""
    return reason.removeprefix("Skipped: ").strip() in ALLOWED_SKIPS


def shared() -> Path:
    """The shared/ folder beside this checkout (its fixtures: real transcripts, rollouts
    and the hand-written shapes)."""
    named = os.environ.get(SHARED_ENV)
    return Path(named) if named else Path(__file__).resolve().parents[2] / "shared"


def shared_fixtures() -> Path:
    """../shared/fixtures, or `missing` naming it."""
    fixtures = shared() / "fixtures"
    if not fixtures.is_dir():
        missing(f"{fixtures} (../shared/fixtures beside this checkout)")
    return fixtures


# --- the CI switch's guard: pytest hooks, imported by tests/conftest.py ----------------


def _skip_reason(longrepr: object) -> str:
    """The reason a skip report gives (pytest keeps it as (path, line, "Skipped: ...")."""
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2])
    return str(longrepr)


def _refused(reason: str) -> str:
    return (
        f"skipped in CI ({CI_SWITCH}=1 allows no skip but the PostgreSQL variants of the "
        f"SQLite file's properties): {reason.removeprefix('Skipped: ')}"
    )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """Under the switch, a skip not on ALLOWED_SKIPS is reported as a failure naming it."""
    report = yield
    if report.skipped and not hasattr(report, "wasxfail") and required():
        reason = _skip_reason(report.longrepr)
        if not allowed_skip(reason):
            report.outcome = "failed"
            report.longrepr = _refused(reason)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> object:
    """The same for a whole module skipped while it was collected."""
    report = yield
    if report.skipped and required():
        reason = _skip_reason(report.longrepr)
        if not allowed_skip(reason):
            report.outcome = "failed"
            report.longrepr = _refused(reason)
    return report
