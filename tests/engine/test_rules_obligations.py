"""Obligations close (issue 29 item 8): an outcome obligation is open while due, overdue
once its due time passes, reviewed when Dad or the chief decides the work goes on, met
by its outcome, and closed when Dad or the chief releases the take. A chief Coop only
observes is never sent a review nothing would deliver. One test per rule or refusal."""

from __future__ import annotations

import pytest

from coop_engine.errors import BadInput, Conflict, NotAuthorized, NotFound
from coop_engine.models import Binding, Dispatch, Event, Notification, Obligation, Outbox, Todo
from coop_engine.queries.status import alerts_between

from .support import CHAT, HOST, OTHER_CHAT, counts, row

HOUR = 3600.0
LEGACY_DUE = 3 * HOUR


def obligation_of(dispatch_id: int) -> Obligation:
    return Obligation.get(Obligation.dispatch == dispatch_id)


def reviews() -> list[Outbox]:
    return list(Outbox.select().where(Outbox.kind == "review").order_by(Outbox.created_at))


def overdue_legacy_take(steps, clock, chat: str | None = None) -> Obligation:
    """A CLI take (by `chat`, or by nobody Coop could name), three hours on."""
    taken = steps.engine.take_cli(steps.todo("Fix the importer"), chat, HOST)
    clock.advance(LEGACY_DUE)
    steps.engine.sweep_obligations()
    obligation = obligation_of(taken["dispatch"])
    assert obligation.state == "overdue"
    return obligation


def managed_chief(steps) -> None:
    """The chief, named by Dad, is a chat Coop enrolled (an invitation made it managed)."""
    steps.invitation(chat=OTHER_CHAT)
    steps.engine.set_chief(OTHER_CHAT, "dad", HOST)


# --- the chief's review ----------------------------------------------------------------


def test_a_chief_coop_only_observes_is_sent_no_review_and_dad_is_told_how_to_decide(steps, clock):
    # The chief took a todo through the CLI itself: Coop only observes that chat, so a
    # review queued for it would wait, pending, forever.
    steps.cli_taker(chat=OTHER_CHAT)
    steps.engine.set_chief(OTHER_CHAT, "dad", HOST)
    obligation = overdue_legacy_take(steps, clock)
    assert reviews() == []
    notice = Notification.get(Notification.subject == f"dispatch:{obligation.dispatch_id}")
    assert notice.kind == "obligation overdue"
    assert f"the chief ({OTHER_CHAT}) is a chat Coop only observes" in notice.text
    assert f"coop obligation review {obligation.id} --decision wait|release --by dad" in notice.text
    # And the obligation does not wait forever: Dad's decision moves it.
    steps.engine.review_obligation(obligation.id, "wait", "dad")
    assert obligation_of(obligation.dispatch_id).state == "reviewed"


def test_a_managed_chief_is_asked_with_the_decisions_it_may_record(steps, clock):
    managed_chief(steps)
    obligation = overdue_legacy_take(steps, clock)
    (review,) = reviews()
    assert review.session.ref == OTHER_CHAT and review.state == "pending"
    text = review.payload["text"]
    assert f"coop obligation review {obligation.id} --decision wait --by chief" in text
    assert f"coop obligation review {obligation.id} --decision release --by chief" in text
    notice = Notification.get(Notification.subject == f"dispatch:{obligation.dispatch_id}")
    assert f"the chief ({OTHER_CHAT}) is asked to review it" in notice.text


def test_without_a_chief_the_overdue_notice_and_alert_name_dads_decision(steps, clock):
    obligation = overdue_legacy_take(steps, clock)
    decide = f"coop obligation review {obligation.id} --decision wait|release --by dad"
    notice = Notification.get(Notification.kind == "obligation overdue")
    assert notice.text == f"Todo #1 has no outcome yet; decide: {decide}"
    (alert,) = alerts_between(0)
    assert (alert["kind"], alert["todo"]) == ("overdue", 1)
    assert alert["text"].endswith(f"decide: {decide}")


# --- wait: overdue -> reviewed ----------------------------------------------------------


@pytest.mark.parametrize("by", ["dad", "chief"])
def test_wait_records_the_decision_and_the_obligation_is_reviewed(steps, clock, by):
    obligation = overdue_legacy_take(steps, clock, CHAT)
    clock.advance(60)
    result = steps.engine.review_obligation(obligation.id, "wait", by)
    assert result == {"obligation": obligation.id, "todo": 1, "state": "reviewed", "by": by}
    reviewed = obligation_of(obligation.dispatch_id)
    assert (reviewed.state, reviewed.decision, reviewed.decided_by, reviewed.decided_at) == (
        "reviewed",
        "wait",
        by,
        clock.now,
    )
    (event,) = Event.select().where(Event.command == "review_obligation")
    assert (event.subject, event.from_state, event.to_state, event.who) == (
        f"obligation:{obligation.id}",
        "overdue",
        "reviewed",
        by,
    )
    # The work goes on: nothing else moved.
    assert Dispatch.get_by_id(obligation.dispatch_id).state == "accepted"
    assert Todo.get_by_id(1).state == "taken"
    assert Binding.get(Binding.dispatch == obligation.dispatch_id).state == "active"


