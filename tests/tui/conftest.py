"""Fixtures of the app's tests: a deterministic fleet and ledger in the test's own
working folder, and snapshots kept in tests/__snapshots__/."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import pytest_textual_snapshot
from codexkit import MAC, CodexMac
from tuikit import Staged, stage

SNAPSHOTS = Path(__file__).resolve().parent.parent / "__snapshots__"


class CoopSnapshots(pytest_textual_snapshot.SVGImageExtension):
    """SVG snapshots under tests/__snapshots__/<test module>/ (STYLE.md)."""

    @classmethod
    def dirname(cls, *, test_location) -> str:  # type: ignore[no-untyped-def, override]
        return str(SNAPSHOTS / test_location.basename)


@pytest.fixture(autouse=True)
def _snapshots_in_tests_dir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", CoopSnapshots)


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's working folder: the staged fleet's paths are relative to it."""
    for name in ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)  # snapshots are taken in colour
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def staged(workdir: Path) -> Iterator[Staged]:
    fleet = stage(workdir)
    try:
        yield fleet
    finally:
        fleet.close()


@pytest.fixture
def studio(workdir: Path) -> Iterator[tuple[Staged, CodexMac]]:
    """The staged fleet plus `studio`, a Mac whose Codex home the simulator keeps."""
    mac = CodexMac()
    fleet = stage(workdir, hosts={MAC: mac.host})
    try:
        yield fleet, mac
    finally:
        mac.close()
        fleet.close()
