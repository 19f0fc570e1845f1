"""DESIGN.md section 4, delivery: invite, intent before I/O, the five facts, expiry,
Send again and stale envelopes. One test per rule or refusal."""

from __future__ import annotations

import pytest

from coop_engine.errors import (
    ALREADY_SENT_AGAIN,
    NOT_ELIGIBLE_FOR_SEND,
    Conflict,
    CoopError,
    NotAuthorized,
    NotFound,
)
from coop_engine.models import Dispatch, HostQueue, Notification, Outbox, Session

from .support import (
    CHAT,
    FAILED_AFTER_CONNECT,
    HOST,
    NOT_WRITTEN,
    OTHER_CHAT,
    SENT,
    counts,
    cursor,
    events_for,
    peer_entry,
    row,
    verdict,
)

REASONS = (
    "refused-by-receiver-policy",
    "held-for-approval-then-expired",
    "receiver-idle-without-entry",
)


def in_state(steps, state: str) -> str:
    """An invitation envelope brought to `state` by the engine's own commands."""
    invitation = steps.invitation()
    outbox_id = invitation["outbox"]
    if state == "uncertain":
        steps.send(outbox_id)
    elif state == "delivered":
        steps.deliver(outbox_id)
    elif state == "expired":
        steps.expire(outbox_id)
    elif state == "cancelled":
        steps.engine.take_cli(invitation["todo"], None, HOST)  # withdraws the invitation
    assert row(outbox_id).state == state
    return outbox_id


# --- invite ---------------------------------------------------------------------------


def test_invite_creates_an_invited_dispatch_with_a_nonce_and_a_pending_invitation(steps, clock):
    todo = steps.todo()
    result = steps.engine.invite(todo, CHAT, HOST)
    dispatch = Dispatch.get_by_id(result["dispatch"])
    envelope = row(result["outbox"])
    assert dispatch.state == "invited"
    assert dispatch.nonce and dispatch.nonce == result["nonce"]
    assert dispatch.receipt == {"source": "invitation"}
    assert (envelope.kind, envelope.state, envelope.dispatch_id) == (
        "invitation",
        "pending",
        dispatch.id,
    )
    assert envelope.created_at == clock.now  # fact 1: stored
    assert dispatch.todo.state == "invited"


def test_invitation_text_asks_for_coop_accept_with_its_nonce(steps):
    invitation = steps.invitation()
    assert f"COOP_ACCEPT {invitation['nonce']}" in row(invitation["outbox"]).payload["text"]


def test_each_invitation_gets_its_own_nonce(steps):
    todo = steps.todo()
    first = steps.invitation(todo, CHAT)
    second = steps.invitation(todo, OTHER_CHAT)
    assert first["nonce"] != second["nonce"]


def test_invite_of_a_taken_todo_is_refused(steps):
    taken = steps.accepted()["todo"]
    with pytest.raises(Conflict, match="cannot be offered"):
        steps.engine.invite(taken, OTHER_CHAT, HOST)


def test_invite_of_a_chat_that_is_only_an_observed_cli_taker_is_refused(steps):
    steps.cli_taker(chat=CHAT)
    with pytest.raises(Conflict, match="adopt it before inviting"):
        steps.engine.invite(steps.todo(), CHAT, HOST)


def test_invite_of_an_unknown_todo_is_not_found(steps):
    with pytest.raises(NotFound):
        steps.engine.invite(99, CHAT, HOST)


# --- mark_uncertain: intent before I/O ------------------------------------------------


def test_mark_uncertain_moves_pending_to_uncertain_and_writes_the_host_queue_row(steps):
    outbox_id = steps.invitation()["outbox"]
    result = steps.engine.mark_uncertain(outbox_id, cursor())
    envelope = row(outbox_id)
    assert envelope.state == "uncertain"
    assert envelope.cursor == cursor()
    attempt = HostQueue.get(HostQueue.outbox == outbox_id)
    assert (attempt.host, attempt.attempt, attempt.state) == (HOST, 1, "intent")
    assert result == {"outbox": outbox_id, "attempt": 1}


def test_mark_uncertain_and_its_host_queue_row_commit_together_or_not_at_all(steps, monkeypatch):
    outbox_id = steps.invitation()["outbox"]

    def host_queue_fails(**_fields):
        raise RuntimeError("disk full")

    monkeypatch.setattr(HostQueue, "create", host_queue_fails)
    with pytest.raises(RuntimeError):
        steps.engine.mark_uncertain(outbox_id, cursor())
    assert row(outbox_id).state == "pending"


