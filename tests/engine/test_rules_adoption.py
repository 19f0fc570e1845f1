"""Seed 003, "Adopting a Take": Engine.adopt_take makes a CLI taker's own record managed
in place, carries its bindings and pending envelopes across the generation bump, and
claims or releases nothing. One test per rule or refusal."""

from __future__ import annotations

import pytest

from coop_engine import prompts
from coop_engine.errors import ENROLLMENT_CLASH, ONLY_CLI_TAKER_ADOPTED, Conflict
from coop_engine.models import Binding, Dispatch, Notification, Obligation, Session, Todo

from .support import CHAT, CODEX_CHAT, HOST, counts, cursor, row

SEED_003_OPENING = (
    "You took this work yourself through the Coop CLI, and Coop now follows this chat for it: "
    "the binding below is yours already, nothing new is being assigned."
)
FOUND = {"host": HOST, "status": "idle", "name": "importer"}


def outcome_obligation(dispatch_id: int) -> Obligation:
    return Obligation.get(Obligation.dispatch == dispatch_id)


def queue_while_unwatched(engine, session_id: int) -> str:
    """A reply review queued for a CLI taker while nobody watched it (#326). No public
    command queues one yet, so it is written the way the engine writes envelopes."""
    session = Session.get_by_id(session_id)
    with engine.db.atomic():
        return engine._enqueue(engine.clock(), session, None, "reply-review", {"text": "Dad: ok"})


def test_adoption_makes_the_same_row_managed_at_the_next_generation(steps):
    taker = steps.cli_taker()
    result = steps.engine.adopt_take(taker["session"], FOUND)
    session = Session.get_by_id(taker["session"])
    assert (session.mode, session.enrollment, session.generation) == ("managed", "active", 2)
    assert result["generation"] == 2
    assert Session.select().count() == 1  # in place: no new enrollment row


def test_adoption_moves_active_bindings_to_the_new_generation(steps):
    taker = steps.cli_taker()
    steps.cli_taker(chat=CHAT)  # a second take by the same chat
    steps.engine.adopt_take(taker["session"], FOUND)
    assert {(b.generation, b.state) for b in Binding.select()} == {(2, "active")}


def test_adoption_carries_a_pending_envelope_across_and_it_can_then_be_sent(steps):
    """#326: an envelope queued at generation 1 must not be stranded by the bump."""
    taker = steps.cli_taker()
    review = queue_while_unwatched(steps.engine, taker["session"])
    steps.engine.adopt_take(taker["session"], FOUND)
    assert row(review).generation == 2
    assert steps.engine.cancel_stale()["cancelled"] == []
    steps.engine.mark_uncertain(review, cursor())
    assert row(review).state == "uncertain"


def test_adoption_enqueues_a_cli_take_work_envelope_per_dispatch(steps):
    first = steps.cli_taker(todo=steps.todo("Fix the importer", project="ledger"))
    second = steps.cli_taker(chat=CHAT)
    result = steps.engine.adopt_take(first["session"], FOUND)
    work = [row(outbox_id) for outbox_id in result["work"]]
    assert sorted(w.dispatch_id for w in work) == sorted([first["dispatch"], second["dispatch"]])
    for envelope in work:
        assert (envelope.kind, envelope.state, envelope.generation) == ("work", "pending", 2)
        assert envelope.payload["text"].startswith(SEED_003_OPENING)
        assert envelope.payload["scope"]["source"] == "cli-take"
    assert work[0].payload["scope"]["project"] == "ledger"
    assert prompts.CLI_TAKE_OPENING == SEED_003_OPENING


def test_adoption_marks_each_dispatch_receipt_adopted(steps):
    taker = steps.cli_taker()
    steps.engine.adopt_take(taker["session"], FOUND)
    receipt = Dispatch.get_by_id(taker["dispatch"]).receipt
    assert receipt["source"] == "cli-take"
    assert receipt["adopted"]["generation"] == 2


def test_adoption_claims_and_releases_nothing(steps):
    taker = steps.cli_taker()
    obligation = outcome_obligation(taker["dispatch"])
    steps.engine.adopt_take(taker["session"], FOUND)
    assert Dispatch.get_by_id(taker["dispatch"]).state == "accepted"
    assert Todo.get_by_id(taker["todo"]).state == "taken"
    assert [b.state for b in Binding.select()] == ["active"]
    assert Dispatch.select().count() == 1
    after = outcome_obligation(taker["dispatch"])
    assert (after.due_at, after.state) == (obligation.due_at, obligation.state)


def test_adoption_notifies_dad_chat_enrolled(steps):
    taker = steps.cli_taker()
    steps.engine.adopt_take(taker["session"], FOUND)
    notice = Notification.get(Notification.subject == f"session:{taker['session']}")
    assert notice.kind == "chat enrolled"


def test_only_a_cli_takers_compatibility_record_can_be_adopted(steps):
    managed = steps.invitation()["session"]
    before = counts()
    with pytest.raises(Conflict) as refused:
        steps.engine.adopt_take(managed, FOUND)
    assert str(refused.value) == "Only a CLI taker's compatibility record can be adopted"
    assert str(refused.value) == ONLY_CLI_TAKER_ADOPTED
    assert counts() == before


def test_an_adopted_record_cannot_be_adopted_again(steps):
    taker = steps.cli_taker()
    steps.engine.adopt_take(taker["session"], FOUND)
    with pytest.raises(Conflict, match=ONLY_CLI_TAKER_ADOPTED):
        steps.engine.adopt_take(taker["session"], {**FOUND, "host": "laptop"})


def test_adoption_is_refused_when_another_enrollment_names_the_chat_on_that_host(steps):
    taker = steps.cli_taker(chat=CODEX_CHAT, host=HOST)
    enrolled = steps.invitation(chat=CODEX_CHAT, host="laptop")["session"]
    before = counts()
    with pytest.raises(Conflict) as refused:
        steps.engine.adopt_take(taker["session"], {**FOUND, "host": "laptop"})
    assert str(refused.value) == f"Another enrollment already names this chat on laptop: {enrolled}"
    assert str(refused.value) == ENROLLMENT_CLASH.format(host="laptop", id=enrolled)
    assert Session.get_by_id(taker["session"]).mode == "observed"
    assert counts() == before


def test_adoption_follows_the_chat_to_the_mac_it_was_found_on(steps):
    taker = steps.cli_taker(host="office")
    steps.engine.adopt_take(taker["session"], {**FOUND, "host": "laptop"})
    assert Session.get_by_id(taker["session"]).host == "laptop"