def test_a_reviewed_obligation_is_met_by_its_outcome_and_never_swept_again(steps, clock):
    obligation = overdue_legacy_take(steps, clock, CHAT)
    steps.engine.review_obligation(obligation.id, "wait", "chief")
    clock.advance(10 * HOUR)
    assert steps.engine.sweep_obligations()["overdue"] == []
    steps.engine.report_outcome(1, "importer fixed", by="worker")
    met = obligation_of(obligation.dispatch_id)
    assert (met.state, met.met_at) == ("met", clock.now)


# --- release: overdue or reviewed -> closed ---------------------------------------------


@pytest.mark.parametrize("reviewed_first", [False, True], ids=["overdue", "reviewed"])
def test_release_closes_it_and_gives_the_todo_back(steps, clock, reviewed_first):
    accepted = steps.accepted()  # a managed accept: its work envelope is still pending
    clock.advance(2 * HOUR)
    steps.engine.sweep_obligations()
    obligation = obligation_of(accepted["dispatch"])
    if reviewed_first:
        steps.engine.review_obligation(obligation.id, "wait", "dad")
    result = steps.engine.review_obligation(obligation.id, "release", "dad")
    assert result["state"] == "closed"
    closed = obligation_of(accepted["dispatch"])
    assert (closed.state, closed.decision, closed.decided_by) == ("closed", "release", "dad")
    assert Dispatch.get_by_id(accepted["dispatch"]).state == "cancelled"
    assert Binding.get(Binding.dispatch == accepted["dispatch"]).state == "released"
    assert row(accepted["work"]).state == "cancelled"  # never sent, no longer anyone's
    assert Todo.get_by_id(accepted["todo"]).state == "open"  # it may be invited again
    # Nobody owes an outcome now: a report is refused.
    with pytest.raises(Conflict, match="no accepted work"):
        steps.engine.report_outcome(accepted["todo"], "done", by="worker")


# --- a decision made: the chief's review is no longer asked for -------------------------


@pytest.mark.parametrize("decision", ["wait", "release", "outcome"])
def test_a_decision_cancels_the_chiefs_review_not_yet_sent(steps, clock, decision):
    managed_chief(steps)
    obligation = overdue_legacy_take(steps, clock, CHAT)
    (review,) = reviews()
    if decision == "outcome":
        steps.engine.report_outcome(obligation.dispatch.todo_id, "done elsewhere", by="dad")
    else:
        steps.engine.review_obligation(obligation.id, decision, "dad")
    assert row(review.id).state == "cancelled"


def test_a_review_already_sent_is_left_as_it_is(steps, clock):
    managed_chief(steps)
    obligation = overdue_legacy_take(steps, clock, CHAT)
    (review,) = reviews()
    steps.send(review.id)
    steps.engine.review_obligation(obligation.id, "wait", "chief")
    assert row(review.id).state == "uncertain"  # a sent frame is watched, never taken back


# --- refusals: one line, nothing changed ------------------------------------------------


def test_an_obligation_still_due_is_not_reviewed(steps, clock):
    taken = steps.cli_taker()
    obligation = obligation_of(taken["dispatch"])
    before = counts()
    for decision in ("wait", "release"):
        with pytest.raises(Conflict, match="is due at .*: it is reviewed once overdue"):
            steps.engine.review_obligation(obligation.id, decision, "dad")
    assert counts() == before
    assert obligation_of(taken["dispatch"]).state == "open"


def test_wait_twice_is_refused(steps, clock):
    obligation = overdue_legacy_take(steps, clock, CHAT)
    steps.engine.review_obligation(obligation.id, "wait", "dad")
    before = counts()
    with pytest.raises(Conflict, match="is reviewed already: dad decided the work goes on"):
        steps.engine.review_obligation(obligation.id, "wait", "chief")
    assert counts() == before


@pytest.mark.parametrize("decision", ["wait", "release"])
def test_a_met_or_closed_obligation_takes_no_decision(steps, clock, decision):
    met = overdue_legacy_take(steps, clock, CHAT)
    steps.engine.report_outcome(1, "done", by="worker")
    closed = overdue_legacy_take(steps, clock)
    steps.engine.review_obligation(closed.id, "release", "chief")
    before = counts()
    with pytest.raises(Conflict, match="is met: todo #1 has its outcome"):
        steps.engine.review_obligation(met.id, decision, "dad")
    with pytest.raises(Conflict, match="is closed: chief released the take"):
        steps.engine.review_obligation(closed.id, decision, "dad")
    assert counts() == before


def test_who_may_decide_and_what_may_be_decided(steps, clock):
    obligation = overdue_legacy_take(steps, clock, CHAT)
    before = counts()
    with pytest.raises(NotAuthorized):
        steps.engine.review_obligation(obligation.id, "wait", "worker")
    with pytest.raises(BadInput, match="wait or release"):
        steps.engine.review_obligation(obligation.id, "forget", "dad")
    with pytest.raises(NotFound, match="No obligation 99"):
        steps.engine.review_obligation(99, "wait", "dad")
    assert counts() == before
