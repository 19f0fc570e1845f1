"""DESIGN.md section 4, handing out work: todos, accept, decline, the CLI take, outcomes
and obligations. One test per rule or refusal. Adoption is in test_rules_adoption.py."""

from __future__ import annotations

import pytest

from coop_engine.errors import (
    Conflict,
    CoopError,
    NotAuthorized,
)
from coop_engine.models import (
    Binding,
    Dispatch,
    Notification,
    Obligation,
    Outbox,
    Session,
    Todo,
)

from .support import CHAT, HOST, OTHER_CHAT, counts, row

HOUR = 3600.0


def outcome_obligation(dispatch_id: int) -> Obligation:
    return Obligation.get(Obligation.dispatch == dispatch_id)


# --- todos ----------------------------------------------------------------------------


def test_todo_ids_are_sequential_from_1(engine):
    assert [engine.add_todo(f"todo {n}")["id"] for n in range(1, 5)] == [1, 2, 3, 4]
    assert Todo.get_by_id(1).state == "open"


def test_a_todo_without_a_title_is_refused(engine):
    with pytest.raises(CoopError):
        engine.add_todo("   ")
    assert Todo.select().count() == 0


# --- accept: the one-transaction take -------------------------------------------------


def test_accept_with_the_wrong_nonce_is_refused(steps):
    invitation = steps.delivered_invitation()
    before = counts()
    with pytest.raises(Conflict, match="nonce does not match"):
        steps.engine.accept(invitation["outbox"], "not-the-nonce", {})
    assert counts() == before
    assert Dispatch.get_by_id(invitation["dispatch"]).state == "invited"


@pytest.mark.parametrize("sent", [False, True], ids=["pending", "uncertain"])
def test_accept_of_an_invitation_not_yet_delivered_is_refused(steps, sent):
    invitation = steps.invitation()
    if sent:
        steps.send(invitation["outbox"])
    with pytest.raises(Conflict, match="no receipt yet"):
        steps.engine.accept(invitation["outbox"], invitation["nonce"], {})
    assert Todo.get_by_id(invitation["todo"]).state == "invited"


def test_accept_takes_the_todo_binds_the_chat_and_enqueues_the_work(steps, clock):
    invitation = steps.delivered_invitation()
    clock.advance(42)
    result = steps.engine.accept(invitation["outbox"], invitation["nonce"], {"final": "ok"})
    assert result["accepted"] is True
    dispatch = Dispatch.get_by_id(invitation["dispatch"])
    assert (dispatch.state, dispatch.accepted_at) == ("accepted", clock.now)
    assert dispatch.todo.state == "taken"
    binding = Binding.get(Binding.dispatch == dispatch)
    assert (binding.session_id, binding.state, binding.generation) == (
        invitation["session"],
        "active",
        1,
    )
    obligation = outcome_obligation(dispatch.id)
    assert (obligation.due_at, obligation.state, obligation.legacy) == (
        clock.now + 2 * HOUR,
        "open",
        False,
    )
    work = row(result["work"])
    assert (work.kind, work.state, work.dispatch_id) == ("work", "pending", dispatch.id)
    assert work.payload["scope"]["source"] == "invitation"
    assert row(invitation["outbox"]).accepted_at == clock.now  # fact 4


def test_accept_cancels_rival_invitations(steps):
    todo = steps.todo()
    winner = steps.delivered_invitation(todo, CHAT)
    rival = steps.invitation(todo, OTHER_CHAT)  # still pending
    steps.engine.accept(winner["outbox"], winner["nonce"], {})
    assert Dispatch.get_by_id(rival["dispatch"]).state == "cancelled"
    assert row(rival["outbox"]).state == "cancelled"


def test_a_second_chat_accepting_a_taken_todo_gets_accepted_false_and_its_dispatch_cancelled(
    steps,
):
    todo = steps.todo()
    first = steps.delivered_invitation(todo, CHAT)
    second = steps.delivered_invitation(todo, OTHER_CHAT)
    steps.engine.accept(first["outbox"], first["nonce"], {})
    late = steps.engine.accept(second["outbox"], second["nonce"], {})
    assert late["accepted"] is False
    assert Dispatch.get_by_id(second["dispatch"]).state == "cancelled"
    assert Binding.select().where(Binding.dispatch == second["dispatch"]).count() == 0
    assert Outbox.select().where(Outbox.kind == "work").count() == 1
    assert Notification.get(Notification.subject == f"dispatch:{second['dispatch']}").kind == (
        "accept too late"
    )


def test_accept_of_an_envelope_that_is_not_an_invitation_is_refused(steps):
    accepted = steps.accepted()
    with pytest.raises(Conflict, match="not an invitation"):
        steps.engine.accept(accepted["work"], accepted["nonce"], {})


# --- decline --------------------------------------------------------------------------


