"""Withdrawing is a decision (seed 001): Dad's, or the chief's as his proxy; nobody
else takes an envelope back, not even one never sent."""

from __future__ import annotations

import pytest

from coop_engine.errors import NotAuthorized
from coop_engine.models import Outbox

from .support import Steps, counts


@pytest.mark.parametrize("by", ["worker", "coop", ""])
def test_only_dad_or_the_chief_withdraws_a_pending_envelope(steps: Steps, by: str) -> None:
    outbox_id = steps.invitation()["outbox"]
    before = counts()
    with pytest.raises(NotAuthorized, match="decided by dad or chief"):
        steps.engine.withdraw(outbox_id, by)
    assert counts() == before
    assert Outbox.get_by_id(outbox_id).state == "pending"
    assert steps.engine.withdraw(outbox_id, "chief")["state"] == "cancelled"
