"""News for the Macs' workers is a commit a reader can see, not a file event
(loop/news.py): the WAL's write comes before the commit is visible, so an event is only
a reason to look, at once and again for a while; and a commit is news once."""

from __future__ import annotations

import time
from pathlib import Path

import peewee as pw
import pytest
from officekit import Office
from servekit import until

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.news import LOOK_FIRST, SETTLE_SECONDS, LedgerNews
from coop_engine.loop.serve import Server
from coop_engine.models import Outbox
from hosts.fleet import Fleet

HOUR = 3600.0


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(open_ledger(tmp_path / "home"))


def test_an_event_alone_is_not_news_and_a_commit_is_news_once(engine: Engine) -> None:
    news = LedgerNews(engine.db)
    try:
        assert news.take(True, 0.0) is False  # told of a write that nobody can see yet
        engine.add_todo("Committed on another connection")
        assert news.take(False, 0.1) is True
        assert news.take(False, 0.2) is False
        assert news.take(True, 0.3) is False  # an event for what was already news
    finally:
        news.close()


def test_after_an_event_the_ledger_is_looked_at_again_until_it_settles(engine: Engine) -> None:
    news = LedgerNews(engine.db)
    try:
        news.take(True, 100.0)
        looks = []
        while (at := news.next_look()) is not None:
            looks.append(round(at - 100.0, 6))
            if len(looks) == 3:  # the commit the event told of becomes visible only now
                engine.add_todo("Visible after its event")
                assert news.take(False, at) is True
            else:
                assert news.take(False, at) is False
        pauses = [LOOK_FIRST * 2**k for k in range(len(looks))]
        assert looks == [round(sum(pauses[: k + 1]), 6) for k in range(len(looks))]
        assert looks[-2] < SETTLE_SECONDS <= looks[-1]
        news.take(True, 200.0)  # a later event starts the looking again
        assert news.next_look() == pytest.approx(200.0 + LOOK_FIRST)
    finally:
        news.close()


def test_a_ledger_whose_version_cannot_be_read_has_news_at_every_round() -> None:
    news = LedgerNews(pw.PostgresqlDatabase("never-connected"))
    assert [news.take(event, 0.0) for event in (False, True, False)] == [True, True, True]


def test_a_commit_visible_only_after_its_event_still_reaches_the_worker(
    office: Office, tmp_path: Path
) -> None:
    """The race made certain: serve watches a folder the ledger is not in, so the only
    file event is the test's own, told while the invitation's commit is still open;
    the commit then comes with no event of its own."""
    chat = office.macs["office"].start("--answer", "silent")
    watched = tmp_path / "watched-home"
    watched.mkdir()
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, fleet, watched, office.log.append, pass_interval=HOUR)
    thread = server.start_thread()
    try:
        worker = server.workers["office"]
        until(lambda: worker.passes >= 1 and server.news is not None, "the first pass")
        news = server.news
        assert news is not None
        todo = office.engine.add_todo("Sent once its commit is seen")["id"]
        with office.engine.db.atomic():
            outbox = office.engine.invite(todo, chat.ref, "office")["outbox"]
            (watched / "coop.db-wal").write_bytes(b"")  # the WAL's write, told at once
            until(lambda: news.events >= 1, "the event taken by a round")
            taken = news.takes
            until(lambda: news.takes > taken, "a later round looking again")
            assert queries.envelope(Outbox.get_by_id(outbox))["state"] == "pending"
        until(
            lambda: len(chat.frames()) >= 1,
            "the invitation sent",
            detail=lambda: (office.log, queries.envelope(Outbox.get_by_id(outbox))),
        )
    finally:
        server.stop()
        thread.join(15)


def test_a_commit_seen_in_the_pause_between_rounds_reaches_the_workers_then(
    office: Office, tmp_path: Path
) -> None:
    """The loop pauses between its rounds (a burst of writes is one round of chores), but
    the news does not wait for the next round: a commit its event announced, seen at a
    look during the pause, is told to the workers at that look."""
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, fleet, tmp_path, office.log.append, pass_interval=HOUR)
    news = LedgerNews(office.engine.db)
    try:
        news.take(True, time.monotonic())  # the event, before its commit is visible
        office.engine.add_todo("Seen between two rounds")
        server._gap(news, time.monotonic() + 1.0)
        assert server.workers["office"].ledger_news
    finally:
        news.close()
