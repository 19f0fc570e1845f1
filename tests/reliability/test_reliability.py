"""`make test`'s share of `make reliability`: the same harness, 50 SIGKILLs of
`coop serve` delivering to a simulated fleet (DESIGN.md section 11)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import Harness

pytestmark = pytest.mark.kill

KILLS = 50


def test_coop_serve_killed_50_times_loses_nothing_and_sends_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COOP_DATABASE_URL", raising=False)
    report = Harness(tmp_path, KILLS, seed=50).run()
    print(report.detail())
    print(report.line())
    assert report.line() == f"RELIABILITY kills={KILLS} lost=0 duplicated=0 unsent_looking=0"
    assert report.ok, report.detail()
    assert report.states["delivered"] > KILLS  # work really flowed between the kills
