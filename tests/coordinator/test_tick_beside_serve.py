"""`coop tick` beside a running coordinator is that coordinator's pass, never a second
one: asked over the hub, it returns once each Mac's worker finished a pass begun after
the ask (`Server.pass_now`), and says which Mac did not finish in time; a coordinator
that holds the ledger's claim without answering on the home's hub is not passed beside
(exit 1, one line), and nothing is sent."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from officekit import Office
from servekit import code_under_test
from waiting import wait_until

from coop_engine import lease
from coop_engine.errors import Fenced
from coop_engine.lease import NO_LEASE, Claimant
from coop_engine.loop.claim import Holder, ledger_claim
from coop_engine.loop.serve import Server
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost

COOP = str(Path(sys.executable).with_name("coop"))


def coop(office: Office, *argv: str) -> subprocess.CompletedProcess[str]:
    """The real CLI on the office's home, as the code under test."""
    return subprocess.run(
        [COOP, *argv],
        capture_output=True,
        text=True,
        env=office.env() | code_under_test(),
        timeout=60,
    )


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
        done = coop(office, "tick")
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


def test_tick_on_a_leased_ledger_nobody_serves_takes_the_lease_and_fences_the_old_holder(
    office: Office,
) -> None:
    """A coordinator that hung (its lease held, its lock gone with no one to renew it)
    and a `coop tick` by hand: the tick's pass takes the lease at the next epoch, so the
    hung holder's intents are fenced out once it wakes, and the tick delivers."""
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Tick under the lease")["id"]
    office.engine.invite(todo, chat.ref, "office")
    hung = Claimant(4242, "office", "serve")
    first = lease.take(office.engine.db, None, hung, 60.0, holder_gone=False, session_lock=True)
    assert first == 1
    # Its record, as its heartbeat left it: `coop status` names it.
    ledger_claim(office.engine.db)._write(Holder(4242, "office", "serve", time.time()))
    done = coop(office, "tick")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    wait_until(chat.frames, "the tick's frame read by its chat")
    seen = lease.read(office.engine.db)
    assert seen is not None
    assert (seen.epoch, seen.by, seen.lapsed) == (2, "tick", True)  # taken, then let go
    assert seen.fenced == {"pid": 4242, "host": "office", "epoch": 1}
    status = coop(office, "status")
    said = status.stdout.splitlines()
    assert re.match(
        r"coordinator  stopped: coop serve, pid 4242 on office \(fenced out at lease epoch 1 "
        r"by pid \d+ on office: it sends nothing\), last seen ",
        said[0],
    ), status.stdout
    assert "; fenced out: pid 4242 on office (epoch 1)" in said[2], status.stdout
    office.engine.epoch = first  # the hung holder, awake: its next intent writes nothing
    second = office.engine.add_todo("After the tick")["id"]
    outbox = office.engine.invite(second, chat.ref, "office")["outbox"]
    with pytest.raises(Fenced):
        office.engine.mark_uncertain(outbox, {})


def test_tick_on_a_ledger_never_leased_is_fenced_once_a_coordinator_takes_the_lease(
    office: Office,
) -> None:
    """On a ledger no coordinator ever leased, a tick sends under NO_LEASE: it goes
    through while there is still no lease, and is fenced out once there is one."""
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Tick with no lease")["id"]
    office.engine.invite(todo, chat.ref, "office")
    done = coop(office, "tick")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    wait_until(chat.frames, "the tick's frame read by its chat")
    assert lease.read(office.engine.db) is None  # a tick leaves a ledger it found unleased so
    office.engine.epoch = NO_LEASE
    second = office.engine.add_todo("A coordinator arrives")["id"]
    outbox = office.engine.invite(second, chat.ref, "office")["outbox"]
    serve = Claimant(4343, "office", "serve")
    lease.take(office.engine.db, None, serve, 60.0, holder_gone=False, session_lock=True)
    with pytest.raises(Fenced, match="took this ledger's lease"):
        office.engine.mark_uncertain(outbox, {})
