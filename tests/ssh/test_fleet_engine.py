"""The fleet engine over real sshd: each Mac served by its own worker, receipts pushed by
the Mac's long-poll, and a Mac that hangs (its link's proxy SIGSTOPped) costing only its
own envelopes, which wait, neither expired nor resent, until it answers again.

The coordinator runs with no interval to speak of (an hour): whatever moves here moved
because something changed, not because a timer came round."""

from __future__ import annotations

import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from fleet_macs import Mac
from netdelay import DelayProxy
from waiting import wait_until

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.serve import Server
from coop_engine.models import Outbox
from hosts.fleet import Fleet
from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.sim.launch import SimChat
from hosts.ssh import SshHost

pytestmark = pytest.mark.ssh

HOUR = 3600.0
# Seconds a request to a Mac may take before the Mac is unreachable: short, so a hang is
# seen soon, yet long enough that a loaded machine's helper start (a Python start over
# ssh) is not taken for one.
DEADLINE = 5.0
WAIT = 60.0  # bounds a hang only


class Office:
    """A ledger, an office Mac with no chats, and the Macs of the fleet."""

    def __init__(self, root: Path, hosts: dict[str, Host]) -> None:
        self.home = root / "coop-home"
        self.home.mkdir(parents=True)
        (root / "office-claude").mkdir()
        self.engine = Engine(open_ledger(self.home))
        office = LocalHost("office", config_dir=root / "office-claude")
        self.fleet = Fleet("office", {"office": office, **hosts})
        self.log: list[str] = []
        self.server: Server | None = None

    def wait(self, check: Callable[[], Any], what: str) -> Any:
        """`check()`'s first truthy value, or a failure that says where serve was stuck."""
        return wait_until(check, what, WAIT, detail=self.stuck)

    def stuck(self) -> tuple[list[str], dict[str, Any], dict[str, int]]:
        """For a wait's failure: the serve log, each Mac's worker as it was, and the
        rounds that looked for the ledger's news (and of them, those told of an event)."""
        server = self.server
        workers = {name: worker_state(server, name) for name in server.workers} if server else {}
        news = server.news if server else None
        looked = {"takes": news.takes, "events": news.events} if news else {}
        return self.log, workers, looked

    def invite(self, chat: SimChat, host: str, title: str) -> str:
        todo = self.engine.add_todo(title)["id"]
        return str(self.engine.invite(todo, chat.ref, host)["outbox"])

    def envelope(self, outbox_id: str) -> dict[str, Any]:
        return queries.envelope(Outbox.get_by_id(outbox_id))

    def said(self, text: str) -> bool:
        return any(text in line for line in self.log)

    def received(self, outbox_id: str) -> bool:
        return self.envelope(outbox_id)["facts"]["received"] is not None

    @contextmanager
    def serving(self) -> Iterator[Server]:
        server = Server(
            self.engine,
            self.fleet,
            self.home,
            self.log.append,
            pass_interval=HOUR,
            long_poll_seconds=3.0,
            retry_most=1.0,
        )
        thread = server.start_thread()
        try:
            self.server = server
            yield server
            assert thread.is_alive(), self.log
        finally:
            server.stop()
            thread.join(15)
            self.fleet.close()


@pytest.fixture
def proxied(start_mac: Callable[..., Mac]) -> Iterator[tuple[Mac, DelayProxy, SshHost]]:
    """The laptop, reached through a delaying proxy (10 ms each way) that can hang."""
    laptop = start_mac("laptop")
    proxy = DelayProxy(laptop.port, 0.01).start()
    laptop.client.trust_key(proxy.port, laptop.sshd.host_public)  # the same key, there
    host = laptop.ssh_host(port=proxy.port, deadline=DEADLINE, timeout=DEADLINE)
    yield laptop, proxy, host
    proxy.stop()


def worker_state(server: Server, name: str) -> dict[str, Any]:
    """What a Mac's worker was doing, for a failure's message: its passes, whether its
    threads live, and what its long-poll watches."""
    worker = server.workers[name]
    frames = sys._current_frames()
    return {
        "passes": worker.passes,
        "threads": {thread.name: thread.is_alive() for thread in worker._threads},
        "watching": worker.view.watching is not None,
        "surveys": worker.view.surveys,
        "woken": (worker.wake.is_set(), worker.ledger_news, worker.mac_news),
        "where": {
            thread.name: "".join(traceback.format_stack(frames[thread.ident])[-6:])
            for thread in worker._threads
            if thread.ident in frames
        },
    }


def never_lost(office: Office, outbox_id: str) -> None:
    """Not expired, and not resent: one envelope, one attempt, no successor."""
    row = office.envelope(outbox_id)
    assert row["state"] in ("pending", "uncertain", "delivered"), row
    assert row["resent_as"] is None, row


def test_a_transcript_appended_on_a_remote_mac_reaches_the_ledger_by_its_long_poll(
    tmp_path: Path, start_mac: Callable[..., Mac]
) -> None:
    studio = start_mac("studio")
    office = Office(tmp_path, {"studio": studio.ssh_host(deadline=DEADLINE)})
    chat = studio.chat("--think", "2")  # it answers two seconds after it took the invitation
    with office.serving() as server:
        outbox_id = office.invite(chat, "studio", "Pushed, not polled")
        office.wait(lambda: office.received(outbox_id), "the frame received")
        passes = server.workers["studio"].passes
        answered_with_the_receipt = office.envelope(outbox_id)["facts"]["accepted"] is not None
        # Nothing runs on a timer here (an hour): the answer, written on the studio once
        # the passes after the send are over, reaches the ledger by the studio's long-poll.
        # (On a machine so loaded that one survey read the receipt and the answer together,
        # the answer came with the receipt's pass, itself woken by the long-poll.)
        wait_until(
            lambda: office.envelope(outbox_id)["facts"]["accepted"], "the answer recorded", WAIT
        )
        if not answered_with_the_receipt:
            # The pass that recorded it is counted once it has returned.
            wait_until(
                lambda: server.workers["studio"].passes > passes, "the long-poll's pass", WAIT
            )
    assert office.envelope(outbox_id)["state"] == "delivered"


