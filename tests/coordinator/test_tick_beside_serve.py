"""`coop tick` beside a running coordinator is that coordinator's pass, never a second
one: asked over the hub, it returns once each Mac's worker finished a pass begun after
the ask (`Server.pass_now`), and says which Mac did not finish in time; a coordinator
that holds the ledger's claim without answering on the home's hub is not passed beside
(exit 1, one line), and nothing is sent."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from officekit import Office
from servekit import code_under_test
from waiting import wait_until

from coop_engine.loop.claim import ledger_claim
from coop_engine.loop.serve import Server
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost

COOP = str(Path(sys.executable).with_name("coop"))


class Gated(LocalHost):
    """The office, whose surveys wait while its gate is closed, and are counted."""

    def __init__(self, config_dir: Path) -> None:
        super().__init__("office", config_dir=config_dir)
        self.open = threading.Event()
        self.open.set()
        self.surveys = 0

    def call(self, op: str, **args: Any) -> Any:
        if op == "survey":
            self.surveys += 1
            self.open.wait(30)
        return super().call(op, **args)


def test_a_pass_asked_of_serve_is_one_begun_after_the_ask_and_waited_for(
    office: Office,
) -> None:
    mac = Gated(office.macs["office"].config_dir)
    server = Server(office.engine, Fleet("office", {"office": mac}), office.home, office.log.append)
    thread = server.start_thread()
    try:
        wait_until(lambda: server.workers["office"].passes >= 1, "serve's first pass")
        mac.open.clear()
        stuck = server.pass_now(wait=1.0)
        assert stuck == {
            "macs": [
                {"host": "office", "passed": False, "reason": "its pass did not finish within 1 s"}
            ]
        }
        before = mac.surveys
        mac.open.set()
        assert server.pass_now() == {"macs": [{"host": "office", "passed": True, "reason": None}]}
        assert mac.surveys > before  # a survey taken after the ask, not an earlier pass
    finally:
        mac.open.set()
        server.stop()
        thread.join(30)


def test_tick_beside_a_coordinator_that_does_not_answer_on_the_hub_is_refused(
    office: Office,
) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Wait for the coordinator")["id"]
    office.engine.invite(todo, chat.ref, "office")
    claim = ledger_claim(office.engine.db)
    holder = claim.take("office", "serve")  # a coordinator whose hub could not start
    try:
        claim.beat(time.time())  # its record: who it is
        done = subprocess.run(
            [COOP, "tick"],
            capture_output=True,
            text=True,
            env=office.env() | code_under_test(),
            timeout=60,
        )
    finally:
        claim.release()
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"coop: coop serve (pid {holder.pid} on office) is running on this ledger and does"
        " not answer on this home's hub: coop tick runs no second pass beside it\n"
    )
    assert chat.frames() == []
    (row,) = office.engine.db.execute_sql("SELECT state FROM engine_outbox").fetchall()
    assert row == ("pending",)