@pytest.mark.parametrize("state", ["uncertain", "delivered", "expired", "cancelled"])
def test_mark_uncertain_refuses_a_row_that_is_not_pending(steps, state):
    outbox_id = in_state(steps, state)
    before = counts()
    with pytest.raises(Conflict) as refused:
        steps.engine.mark_uncertain(outbox_id, cursor())
    assert str(refused.value) == NOT_ELIGIBLE_FOR_SEND
    assert row(outbox_id).state == state
    assert counts() == before


def test_mark_uncertain_refuses_an_envelope_older_than_its_sessions_generation(steps):
    invitation = steps.invitation()
    # A newer enrollment of the same chat: the envelope's generation is now behind.
    Session.update(generation=Session.generation + 1).where(
        Session.id == invitation["session"]
    ).execute()
    with pytest.raises(Conflict) as refused:
        steps.engine.mark_uncertain(invitation["outbox"], cursor())
    assert str(refused.value) == NOT_ELIGIBLE_FOR_SEND
    assert row(invitation["outbox"]).state == "pending"


def test_mark_uncertain_of_an_unknown_envelope_is_not_found(engine):
    with pytest.raises(NotFound):
        engine.mark_uncertain("00000000-0000-4000-8000-000000000000", cursor())


# --- record_transport: fact 2 ---------------------------------------------------------


def test_transport_ok_records_fact_2_and_the_send_stays_uncertain(steps, clock):
    outbox_id = steps.invitation()["outbox"]
    attempt = steps.engine.mark_uncertain(outbox_id, cursor())["attempt"]
    clock.advance(0.25)
    steps.engine.record_transport(outbox_id, attempt, SENT)
    envelope = row(outbox_id)
    assert (envelope.state, envelope.transport_at, envelope.received_at) == (
        "uncertain",
        clock.now,
        None,
    )
    assert HostQueue.get(HostQueue.outbox == outbox_id).state == "written"


