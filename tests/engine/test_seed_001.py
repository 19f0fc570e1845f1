"""Seed 001, "Held, Dropped, Send Again": the lesson's sketch, played against the Engine
and then read back through the real `coop outbox --json`.

The clock's steps decide: the receiver (a bypass chat, seed 001's Desktop build, which
writes nothing when it holds) is asked for its verdict by `delivery_verdict` at each step,
and says nothing until the dialog's five minutes and the minute's grace are over, then
held-for-approval-then-expired; the facts the CLI shows are the times of those steps."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from coop_engine.engine import Engine
from coop_engine.errors import ALREADY_SENT_AGAIN, NOT_ELIGIBLE_FOR_SEND, Conflict
from coop_engine.formats import iso
from coop_engine.policy import delivery_verdict

from .support import HELD, SENT, START, cursor, peer_entry, row

ISO_8601 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$")
FIELDS = {
    "id",
    "kind",
    "todo",
    "session",
    "state",
    "facts",
    "reason",
    "conflict",
    "last_error",
    "resent_as",
    "resent_from",
    "created_at",
    "payload",
}
FACTS = ("stored", "transport", "received", "accepted", "outcome")
# What inbound_policy predicts for seed 001's receiver: bypassPermissions, no explicit
# crossSessionInbound, the default dialog expiry.
PREDICTED = {
    "verdict": "hold",
    "source": "permission-mode-parity",
    "dialog_expiry": "5m",
    "mode": "bypassPermissions",
}
DIALOG_AND_GRACE = 5 * 60 + 60


def the_receivers_verdict(sent_at: float, now: float) -> str | None:
    """delivery_verdict for the receiver that held the frame and wrote nothing."""
    return delivery_verdict(PREDICTED, sent_at, now, lambda: "idle", lambda: False)


def sent(engine: Engine, outbox_id: str, at: float) -> None:
    """Intent first (with the prediction and the send's time), then the transport."""
    at_send = {**cursor(), "inbound": PREDICTED, "sent_at": at}
    attempt = engine.mark_uncertain(outbox_id, at_send)["attempt"]
    engine.record_transport(outbox_id, attempt, SENT)


def is_iso(value: str) -> bool:
    return bool(ISO_8601.match(value)) and datetime.fromisoformat(value) is not None


@pytest.fixture
def played(steps, clock):
    """The sketch: a receiver that silently drops the first frame, one Send again."""
    engine = steps.engine
    first = steps.invitation()["outbox"]  # enqueue, at START
    sent(engine, first, clock())  # deliver: intent first
    assert row(first).state == "uncertain"

    with pytest.raises(Conflict) as blind_retry:  # a blind retry is refused
        engine.mark_uncertain(first, cursor())
    assert str(blind_retry.value) == NOT_ELIGIBLE_FOR_SEND

    clock.advance(5 * 60)  # silence: the dialog is still open, nothing proves loss
    assert the_receivers_verdict(START, clock()) is None
    clock.advance(59)  # the dialog expired; the grace for the file append is not over
    assert the_receivers_verdict(START, clock()) is None
    assert row(first).state == "uncertain"

    clock.advance(1)  # dialog expiry plus grace: now the verdict
    reason = the_receivers_verdict(START, clock())
    assert reason == HELD
    evidence = {"reason": reason, "message_id": first, "sent_at": START, "observed_at": clock()}
    engine.expire(first, evidence)
    assert row(first).state == "expired"

    second = engine.resend(first, by="dad")["outbox"]  # send again, by Dad's press
    sent(engine, second, clock())
    clock.advance(2)
    engine.record_receipt(second, peer_entry(second))
    assert row(second).state == "delivered"
    # The second attempt's own clock: still inside its grace, no verdict for it yet.
    assert the_receivers_verdict(START + DIALOG_AND_GRACE, clock()) is None

    with pytest.raises(Conflict) as once:  # second Send again refused
        engine.resend(first, by="dad")
    assert str(once.value) == "This delivery was already sent again" == ALREADY_SENT_AGAIN
    return first, second


def test_seed_001_sketch_runs_against_the_engine(played):
    first, second = played
    assert (row(first).state, row(first).resent_as) == ("expired", second)
    assert (row(second).state, row(second).resent_from) == ("delivered", first)
    expiry = row(first).expiry
    assert (expiry["reason"], expiry["observed_at"] - expiry["sent_at"]) == (HELD, DIALOG_AND_GRACE)
    # Each fact at the time of its step: sent at once, given up 6 minutes on, sent again
    # at that moment, received 2 seconds after.
    assert (row(first).created_at, row(first).transport_at) == (START, START)
    assert row(first).received_at is None
    again = START + DIALOG_AND_GRACE
    assert (row(second).created_at, row(second).transport_at) == (again, again)
    assert row(second).received_at == again + 2


def test_seed_001_outbox_json_shows_both_rows_linked(played, run_coop):
    first, second = played
    done = run_coop("outbox", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list)
    by_id = {r["id"]: r for r in rows}
    assert set(by_id) == {first, second}
    for envelope in rows:
        assert FIELDS <= set(envelope)
        assert set(envelope["facts"]) == set(FACTS)
        for name in FACTS:
            value = envelope["facts"][name]
            assert value is None or is_iso(value), (name, value)
        assert is_iso(envelope["created_at"])
        assert (envelope["kind"], envelope["todo"]) == ("invitation", 1)
        assert envelope["session"].startswith("claude:")
        assert isinstance(envelope["payload"], dict)

    old, new = by_id[first], by_id[second]
    assert (old["state"], old["reason"], old["resent_as"], old["resent_from"]) == (
        "expired",
        HELD,
        second,
        None,
    )
    assert (new["state"], new["reason"], new["resent_as"], new["resent_from"]) == (
        "delivered",
        None,
        None,
        first,
    )
    assert old["facts"] == {
        "stored": iso(START),
        "transport": iso(START),
        "received": None,
        "accepted": None,
        "outcome": None,
    }
    assert new["facts"] == {
        "stored": iso(START + DIALOG_AND_GRACE),
        "transport": iso(START + DIALOG_AND_GRACE),
        "received": iso(START + DIALOG_AND_GRACE + 2),
        "accepted": None,
        "outcome": None,
    }
    assert new["payload"]["text"] != old["payload"]["text"]


def test_seed_001_second_send_again_through_the_cli_is_refused(played, run_coop):
    first, _ = played
    done = run_coop("resend", first, "--by", "dad")
    assert done.returncode == 1
    assert done.stderr.strip().endswith(ALREADY_SENT_AGAIN)
    assert done.stdout == ""
