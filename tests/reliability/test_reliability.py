"""`make test`'s share of `make reliability`: the same harness, 50 SIGKILLs of
`coop serve` delivering to a simulated fleet (DESIGN.md section 11), and more until more
than 50 envelopes were delivered between the kills (a loaded machine needs more)."""

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
    # Work really flowed between the kills: the kills go on (past 50 on a loaded
    # machine) until more envelopes than kills were delivered between them.
    report = Harness(tmp_path, KILLS, seed=50, min_delivered=KILLS + 1).run()
    print(report.detail())
    print(report.line())
    assert report.kills >= KILLS
    assert report.line() == (
        f"RELIABILITY kills={report.kills} lost=0 duplicated=0 unsent_looking=0"
    )
    assert report.ok, report.detail()
    assert report.delivered_between_kills > KILLS, report.detail()
