"""Five facts, never one (seed 000): the read model both faces use shows each fact only
when its own evidence was recorded. A socket write is not a receipt, a receipt is not an
acceptance, an acceptance is not an outcome."""

from __future__ import annotations

from typing import Any

from coop_engine import queries
from coop_engine.models import Outbox

from .support import SENT, Steps, cursor, peer_entry


def facts(outbox_id: str) -> dict[str, Any]:
    return dict(queries.envelope(Outbox.get_by_id(outbox_id))["facts"])


def known(outbox_id: str) -> set[str]:
    return {name for name, at in facts(outbox_id).items() if at is not None}


def test_each_fact_appears_with_its_own_evidence_and_no_other(steps: Steps, clock: Any) -> None:
    invitation = steps.invitation()
    outbox_id = invitation["outbox"]
    assert known(outbox_id) == {"stored"}
    attempt = steps.engine.mark_uncertain(outbox_id, cursor())["attempt"]
    assert known(outbox_id) == {"stored"}  # an intent is not a transport
    clock.advance(1)
    steps.engine.record_transport(outbox_id, attempt, SENT)
    assert known(outbox_id) == {"stored", "transport"}  # a write is not a receipt
    clock.advance(1)
    steps.engine.record_receipt(outbox_id, peer_entry(outbox_id))
    assert known(outbox_id) == {"stored", "transport", "received"}
    clock.advance(1)
    answer = {"final": f"COOP_ACCEPT {invitation['nonce']}"}
    work = steps.engine.accept(outbox_id, invitation["nonce"], answer)["work"]
    assert known(outbox_id) == {"stored", "transport", "received", "accepted"}
    # The work it was given is stored, and nothing more of it is known yet.
    assert known(work) == {"stored", "accepted"}
    at = facts(outbox_id)
    assert at["stored"] < at["transport"] < at["received"] < at["accepted"]
