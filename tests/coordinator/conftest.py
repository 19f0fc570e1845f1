"""Fixtures of the coordinator tests: an office with several simulated Macs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from officekit import Office


@pytest.fixture
def office(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Office]:
    for name in ("PIPPA_COOP_SESSION", "PIPPA_COOP_HOST", "COOP_HOME", "CLAUDE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    office = Office(tmp_path)
    try:
        yield office
    finally:
        office.stop()
