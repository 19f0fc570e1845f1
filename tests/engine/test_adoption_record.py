"""The adoption review keeps each search record (where each Mac was asked, what it
answered, when) on the session row, adopted or refused, until Dad dismisses it."""

from __future__ import annotations

from typing import Any

import pytest
from peewee import fn

from coop_engine import queries
from coop_engine.errors import Conflict
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.models import Event, Session
from coop_engine.queries.status import alerts_between

from .support import HOST


class Answers:
    """A Mac that answers find_session with a fixed number of matches."""

    def __init__(self, matches: int) -> None:
        self.matches = matches

    def find_session(self, vendor: str, native_id: str) -> dict[str, Any]:
        return {"matches": self.matches, "status": "idle", "name": "importer"}


def adopt(steps, hosts: dict[str, Answers]) -> dict[str, Any]:
    adoption = AdoptionPass(steps.engine, hosts, office="office", log=lambda line: None)
    taker = steps.cli_taker()
    return adoption.adopt_one(Session.get_by_id(taker["session"]))


def test_an_adopted_chat_stays_in_the_review_with_where_each_mac_was_asked(steps):
    result = adopt(steps, {HOST: Answers(1), "laptop": Answers(0)})
    assert result["result"].startswith("adopted at generation 2")
    [row] = queries.cli_takers()
    assert row["mode"] == "managed"
    assert row["adoption"]["result"] == result["result"]
    assert row["adoption"]["searched"][0] == {"host": HOST, "matches": 1}
    assert row["searched_at"] is not None


def test_a_refused_adoption_stays_in_the_review(steps):
    taker = steps.cli_taker()
    steps.engine.record_adoption_search(
        taker["session"],
        {"searched": [{"host": HOST, "matches": 1}], "found": HOST, "result": "refused: clash"},
        refused=True,
    )
    [row] = queries.cli_takers()
    assert row["adoption"]["result"] == "refused: clash"
    assert row["refused_until"] is not None


def test_dismissing_an_adoption_search_hides_it_and_keeps_the_record(steps):
    adopt(steps, {HOST: Answers(1)})
    session_id = Session.select().first().id
    steps.engine.dismiss_adoption(session_id, "dad")
    assert queries.cli_takers() == []
    kept = Session.get_by_id(session_id).adoption
    assert kept["result"].startswith("adopted") and kept["dismissed_at"] is not None
    assert Event.get(Event.command == "dismiss_adoption").who == "dad"


def test_a_chat_never_searched_has_nothing_to_dismiss(steps):
    taker = steps.cli_taker()
    with pytest.raises(Conflict):
        steps.engine.dismiss_adoption(taker["session"], "dad")


def test_an_adopted_chat_is_routine_and_a_refused_adoption_is_an_alert(steps):
    before = Event.select(fn.MAX(Event.id)).scalar() or 0
    adopted = adopt(steps, {HOST: Answers(1)})
    assert adopted["result"].startswith("adopted")
    assert alerts_between(before) == []  # routine: nothing for Dad to decide
    taker = steps.cli_taker()
    steps.engine.record_adoption_search(
        taker["session"],
        {"searched": [{"host": HOST, "matches": 1}], "found": HOST, "result": "refused: clash"},
        refused=True,
    )
    [alert] = alerts_between(before)
    assert (alert["kind"], alert["text"]) == ("adoption-refused", "adoption refused: clash")
