"""A pass never dies of a refusal, and serve dies only of Coop's own crash: a real
`coop serve` whose pass step is made to fail, while a file says how."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from servekit import Ledger, Serve, until

from coop_engine.db import open_ledger
from coop_engine.loop.claim import SqliteClaim

OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")
# `coop serve` whose every pass raises what the file at argv[1] names, while it exists.
FAILING_SERVE = """
import sys
from pathlib import Path

import peewee as pw

from coop_engine.cli.main import main
from coop_engine.errors import Conflict
from hosts.mac.host import HostError
from coop_engine.loop.coordinator import Coordinator

MAKE = {
    "rule": Conflict,
    "mac": lambda why: HostError("laptop", why),
    "ledger": pw.OperationalError,
    "bug": ZeroDivisionError,
}
cause, pass_mac = Path(sys.argv[1]), Coordinator.pass_mac

def failing_pass(self, *args, **kwargs):
    if cause.exists():
        kind, _, why = cause.read_text().partition(" ")
        raise MAKE[kind](why)
    return pass_mac(self, *args, **kwargs)

Coordinator.pass_mac = failing_pass
sys.exit(main(["serve", "--interval", "0.05"]))
"""


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    for name in OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)
    return Ledger(tmp_path / "home")


def failing_serve(ledger: Ledger, tmp_path: Path, cause: str) -> tuple[Serve, Path]:
    made = tmp_path / "cause"
    made.write_text(cause)
    argv = [sys.executable, "-c", FAILING_SERVE, str(made)]
    return Serve(ledger, tmp_path / "serve.log", argv).started(), made


def passes_after(ledger: Ledger, count: int) -> None:
    """Wait until serve has made `count` more passes (each beats the heartbeat)."""
    claim = SqliteClaim(open_ledger(ledger.home))
    beats: set[float | None] = set()

    def beaten() -> bool:
        holder = claim.look().holder
        beats.add(holder.last_pass_at if holder else None)
        return len(beats) > count

    until(beaten, f"{count} more passes")


@pytest.mark.parametrize(
    "kind, told",
    [
        ("rule", "a pass on office was refused: {why}; the next pass tries again"),
        ("mac", "a pass on office failed on a Mac: laptop: {why}; the next pass tries again"),
        ("ledger", "a pass on office failed on the ledger: {why}; the next pass tries again"),
    ],
)
def test_a_refused_pass_is_told_once_per_cause_and_serve_goes_on(
    ledger: Ledger, tmp_path: Path, kind: str, told: str
) -> None:
    server, cause = failing_serve(ledger, tmp_path, f"{kind} the first cause")
    try:
        first = told.format(why="the first cause")
        server.wait_for(first)
        passes_after(ledger, 5)
        cause.write_text(f"{kind} another cause")
        second = told.format(why="another cause")
        server.wait_for(second)
        passes_after(ledger, 5)
        cause.unlink()
        server.wait_for("a pass on office ran again")
    finally:
        status = server.stop()
    log = server.output()
    assert status == 0, log
    assert log.count(first) == 1 and log.count(second) == 1, log
    assert log.count("a pass on office ran again") == 1
    if kind == "ledger":
        assert "a pass on office ran again: the ledger is writable again" in log
    assert "Traceback" not in log


def test_a_bug_in_coop_stops_serve_with_exit_1_and_its_traceback(
    ledger: Ledger, tmp_path: Path
) -> None:
    server, _ = failing_serve(ledger, tmp_path, "bug a bug the test made")
    try:
        assert server.process.wait(30) == 1
    finally:
        server.stop()
    log = server.output()
    assert "stopped by an error in Coop itself" in log
    assert "Traceback (most recent call last)" in log
    assert "ZeroDivisionError: a bug the test made" in log
    assert "failing_pass" in log  # the traceback reaches the code that failed
    # It let the claim go as it stopped: the next serve may start.
    assert ledger.coordinator()["state"] == "stopped"