def test_decline_reopens_the_todo_and_tells_dad(steps):
    invitation = steps.delivered_invitation()
    steps.engine.decline(invitation["outbox"], invitation["nonce"], {"final": "no"})
    assert Dispatch.get_by_id(invitation["dispatch"]).state == "declined"
    assert Todo.get_by_id(invitation["todo"]).state == "open"
    assert Notification.get().kind == "invitation declined"


def test_decline_keeps_the_todo_invited_while_another_invitation_is_open(steps):
    todo = steps.todo()
    declined = steps.delivered_invitation(todo, CHAT)
    steps.invitation(todo, OTHER_CHAT)
    steps.engine.decline(declined["outbox"], declined["nonce"], {})
    assert Todo.get_by_id(todo).state == "invited"


def test_decline_with_the_wrong_nonce_is_refused(steps):
    invitation = steps.delivered_invitation()
    with pytest.raises(Conflict, match="nonce does not match"):
        steps.engine.decline(invitation["outbox"], "guess", {})
    assert Dispatch.get_by_id(invitation["dispatch"]).state == "invited"


# --- take_cli -------------------------------------------------------------------------


def test_cli_take_by_an_unknown_chat_writes_an_observed_compatibility_record(steps, clock):
    taken = steps.cli_taker(chat=CHAT, host="laptop")
    session = Session.get_by_id(taken["session"])
    assert (session.mode, session.surface, session.host, session.ref) == (
        "observed",
        "compatibility",
        "laptop",
        CHAT,
    )
    assert session.status == "unknown"  # never the column default "idle"
    dispatch = Dispatch.get_by_id(taken["dispatch"])
    assert (dispatch.state, dispatch.accepted_at) == ("accepted", clock.now)
    assert dispatch.receipt["source"] == "cli-take"
    assert Binding.get(Binding.dispatch == dispatch).session_id == session.id
    obligation = outcome_obligation(dispatch.id)
    assert (obligation.due_at, obligation.legacy) == (clock.now + 3 * HOUR, True)
    assert Todo.get_by_id(taken["todo"]).state == "taken"
    # Nobody watches an observed chat: nothing is queued for it.
    assert Outbox.select().count() == 0


def test_cli_take_without_a_session_is_still_a_take_with_a_legacy_obligation(steps, clock):
    todo = steps.todo()
    result = steps.engine.take_cli(todo, None, HOST)
    dispatch = Dispatch.get_by_id(result["dispatch"])
    assert (dispatch.state, dispatch.session_id, dispatch.receipt["source"]) == (
        "accepted",
        None,
        "cli-take",
    )
    assert Todo.get_by_id(todo).state == "taken"
    obligation = outcome_obligation(dispatch.id)
    assert (obligation.due_at, obligation.legacy) == (clock.now + 3 * HOUR, True)
    assert Binding.select().count() == 0
    assert Session.select().count() == 0


def test_cli_take_inside_a_managed_chat_binds_it_and_sends_the_work_at_once(steps, clock):
    steps.invitation(chat=CHAT)  # enrolls the chat as managed
    todo = steps.todo("Second job")
    result = steps.engine.take_cli(todo, CHAT, HOST)
    managed = Session.get(Session.native_id == CHAT.partition(":")[2])
    assert Session.select().count() == 1 and managed.mode == "managed"
    assert Binding.get(Binding.dispatch == result["dispatch"]).session_id == managed.id
    work = row(result["work"])
    assert (work.kind, work.state, work.payload["scope"]["source"]) == (
        "work",
        "pending",
        "cli-take",
    )
    assert outcome_obligation(result["dispatch"]).due_at == clock.now + 2 * HOUR


def test_cli_take_of_a_taken_todo_is_refused(steps):
    taken = steps.cli_taker()["todo"]
    before = counts()
    with pytest.raises(Conflict, match="cannot be taken"):
        steps.engine.take_cli(taken, OTHER_CHAT, HOST)
    assert counts() == before


def test_cli_take_withdraws_open_invitations_for_the_todo(steps):
    invitation = steps.invitation()
    steps.engine.take_cli(invitation["todo"], OTHER_CHAT, HOST)
    assert Dispatch.get_by_id(invitation["dispatch"]).state == "cancelled"
    assert row(invitation["outbox"]).state == "cancelled"


# --- report_outcome: fact 5 -----------------------------------------------------------


def test_outcome_report_records_fact_5_and_meets_the_obligation(steps, clock):
    accepted = steps.accepted()
    clock.advance(HOUR)
    steps.engine.report_outcome(accepted["todo"], "importer fixed", by="worker")
    dispatch = Dispatch.get_by_id(accepted["dispatch"])
    assert (dispatch.state, dispatch.outcome, dispatch.outcome_by, dispatch.outcome_at) == (
        "done",
        "importer fixed",
        "worker",
        clock.now,
    )
    assert Todo.get_by_id(accepted["todo"]).state == "done"
    obligation = outcome_obligation(dispatch.id)
    assert (obligation.state, obligation.met_at) == ("met", clock.now)
    assert Binding.get(Binding.dispatch == dispatch).state == "released"


