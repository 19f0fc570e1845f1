"""Nothing resends on its own (seed 001): once an envelope is proven undelivered, no
pass, timer or door makes a second attempt; only Send again, decided by Dad or the
chief, does."""

from __future__ import annotations

from doorkit import Door

from coop_engine.models import Outbox


def test_an_expired_envelope_gets_no_second_attempt_from_later_passes(door: Door) -> None:
    chat = door.chat("--inbound", "refuse")
    outbox_id = door.invite(chat)
    door.tick()
    row = door.row(outbox_id)
    assert (row["state"], row["reason"]) == ("expired", "refused-by-receiver-policy")
    for _ in range(3):
        door.clock.advance(3600)
        door.tick()
    assert [envelope.id for envelope in Outbox.select()] == [outbox_id]
    assert door.row(outbox_id)["resent_as"] is None
    assert len(chat.frames()) == 1
