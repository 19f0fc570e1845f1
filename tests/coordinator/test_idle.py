"""Idle means idle: with invitations delivered and awaiting answers and nothing changing,
the coordinator makes no pass; reading the files it watches (its own reads, anyone's)
wakes nothing; a change does, at once. Counted in passes, not seconds."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from officekit import Office
from servekit import until

from coop_engine import queries
from coop_engine.loop.serve import Server
from coop_engine.models import Outbox
from hosts.fleet import Fleet

HOUR = 3600.0


@contextmanager
def serving(office: Office) -> Iterator[list[str]]:
    """A coordinator over the office Mac alone, counting that Mac's passes."""
    passes: list[str] = []
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, fleet, office.home, office.log.append, pass_interval=HOUR)
    pass_mac = server.coordinator.pass_mac

    def counted(name: str, *args: Any, **kwargs: Any) -> bool:
        passes.append(name)
        return pass_mac(name, *args, **kwargs)

    server.coordinator.pass_mac = counted  # type: ignore[method-assign]
    thread = server.start_thread()
    try:
        yield passes
    finally:
        server.stop()
        thread.join(15)


def settled(passes: list[str]) -> int:
    """The count once no pass has run for a while (a burst of passes ends)."""
    while True:
        seen = len(passes)
        time.sleep(1.0)
        if len(passes) == seen:
            return seen


def read_everything(config_dir: Path, stop: threading.Event) -> None:
    """What a reader of the watched files does: list, open, read, close, over and over."""
    while not stop.is_set():
        for folder, _, files in os.walk(config_dir):
            for name in files:
                with open(os.path.join(folder, name), "rb") as handle:
                    handle.read()


@pytest.mark.parametrize("envelopes", [5])
def test_an_idle_coordinator_makes_no_pass_and_its_reads_wake_nothing(
    office: Office, envelopes: int
) -> None:
    chats = [office.macs["office"].start("--answer", "silent") for _ in range(envelopes)]
    invited = []
    for chat in chats:
        todo = office.engine.add_todo(f"Idle with {chat.session_id[:8]}")["id"]
        invited.append(office.engine.invite(todo, chat.ref, "office")["outbox"])
    with serving(office) as passes:
        until(
            lambda: all(
                queries.envelope(Outbox.get_by_id(i))["state"] == "delivered" for i in invited
            ),
            "every invitation delivered, awaiting its answer",
        )
        quiet = settled(passes)
        stop = threading.Event()
        reader = threading.Thread(
            target=read_everything, args=(office.macs["office"].config_dir, stop)
        )
        reader.start()
        try:
            time.sleep(2.0)
        finally:
            stop.set()
            reader.join()
        assert len(passes) == quiet, "reading the watched files woke the coordinator"
        # A change does wake it: a chat's transcript written.
        with chats[0].transcript.open("a") as transcript:
            transcript.write('{"type":"system","subtype":"note"}\n')
        until(lambda: len(passes) > quiet, "a pass for the transcript written")


def test_a_change_on_the_mac_arriving_with_ledger_news_is_not_lost(office: Office) -> None:
    """The ledger's news alone needs a pass only for an envelope to send; a change on the
    Mac always does, even when both wake the worker at the same moment."""
    from coop_engine.loop.macs import MacWorker

    stopping = threading.Event()
    crashes: list[BaseException] = []
    worker = MacWorker(
        "office",
        office.coordinator,
        lambda what, step: (step(), True)[1],
        stopping,
        HOUR,
        office.log.append,
        lambda: None,
        crashes.append,
        long_poll=False,
    ).start()
    try:

        def passes_reach(count: int) -> bool:
            with worker.progress:
                return worker.progress.wait_for(lambda: worker.passes >= count, timeout=15)

        assert passes_reach(1)
        worker.news()  # nothing to send: alone, this would be no reason for a pass
        worker.changed()
        assert passes_reach(2), "the Mac's change was dropped with the ledger's news"
    finally:
        stopping.set()
        worker.stop()
        worker.join(15)
    assert crashes == []
