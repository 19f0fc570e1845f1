"""The ledger's rules for the Codex door (issue [4/6]): each door proves loss only its own
way. A Codex envelope expires only with `withdrawn-from-queue` (Codex's own
`deleted: true`), a Claude envelope never with it; the ask to withdraw is recorded
before Codex is asked; the queue sighting is an observation, never a transition."""

from __future__ import annotations

import pytest

from coop_engine.errors import Conflict, NotAuthorized
from coop_engine.models import Event, QueueSighting

from .support import counts, events_for, row, verdict

THREAD = "codex:01a2322c-98cf-78c0-a14e-509a397f29fa"
CLAUDE_REASONS = (
    "refused-by-receiver-policy",
    "held-for-approval-then-expired",
    "receiver-idle-without-entry",
)
WITHDRAWN = "withdrawn-from-queue"


def codex_uncertain(steps) -> str:
    outbox_id = steps.invitation(chat=THREAD)["outbox"]
    steps.send(outbox_id, {"ok": True, "written": True, "queued_id": "q-1"})
    return outbox_id


def claude_uncertain(steps) -> str:
    outbox_id = steps.invitation()["outbox"]
    steps.send(outbox_id)
    return outbox_id


def test_a_codex_envelope_expires_when_codex_deleted_it_from_its_queue(steps):
    outbox_id = codex_uncertain(steps)
    steps.engine.expire(outbox_id, {**verdict(outbox_id, WITHDRAWN), "deleted": True})
    assert (row(outbox_id).state, row(outbox_id).expiry["reason"]) == ("expired", WITHDRAWN)
    resent = steps.engine.resend(outbox_id, "dad")["outbox"]
    assert row(resent).state == "pending"  # Send again works, once
    with pytest.raises(Conflict, match="already sent again"):
        steps.engine.resend(outbox_id, "dad")


@pytest.mark.parametrize("reason", CLAUDE_REASONS)
def test_no_claude_reason_expires_a_codex_envelope(steps, reason):
    outbox_id = codex_uncertain(steps)
    before = counts()
    with pytest.raises(Conflict, match="withdrawn-from-queue"):
        steps.engine.expire(outbox_id, verdict(outbox_id, reason))
    assert (row(outbox_id).state, counts()) == ("uncertain", before)


def test_the_claude_door_keeps_exactly_its_three_reasons(steps):
    outbox_id = claude_uncertain(steps)
    with pytest.raises(Conflict, match="receiver-idle-without-entry"):
        steps.engine.expire(outbox_id, verdict(outbox_id, WITHDRAWN))
    assert row(outbox_id).state == "uncertain"


def test_the_ask_to_withdraw_is_recorded_before_codex_is_asked(steps):
    outbox_id = codex_uncertain(steps)
    steps.engine.ask_withdrawal(outbox_id, "chief", "q-1")
    (asked,) = [e for e in events_for(f"outbox:{outbox_id}") if e.command == "ask_withdrawal"]
    assert (asked.who, asked.evidence) == ("chief", {"by": "chief", "queued_id": "q-1"})
    assert row(outbox_id).state == "uncertain"  # asking proves nothing


def test_only_dad_or_the_chief_may_ask_to_withdraw(steps):
    outbox_id = codex_uncertain(steps)
    with pytest.raises(NotAuthorized):
        steps.engine.ask_withdrawal(outbox_id, "worker", "q-1")
    assert not Event.select().where(Event.command == "ask_withdrawal").exists()


@pytest.mark.parametrize("door", ["claude", "codex-delivered"])
def test_withdrawing_from_the_queue_needs_a_codex_envelope_not_yet_received(steps, door):
    if door == "claude":
        outbox_id = claude_uncertain(steps)
    else:
        outbox_id = codex_uncertain(steps)
        steps.engine.record_receipt(outbox_id, {"offset": 10, "shape": "client-id"})
    with pytest.raises(Conflict, match="only a Codex envelope sent and not yet received"):
        steps.engine.ask_withdrawal(outbox_id, "dad", "q-1")


def test_a_queue_sighting_is_recorded_once_per_change_and_moves_nothing(steps):
    outbox_id = codex_uncertain(steps)
    steps.engine.record_queue(outbox_id, {"queued": True, "open": False})
    assert not steps.engine.record_queue(outbox_id, {"queued": True, "open": False})["changed"]
    steps.engine.record_queue(outbox_id, {"queued": False, "open": True})
    seen = QueueSighting.get_by_id(outbox_id)
    assert (seen.queued, seen.open) == (False, True)
    recorded = [e for e in events_for(f"outbox:{outbox_id}") if e.command == "record_queue"]
    assert [e.evidence["queued"] for e in recorded] == [True, False]
    assert row(outbox_id).state == "uncertain"