def test_transport_not_written_returns_the_envelope_to_pending_with_last_error(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.send(outbox_id, NOT_WRITTEN)
    envelope = row(outbox_id)
    assert (envelope.state, envelope.last_error, envelope.transport_at) == (
        "pending",
        NOT_WRITTEN["error"],
        None,
    )
    assert HostQueue.get(HostQueue.outbox == outbox_id).state == "refused"
    # Nothing left the Mac, so the coordinator may try again: a second attempt row.
    assert steps.engine.mark_uncertain(outbox_id, cursor())["attempt"] == 2
    assert row(outbox_id).last_error is None


def test_transport_failed_after_connect_leaves_the_send_uncertain(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.send(outbox_id, FAILED_AFTER_CONNECT)
    envelope = row(outbox_id)
    assert (envelope.state, envelope.transport_at) == ("uncertain", None)
    assert HostQueue.get(HostQueue.outbox == outbox_id).state == "failed"
    with pytest.raises(Conflict, match=NOT_ELIGIBLE_FOR_SEND):
        steps.engine.mark_uncertain(outbox_id, cursor())


# --- record_refusal: refused before I/O -----------------------------------------------


def test_refusal_before_io_keeps_the_envelope_pending_with_last_error(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.engine.record_refusal(outbox_id, "Native socket ownership or permissions changed")
    envelope = row(outbox_id)
    assert (envelope.state, envelope.last_error) == (
        "pending",
        "Native socket ownership or permissions changed",
    )


def test_the_same_refusal_twice_records_one_event(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.engine.record_refusal(outbox_id, "no live match")
    steps.engine.record_refusal(outbox_id, "no live match")
    assert [e.command for e in events_for(f"outbox:{outbox_id}")].count("record_refusal") == 1


def test_refusal_of_a_send_that_is_no_longer_pending_is_refused(steps):
    outbox_id = in_state(steps, "uncertain")
    with pytest.raises(Conflict, match="no longer pending"):
        steps.engine.record_refusal(outbox_id, "no live match")
    assert row(outbox_id).last_error is None


# --- record_receipt: fact 3 -----------------------------------------------------------


def test_receipt_moves_an_uncertain_send_to_delivered(steps, clock):
    outbox_id = in_state(steps, "uncertain")
    clock.advance(3)
    steps.engine.record_receipt(outbox_id, peer_entry(outbox_id))
    envelope = row(outbox_id)
    assert (envelope.state, envelope.received_at) == ("delivered", clock.now)
    assert envelope.receipt == peer_entry(outbox_id)


@pytest.mark.parametrize("state", ["pending", "expired", "cancelled"])
def test_receipt_for_a_row_that_is_not_an_uncertain_send_is_refused(steps, state):
    outbox_id = in_state(steps, state)
    with pytest.raises(Conflict, match="not an uncertain send"):
        steps.engine.record_receipt(outbox_id, peer_entry(outbox_id))
    assert row(outbox_id).state == state


# --- record_conflict ------------------------------------------------------------------


def test_conflict_is_recorded_and_told_to_dad_without_moving_the_envelope(steps):
    outbox_id = in_state(steps, "uncertain")
    evidence = {"reason": "wrong provenance", "offset": 2048, "origin": {"from": "stranger"}}
    steps.engine.record_conflict(outbox_id, evidence)
    envelope = row(outbox_id)
    assert (envelope.state, envelope.conflict) == ("uncertain", "wrong provenance")
    notice = Notification.get(Notification.subject == f"outbox:{outbox_id}")
    assert notice.kind == "delivery conflict"


# --- expire: evidence of loss ---------------------------------------------------------


@pytest.mark.parametrize("reason", REASONS)
def test_expire_moves_an_uncertain_send_to_expired_with_one_of_the_three_reasons(steps, reason):
    outbox_id = in_state(steps, "uncertain")
    before = Outbox.select().count()
    steps.engine.expire(outbox_id, verdict(outbox_id, reason))
    envelope = row(outbox_id)
    assert (envelope.state, envelope.expiry["reason"]) == ("expired", reason)
    # Nothing resends on its own: expiry creates no second attempt.
    assert Outbox.select().count() == before


@pytest.mark.parametrize("reason", [None, "timeout", "unknown", "receiver-busy"])
def test_expire_without_one_of_the_three_reasons_is_refused(steps, reason):
    outbox_id = in_state(steps, "uncertain")
    with pytest.raises(Conflict, match="one of the reasons"):
        steps.engine.expire(outbox_id, {"reason": reason} if reason else {})
    assert row(outbox_id).state == "uncertain"


@pytest.mark.parametrize("state", ["pending", "delivered", "cancelled"])
def test_expire_of_a_row_that_is_not_an_uncertain_send_is_refused(steps, state):
    outbox_id = in_state(steps, state)
    with pytest.raises(Conflict, match="not an uncertain send"):
        steps.engine.expire(outbox_id, verdict(outbox_id))
    assert row(outbox_id).state == state


@pytest.mark.parametrize("cause", ["parity", "explicit", "unrecognized", "unknown"])
@pytest.mark.parametrize("reason", ["receiver-idle-without-entry", "refused-by-receiver-policy"])
def test_a_seen_held_notice_is_never_proven_lost_by_silence_or_prediction(steps, cause, reason):
    # An explicit hold keeps the receiver idle: idle without an entry proves nothing.
    outbox_id = in_state(steps, "uncertain")
    steps.engine.record_held(outbox_id, {"offset": 0, "preview": "x", "cause": cause})
    with pytest.raises(Conflict, match="held by its receiver"):
        steps.engine.expire(outbox_id, verdict(outbox_id, reason))
    assert row(outbox_id).state == "uncertain"


@pytest.mark.parametrize("cause", ["explicit", "unrecognized", "unknown"])
def test_only_a_parity_hold_is_proven_lost_at_its_dialog_expiry(steps, cause):
    held = in_state(steps, "uncertain")
    steps.engine.record_held(held, {"offset": 0, "preview": "x", "cause": cause})
    with pytest.raises(Conflict, match="held by its receiver"):
        steps.engine.expire(held, verdict(held, "held-for-approval-then-expired"))
    assert row(held).state == "uncertain"
    parity = in_state(steps, "uncertain")
    steps.engine.record_held(parity, {"offset": 0, "preview": "x", "cause": "parity"})
    steps.engine.expire(parity, verdict(parity, "held-for-approval-then-expired"))
    assert row(parity).state == "expired"


def test_expiry_tells_dad_the_reason(steps):
    outbox_id = in_state(steps, "uncertain")
    steps.engine.expire(outbox_id, verdict(outbox_id, "receiver-idle-without-entry"))
    notice = Notification.get(Notification.subject == f"outbox:{outbox_id}")
    assert notice.kind == "delivery expired"
    assert "receiver-idle-without-entry" in notice.text


# --- resend: Send again ---------------------------------------------------------------


def test_resend_of_an_expired_invitation_creates_a_linked_pending_envelope(steps):
    first = in_state(steps, "expired")
    new_id = steps.engine.resend(first, by="dad")["outbox"]
    old, new = row(first), row(new_id)
    assert (old.state, old.resent_as) == ("expired", new_id)
    assert (new.state, new.resent_from, new.kind) == ("pending", first, "invitation")
    assert new.dispatch_id == old.dispatch_id
    assert new.generation == old.session.generation


def test_resent_text_differs_from_the_first_and_says_it_is_a_second_attempt(steps):
    first = in_state(steps, "expired")
    new_id = steps.engine.resend(first, by="dad")["outbox"]
    old_text, new_text = row(first).payload["text"], row(new_id).payload["text"]
    assert new_text != old_text
    assert "Second attempt" in new_text
    assert "held-for-approval-then-expired" in new_text  # and why
    assert old_text in new_text  # the same invitation, nonce included


def test_second_resend_answers_already_sent_again(steps):
    first = in_state(steps, "expired")
    steps.engine.resend(first, by="dad")
    before = counts()
    with pytest.raises(Conflict) as refused:
        steps.engine.resend(first, by="chief")
    assert str(refused.value) == ALREADY_SENT_AGAIN
    assert counts() == before


@pytest.mark.parametrize("state", ["pending", "uncertain", "delivered", "cancelled"])
def test_resend_of_an_uncertain_row_is_refused(steps, state):
    """Only proven loss allows a second attempt; silence proves nothing."""
    outbox_id = in_state(steps, state)
    before = counts()
    with pytest.raises(Conflict, match="Only an expired delivery"):
        steps.engine.resend(outbox_id, by="dad")
    assert counts() == before


@pytest.mark.parametrize("by", ["worker", "coop", "coordinator", ""])
def test_resend_is_refused_unless_decided_by_dad_or_chief(steps, by):
    outbox_id = in_state(steps, "expired")
    with pytest.raises(NotAuthorized):
        steps.engine.resend(outbox_id, by=by)
    assert row(outbox_id).resent_as is None


def test_the_chief_may_send_again_as_dads_proxy(steps):
    outbox_id = in_state(steps, "expired")
    new_id = steps.engine.resend(outbox_id, by="chief")["outbox"]
    assert events_for(f"outbox:{new_id}")[0].who == "chief"


def test_resend_of_an_invitation_whose_dispatch_is_no_longer_invited_is_refused(steps):
    invitation = steps.invitation()
    steps.expire(invitation["outbox"])
    steps.engine.take_cli(invitation["todo"], OTHER_CHAT, HOST)  # another chat took it
    with pytest.raises(Conflict, match="no longer invited"):
        steps.engine.resend(invitation["outbox"], by="dad")


def test_resend_of_a_work_envelope_whose_dispatch_has_an_active_binding_is_allowed(steps):
    work = steps.accepted()["work"]
    steps.expire(work)
    new_id = steps.engine.resend(work, by="dad")["outbox"]
    assert (row(new_id).kind, row(new_id).state) == ("work", "pending")


def test_resend_of_a_work_envelope_whose_binding_was_released_is_refused(steps):
    accepted = steps.accepted()
    steps.expire(accepted["work"])
    steps.engine.report_outcome(accepted["todo"], "done by hand", by="dad")
    with pytest.raises(Conflict, match="no longer has an active binding"):
        steps.engine.resend(accepted["work"], by="dad")


def test_a_refused_command_is_a_coop_error_with_one_line(steps):
    outbox_id = in_state(steps, "uncertain")
    with pytest.raises(CoopError) as refused:
        steps.engine.resend(outbox_id, by="dad")
    assert "\n" not in str(refused.value)


# --- cancel_stale ---------------------------------------------------------------------


def test_cancel_stale_cancels_only_pending_envelopes_of_an_older_generation(steps):
    stale = steps.invitation()
    in_flight = steps.invitation()
    steps.send(in_flight["outbox"])
    Session.update(generation=2).where(Session.id == stale["session"]).execute()
    current = steps.invitation()  # queued at generation 2
    result = steps.engine.cancel_stale()
    assert result["cancelled"] == [stale["outbox"]]
    assert row(stale["outbox"]).state == "cancelled"
    assert row(in_flight["outbox"]).state == "uncertain"
    assert row(current["outbox"]).state == "pending"