def test_a_mac_hung_during_a_pass_holds_up_only_its_own_envelopes(
    tmp_path: Path, start_mac: Callable[..., Mac], proxied: tuple[Mac, DelayProxy, SshHost]
) -> None:
    laptop, proxy, laptop_host = proxied
    studio = start_mac("studio")
    office = Office(tmp_path, {"laptop": laptop_host, "studio": studio.ssh_host()})
    on_laptop, on_studio = laptop.chat("--answer", "silent"), studio.chat("--answer", "silent")
    with office.serving():
        first = office.invite(on_laptop, "laptop", "Before the laptop hangs")
        office.wait(lambda: office.received(first), "the first frame received")
        proxy.hang()
        waiting = office.invite(on_laptop, "laptop", "While the laptop hangs")
        moving = office.invite(on_studio, "studio", "While the laptop hangs")
        office.wait(lambda: office.received(moving), "the studio's frame received")
        office.wait(lambda: office.said("laptop is unreachable"), "laptop unreachable")
        never_lost(office, waiting)
        assert office.envelope(waiting)["state"] == "pending"
        proxy.resume()
        office.wait(lambda: office.received(waiting), "the waiting frame received")
        # Said once the pass that sent it is over, which may be after the chat read it.
        office.wait(lambda: office.said("laptop answers again"), "laptop answers again")
    never_lost(office, first)
    assert len(on_laptop.frames()) == 2 and len(on_studio.frames()) == 1


class HangsAtTheThirdRead(Host):
    """The laptop, whose link hangs the moment the send's third read is asked."""

    def __init__(self, inner: SshHost, proxy: DelayProxy) -> None:
        self.inner, self.name, self.proxy = inner, inner.name, proxy
        self.hung = False

    def call(self, op: str, **args: Any) -> Any:
        if op == "send_frame" and not self.hung:
            self.hung = True
            self.proxy.hang()
        return self.inner.call(op, **args)

    def long_poller(self) -> Host:
        return self.inner.long_poller()

    def close(self) -> None:
        self.inner.close()


def test_a_mac_hung_during_a_sends_third_read_leaves_it_uncertain_never_resent(
    tmp_path: Path, start_mac: Callable[..., Mac], proxied: tuple[Mac, DelayProxy, SshHost]
) -> None:
    laptop, proxy, laptop_host = proxied
    studio = start_mac("studio")
    hanging = HangsAtTheThirdRead(laptop_host, proxy)
    office = Office(tmp_path, {"laptop": hanging, "studio": studio.ssh_host()})
    on_laptop, on_studio = laptop.chat("--answer", "silent"), studio.chat("--answer", "silent")
    with office.serving():
        cut_off = office.invite(on_laptop, "laptop", "Its request never answered")
        wait_until(
            lambda: hanging.hung and office.envelope(cut_off)["state"] == "uncertain",
            "the cut-off send uncertain",
            WAIT,
        )
        moving = office.invite(on_studio, "studio", "The studio goes on")
        office.wait(lambda: office.received(moving), "the studio's frame received")
        office.wait(lambda: office.said("send failed at request"), "the send failed")
        office.wait(lambda: office.said("laptop is unreachable"), "laptop unreachable")
        never_lost(office, cut_off)
        assert office.envelope(cut_off)["state"] == "uncertain"  # bytes may have left
        proxy.resume()
        office.wait(lambda: office.said("laptop answers again"), "laptop answers again")
        never_lost(office, cut_off)
    assert len(on_laptop.frames()) <= 1  # sent at most once: never again without a decision


def test_a_mac_hung_during_its_long_poll_rejoins_after_sigcont(
    tmp_path: Path, start_mac: Callable[..., Mac], proxied: tuple[Mac, DelayProxy, SshHost]
) -> None:
    laptop, proxy, laptop_host = proxied
    studio = start_mac("studio")
    office = Office(tmp_path, {"laptop": laptop_host, "studio": studio.ssh_host()})
    on_laptop, on_studio = laptop.chat("--answer", "silent"), studio.chat("--answer", "silent")
    with office.serving() as server:
        awaiting = office.invite(on_laptop, "laptop", "Delivered, then the link hangs")
        wait_until(
            lambda: office.received(awaiting),
            "the frame received",
            WAIT,
            detail=lambda: (office.log, worker_state(server, "laptop"), office.envelope(awaiting)),
        )
        proxy.hang()  # idle now: only the laptop's long-poll is outstanding
        wait_until(
            lambda: office.said("laptop is unreachable"),
            "laptop unreachable",
            WAIT,
            detail=lambda: (office.log, worker_state(server, "laptop")),
        )
        moving = office.invite(on_studio, "studio", "The studio goes on")
        office.wait(lambda: office.received(moving), "the studio's frame received")
        never_lost(office, awaiting)
        proxy.resume()
        office.wait(lambda: office.said("laptop answers again"), "laptop answers again")
        after = office.invite(on_laptop, "laptop", "After the laptop rejoined")
        wait_until(
            lambda: office.received(after),
            "the frame after rejoining received",
            WAIT,
            detail=lambda: (office.log, worker_state(server, "laptop"), office.envelope(after)),
        )
    never_lost(office, awaiting)
    assert office.envelope(awaiting)["state"] == "delivered"
