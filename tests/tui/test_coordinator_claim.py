"""The app and the ledger's claim: it watches a `coop serve` that holds the claim, says
so when that serve is gone rather than go on naming it, and in auto mode takes the
claim over; its own coordinator's end is said too."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from serving import started_serve
from textual.pilot import Pilot
from tuikit import drive, flat, screen_text, until

from coop_engine.db import open_ledger
from coop_engine.loop.claim import RUNNING, STOPPED, ledger_claim
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.office import Office
from coop_engine.models import database
from coop_tui.app import CoopApp
from hosts.fleet import Fleet

pytestmark = pytest.mark.tui

COOP = str(Path(sys.executable).with_name("coop"))
DEADLINE = 30.0


def coordinator_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "coordinator"]


@pytest.fixture
def home(workdir: Path) -> Path:
    home = workdir / "coop-home"
    open_ledger(home)
    return home


@pytest.fixture
def serve(home: Path, workdir: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A real `coop serve` on the app's ledger, serving (so holding the claim)."""
    log = workdir / "serve.log"
    env = {
        "COOP_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(workdir / "claude"),
        "PATH": os.environ["PATH"],
    }
    # The test's own import path, when it has one: `coop` runs the code under test.
    env |= {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}
    process = started_serve([COOP, "serve", "--interval", "0.2"], log, env)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE)


def app_over(home: Path, coordinator: str) -> CoopApp:
    app = CoopApp(home, Office(Fleet("office", {})), coordinator=coordinator)
    app.CLAIM_CHECK_SECONDS = 0.2
    return app


def says(app: Any, text: str) -> bool:
    return text in flat(screen_text(app))


def test_watching_a_serve_that_was_sigkilled_says_it_stopped_and_deliveries_wait(
    home: Path, serve: subprocess.Popen[bytes]
) -> None:
    app = app_over(home, "none")

    async def script(pilot: Pilot[None]) -> None:
        attached = f"attached to coop serve (pid {serve.pid})"
        await until(pilot, lambda: says(app, attached), DEADLINE, attached)
        serve.kill()
        serve.wait(DEADLINE)
        stopped = f"coop serve (pid {serve.pid}) stopped"
        await until(pilot, lambda: says(app, stopped), DEADLINE, stopped)
        assert says(app, "s ago: deliveries are not moving")
        assert not says(app, attached)
        assert not coordinator_threads()  # watch only: it never coordinates

    drive(app, script)


def test_the_header_names_the_lease_s_holder_its_epoch_and_how_long_since_it_renewed(
    home: Path, serve: subprocess.Popen[bytes]
) -> None:
    app = app_over(home, "none")

    async def script(pilot: Pilot[None]) -> None:
        named = f"coordinator running: coop serve (pid {serve.pid}), last pass "
        leased = re.compile(re.escape(named) + r"\d+ s ago, epoch 1, lease renewed \d+ s ago")
        await until(pilot, lambda: leased.search(flat(screen_text(app))), DEADLINE, named)
        assert leased.fullmatch(app.coordinator_words[0]), app.coordinator_words
        assert re.fullmatch(r"running, last pass \d+ s ago, epoch 1", app.coordinator_words[1])

    drive(app, script, size=(160, 30))


def test_an_app_in_auto_attaches_to_serve_and_takes_the_claim_over_when_serve_dies(
    home: Path, serve: subprocess.Popen[bytes]
) -> None:
    app = app_over(home, "auto")

    async def script(pilot: Pilot[None]) -> None:
        attached = f"attached to coop serve (pid {serve.pid})"
        await until(pilot, lambda: says(app, attached), DEADLINE, attached)
        assert not coordinator_threads()  # serve holds the claim: no second coordinator
        serve.kill()
        serve.wait(DEADLINE)
        took = f"coop serve (pid {serve.pid}) stopped: coordinator running in this app instead"
        await until(pilot, lambda: says(app, took), DEADLINE, took)
        assert coordinator_threads()
        look = ledger_claim(database.obj).look()
        assert look.state == RUNNING and look.holder is not None
        assert (look.holder.by, look.holder.pid) == ("app", os.getpid())
        await pilot.press("q")

    drive(app, script)
    assert not coordinator_threads()
    assert ledger_claim(database.obj).look().state == STOPPED  # the claim went with it


def test_the_app_s_own_coordinator_stopping_on_a_bug_is_said_on_its_status_line(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Coordinator, *args: Any, **kwargs: Any) -> None:
        raise ZeroDivisionError("a bug the test made")

    monkeypatch.setattr(Coordinator, "chores", broken)  # the ledger's side of every pass
    app = app_over(home, "auto")

    async def script(pilot: Pilot[None]) -> None:
        stopped = "the coordinator in this app stopped: ZeroDivisionError: a bug the test made"
        await until(pilot, lambda: says(app, stopped), DEADLINE, stopped)
        assert says(app, "deliveries are not moving")

    drive(app, script)
    assert ledger_claim(database.obj).look().state == STOPPED
