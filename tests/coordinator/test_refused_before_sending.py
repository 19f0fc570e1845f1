"""Refusals before connecting are bounded: a chat whose inbox refuses connections (a
live process whose socket passes the private checks, but nothing listens) gets no
frame, so nothing is uncertain: its envelope stays pending with its reason, is tried
again after waits that double up to five minutes, is told to Dad once, and `withdraw`
takes it back."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from officekit import Office
from refusing import RefusingChat
from servekit import until

from coop_engine import backoff
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.serve import Server
from coop_engine.models import Event, HostQueue, Notification, Outbox
from coop_engine.queries import envelope_row
from coop_engine.queries.status import alerts_between
from hosts.fleet import Fleet

SESSION = "6c1f0a52-7d3e-4b9a-8e21-5f4c3b2a1d09"


@pytest.fixture
def refusing_chat(office: Office, tmp_path: Path) -> Iterator[str]:
    """A live process registered as a chat whose socket is bound and never listened on:
    every connect is refused."""
    sessions = office.macs["office"].config_dir / "sessions"
    chat = RefusingChat(sessions, Path(f"/tmp/coop-refusing-{os.getpid()}"), tmp_path, SESSION)
    try:
        yield chat.ref
    finally:
        chat.close()


def test_a_chat_whose_inbox_refuses_is_tried_less_and_less_and_told_once(
    office: Office, refusing_chat: str
) -> None:
    todo = office.engine.add_todo("Fix the importer")["id"]
    outbox_id = office.engine.invite(todo, refusing_chat, "office")["outbox"]
    started = office.clock()
    for _ in range(600):  # ten minutes of passes, one a second
        office.coordinator.tick()
        office.clock.advance(1.0)
    attempts = HostQueue.select().where(HostQueue.outbox == outbox_id).count()
    # Again at once, then waits of 5, 10, 20, 40, 80, 160 s, then 300: tries at 0, 1, 6,
    # 16, 36, 76, 156, 316.
    assert 7 <= attempts <= 9, attempts
    row = Outbox.get_by_id(outbox_id)
    assert row.state == "pending" and row.transport_at is None
    assert row.refusals == attempts and "refused" in (row.last_error or "").lower()
    assert backoff.retry_at(row) is not None and backoff.retry_at(row) > office.clock()
    assert office.clock() - started >= 600
    shown = envelope_row(outbox_id)
    assert shown["state"] == "pending" and shown["waiting"].startswith("not sent (")
    assert shown["facts"]["transport"] is None  # nothing counted as sent
    # Told once: one notice and one alert, however many tries.
    assert [n.kind for n in Notification.select()] == ["not sent"]
    assert [a["kind"] for a in alerts_between(0)] == ["not-sent"]
    events = Event.select().where(Event.subject == f"outbox:{outbox_id}").count()
    assert events <= 2 * attempts + 4

    office.engine.withdraw(outbox_id, "dad")
    assert Outbox.get_by_id(outbox_id).state == "cancelled"


def test_the_first_refusal_is_tried_again_at_once_then_the_wait_doubles_to_five_minutes() -> None:
    waits = [backoff.wait_after(n) for n in range(0, 10)]
    assert waits == [0, 0, 5, 10, 20, 40, 80, 160, 300, 300]


def test_serve_on_the_real_clock_waits_for_the_next_try_without_a_pass(
    office: Office, refusing_chat: str
) -> None:
    """The cheap check beside `make bench`'s refusing_chat_cpu: a real coordinator loop
    on the real clock tries at once and again, then makes no pass while the next try
    waits (its own refusals' writes wake nothing; the issue measured a pass every 50 ms),
    and wakes by itself for that try."""
    engine = Engine(open_ledger(office.home))  # the real clock, as serve has
    todo = engine.add_todo("Fix the importer")["id"]
    outbox_id = engine.invite(todo, refusing_chat, "office")["outbox"]
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(engine, fleet, office.home, office.log.append, pass_interval=3600.0)
    passes: list[float] = []
    pass_mac = server.coordinator.pass_mac

    def counted(name: str, *args: object, **kwargs: object) -> bool:
        passes.append(time.monotonic())
        return pass_mac(name, *args, **kwargs)  # type: ignore[arg-type]

    server.coordinator.pass_mac = counted  # type: ignore[method-assign]

    def tries() -> int:
        return int(Outbox.get_by_id(outbox_id).refusals or 0)

    thread = server.start_thread()
    try:
        until(lambda: tries() >= 2, "the first try and the one at once after it")
        second, quiet = Outbox.get_by_id(outbox_id).refused_at, len(passes)
        time.sleep(3.0)  # inside the 5 s the third try waits
        assert tries() == 2
        assert len(passes) - quiet <= 1, f"{len(passes) - quiet} passes while it waited"
        until(lambda: tries() >= 3, "the third try, 5 s after the second", timeout=15)
        third = Outbox.get_by_id(outbox_id).refused_at
        assert backoff.FIRST_WAIT <= third - second < backoff.FIRST_WAIT + 3
    finally:
        server.stop()
        thread.join(15)
        engine.db.close()
    row = Outbox.get_by_id(outbox_id)
    assert row.state == "pending" and row.transport_at is None
    assert [n.kind for n in Notification.select()] == ["not sent"]
