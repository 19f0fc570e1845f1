"""The adoption pass looks only for CLI takers whose take is younger than 48 hours (seed
003: "observed compatibility rows ... with an active binding younger than 48 hours").
A take exactly 48 hours old is still looked for; one second older it is not, and the
pass leaves it as it was. Real simulated chats, the real adoption pass and host."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from coop_engine.loop.adoption import AdoptionPass, candidates
from coop_engine.models import Session
from hosts.mac.local import LocalHost
from hosts.sim.launch import SimFleet

from .support import START

WINDOW = 48 * 3600


@pytest.fixture
def chats(tmp_path: Path) -> Iterator[SimFleet]:
    fleet = SimFleet(tmp_path / "claude")
    try:
        yield fleet
    finally:
        fleet.stop_all()


def test_a_take_is_a_candidate_up_to_exactly_48_hours_and_not_a_second_after(steps) -> None:
    taker = steps.cli_taker()["session"]  # at START
    at_edge = [session.id for session in candidates(START + WINDOW)]
    past_edge = [session.id for session in candidates(START + WINDOW + 1)]
    assert (at_edge, past_edge) == ([taker], [])
    assert [session.id for session in candidates(START)] == [taker]


def test_the_pass_adopts_the_take_at_48_hours_and_leaves_the_one_a_second_older(
    steps, clock, chats: SimFleet, tmp_path: Path
) -> None:
    older_chat, newer_chat = chats.start(), chats.start()
    older = steps.cli_taker(chat=older_chat.ref)["session"]  # at START
    clock.advance(1)
    newer = steps.cli_taker(chat=newer_chat.ref)["session"]  # a second later
    clock.now = START + 1 + WINDOW  # the newer take is exactly 48 h old, the older past it
    host = LocalHost("office", config_dir=chats.config_dir, managed_dir=tmp_path / "managed")
    log: list[str] = []
    results = AdoptionPass(steps.engine, {"office": host}, "office", log.append).run()
    # The pass ran, and looked for the newer take only.
    assert [(r["session"], r["result"]) for r in results] == [
        (newer_chat.ref, "adopted at generation 2 on office")
    ]
    assert Session.get_by_id(newer).mode == "managed"
    left = Session.get_by_id(older)
    assert (left.mode, left.surface, left.generation) == ("observed", "compatibility", 1)
    assert (left.last_tried_at, left.adoption) == (None, None)  # never even searched for
    assert not [line for line in log if older_chat.session_id in line]
