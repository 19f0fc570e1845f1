"""The ledger's chores (stale envelopes, envelopes no door takes, obligations, the
notifier's alerts) run in the serve loop's round after a commit it can see, and when an
obligation falls due; a round woken only to look again for a commit not yet visible
(loop/news.py) runs none. Counted in chores, never in seconds."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from officekit import Office
from servekit import until

from coop_engine.loop.serve import Server
from coop_engine.models import Obligation
from hosts.fleet import Fleet

HOUR = 3600.0
LEGACY_DUE = 3 * HOUR  # a CLI take's obligation falls due three hours on


@contextmanager
def serving(office: Office) -> Iterator[tuple[Server, list[float]]]:
    """A coordinator over the office Mac whose passes wait an hour when nothing is due,
    and the monotonic times its chores ran."""
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, fleet, office.home, office.log.append, pass_interval=HOUR)
    ran: list[float] = []
    chores = server._chores

    def counted() -> None:
        ran.append(1.0)
        chores()

    server._chores = counted  # type: ignore[method-assign]
    thread = server.start_thread()
    try:
        until(lambda: ran, "the first round's chores")
        yield server, ran
    finally:
        server.stop()
        thread.join(15)


def test_a_commit_runs_the_chores_in_the_next_round(
    office: Office,
) -> None:
    with serving(office) as (server, ran):
        taken = office.engine.take_cli(
            office.engine.add_todo("Fix the importer")["id"], None, "office"
        )
        office.clock.advance(LEGACY_DUE)  # its obligation is due now, and no commit says so
        office.engine.add_todo("Any later commit")
        obligation = Obligation.get(Obligation.dispatch == taken["dispatch"])
        until(
            lambda: Obligation.get_by_id(obligation.id).state == "overdue",
            "the overdue obligation swept in the round after the commit",
        )


def test_the_rounds_that_only_look_again_for_a_commit_run_no_chore(office: Office) -> None:
    # After each file event the loop looks at the ledger again, at pauses doubling from
    # 5 ms (news.py), some of them in rounds of their own. A commit is one round of
    # chores; the looks after it find nothing new and run none.
    with serving(office) as (server, ran):
        news = server.news
        before = (len(ran), news.takes, news.events)
        office.engine.add_todo("One commit")
        until(lambda: news.takes >= before[1] + 9, "the looks after its event")
        chores, events = len(ran) - before[0], news.events - before[2]
        assert chores >= 1, "the commit's round ran the chores"
        assert chores <= events + 1, f"{chores} rounds of chores for {events} file events"