@pytest.mark.parametrize("by", ["coop", "stranger", ""])
def test_outcome_is_reported_only_by_worker_dad_or_chief(steps, by):
    accepted = steps.accepted()
    with pytest.raises(NotAuthorized):
        steps.engine.report_outcome(accepted["todo"], "done", by=by)
    assert Dispatch.get_by_id(accepted["dispatch"]).state == "accepted"


def test_outcome_for_a_todo_without_accepted_work_is_refused(steps):
    todo = steps.invitation()["todo"]
    with pytest.raises(Conflict, match="no accepted work"):
        steps.engine.report_outcome(todo, "done", by="dad")


# --- sweep_obligations ----------------------------------------------------------------


def test_obligation_becomes_overdue_exactly_at_its_due_time_not_before(steps, clock):
    accepted = steps.accepted()
    clock.advance(2 * HOUR - 0.001)
    assert steps.engine.sweep_obligations()["overdue"] == []
    assert outcome_obligation(accepted["dispatch"]).state == "open"
    clock.advance(0.001)
    steps.engine.sweep_obligations()
    assert outcome_obligation(accepted["dispatch"]).state == "overdue"
    assert Notification.get(Notification.kind == "obligation overdue")


def test_a_legacy_obligation_is_due_three_hours_after_the_take(steps, clock):
    taker = steps.cli_taker()
    clock.advance(3 * HOUR - 1)
    steps.engine.sweep_obligations()
    assert outcome_obligation(taker["dispatch"]).state == "open"
    clock.advance(1)
    steps.engine.sweep_obligations()
    assert outcome_obligation(taker["dispatch"]).state == "overdue"


def test_a_met_obligation_never_becomes_overdue(steps, clock):
    accepted = steps.accepted()
    steps.engine.report_outcome(accepted["todo"], "done", by="chief")
    clock.advance(10 * HOUR)
    assert steps.engine.sweep_obligations()["overdue"] == []
    assert outcome_obligation(accepted["dispatch"]).state == "met"


def test_a_sweep_that_loses_the_race_tells_dad_nothing(steps, clock, monkeypatch):
    # Two coordinators on one ledger (PostgreSQL lets both read the obligation open):
    # the one whose compare-and-set changes no row records no event and no notice.
    from coop_engine import obligations

    accepted = steps.accepted()
    clock.advance(2 * HOUR)
    real_update = obligations.Obligation.update

    def rival_first(*args, **kwargs):
        real_update(state="overdue").where(obligations.Obligation.state == "open").execute()
        return real_update(*args, **kwargs)

    monkeypatch.setattr(obligations.Obligation, "update", rival_first)
    assert steps.engine.sweep_obligations()["overdue"] == []
    assert outcome_obligation(accepted["dispatch"]).state == "overdue"
    assert not Notification.select().where(Notification.kind == "obligation overdue").exists()


# --- the legacy take's review (seed 003: "reviewed by the chief after three hours") -------


def reviews() -> list[Outbox]:
    return list(Outbox.select().where(Outbox.kind == "review").order_by(Outbox.created_at))


def test_an_overdue_legacy_take_goes_to_the_chief_once(steps, clock):
    steps.engine.set_chief(OTHER_CHAT, "dad", HOST)
    anonymous = steps.engine.take_cli(steps.todo("Fix the importer"), None, HOST)
    steps.cli_taker()  # a legacy take by a named chat: reviewed too
    clock.advance(3 * HOUR)
    steps.engine.sweep_obligations()
    # One sweep writes both at the same time: tell them apart by their todo, not order.
    first, second = sorted(reviews(), key=lambda review: "todo #1:" not in review.payload["text"])
    assert first.session.ref == OTHER_CHAT and first.session.host == HOST
    assert (first.session.mode, first.state) == ("managed", "pending")
    assert first.payload["obligation"] != second.payload["obligation"]
    assert "legacy take of todo #1: Fix the importer" in first.payload["text"]
    assert "nobody watches this work" in first.payload["text"]
    assert f"by {CHAT} on {HOST}" in second.payload["text"]
    assert "coop todo report 1" in first.payload["text"]
    assert anonymous["dispatch"] is not None
    clock.advance(HOUR)
    steps.engine.sweep_obligations()
    assert len(reviews()) == 2  # one review per obligation, never another


def test_without_a_chief_an_overdue_legacy_take_is_dads_notice_only(steps, clock):
    steps.engine.take_cli(steps.todo(), None, HOST)
    clock.advance(3 * HOUR)
    steps.engine.sweep_obligations()
    assert reviews() == []
    assert Notification.get(Notification.kind == "obligation overdue")


def test_a_managed_accepts_overdue_obligation_is_not_a_legacy_review(steps, clock):
    steps.engine.set_chief(OTHER_CHAT, "dad", HOST)
    steps.accepted()
    clock.advance(2 * HOUR)
    steps.engine.sweep_obligations()
    assert reviews() == []
