"""CI's one switch (tests/prerequisites.py): without it a missing prerequisite skips with
its reason; with it the same test fails naming the missing piece, and any other skip
that is not on the allow-list (the PostgreSQL variants of the SQLite file's properties)
fails too, so that no skip creeps into CI unseen. Each case runs pytest in a subprocess,
with the switch set or cleared whatever this run's own environment says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from prerequisites import ALIASES, CI_SWITCH, SHARED_ENV

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
RECEIPTS = (
    "tests/door/test_receipts.py::"
    "test_idle_shape_is_a_receipt_by_origin_msg_id_and_the_torn_tail_waits"
)

SKIPS = """
import pytest


def test_a_plain_skip():
    pytest.skip("a piece this machine lacks")


@pytest.mark.skipif(True, reason="a condition that holds here")
def test_a_skipif():
    pass


def test_the_postgresql_variant():
    pytest.skip("a property of the SQLite ledger file")
"""


def pytest_run(*args: str, switch: bool, cwd: Path = REPO, **env: str) -> str:
    """pytest's output, run with CI's switch set (or cleared) and `env` added."""
    environment = {k: v for k, v in os.environ.items() if k not in (CI_SWITCH, *ALIASES)}
    if switch:
        environment[CI_SWITCH] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env={**environment, **env},
        timeout=120,
    )
    return done.stdout + done.stderr


def test_a_missing_shared_folder_skips_on_a_developers_machine(tmp_path: Path) -> None:
    out = pytest_run(RECEIPTS, switch=False, **{SHARED_ENV: str(tmp_path / "no-shared")})
    assert "1 skipped" in out, out
    assert f"{tmp_path / 'no-shared' / 'fixtures'} (../shared/fixtures beside this" in out


def test_a_missing_shared_folder_fails_in_ci_naming_it(tmp_path: Path) -> None:
    out = pytest_run(RECEIPTS, switch=True, **{SHARED_ENV: str(tmp_path / "no-shared")})
    assert "1 error" in out, out  # the fixture that needs it fails
    assert f"required in CI but missing: {tmp_path / 'no-shared' / 'fixtures'}" in out


def test_in_ci_every_skip_but_the_allowed_ones_fails_naming_its_reason(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\n"
        "from prerequisites import pytest_make_collect_report, pytest_runtest_makereport\n"
    )
    (tmp_path / "test_skips.py").write_text(SKIPS)
    quiet = pytest_run("test_skips.py", switch=False, cwd=tmp_path)
    assert "3 skipped" in quiet, quiet
    loud = pytest_run("test_skips.py", switch=True, cwd=tmp_path)
    assert "1 failed, 1 skipped, 1 error" in loud, loud
    assert "skipped in CI" in loud and "a piece this machine lacks" in loud, loud
    assert "a condition that holds here" in loud, loud
    assert "SKIPPED [1] test_skips.py:15: a property of the SQLite ledger file" in loud, loud
