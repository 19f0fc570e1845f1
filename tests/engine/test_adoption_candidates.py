"""Who the adoption pass considers (seed 003): CLI takers, that is observed
compatibility rows with an active binding. A taker whose work was reported (its binding
released) is followed no longer, and a managed chat needs no adoption."""

from __future__ import annotations

from coop_engine.loop.adoption import candidates

from .support import Steps


def test_a_taker_whose_work_was_reported_is_no_longer_a_candidate(steps: Steps, clock) -> None:
    taker = steps.cli_taker()
    assert [s.id for s in candidates(clock.now)] == [taker["session"]]
    steps.engine.report_outcome(taker["todo"], "done", by="dad")
    assert candidates(clock.now) == []


def test_a_managed_chat_with_an_active_binding_is_not_a_candidate(steps: Steps, clock) -> None:
    accepted = steps.accepted()
    assert accepted["work"]
    assert candidates(clock.now) == []
