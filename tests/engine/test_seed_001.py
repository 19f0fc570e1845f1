"""Seed 001, "Held, Dropped, Send Again": the lesson's sketch, played against the Engine
and then read back through the real `coop outbox --json`."""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest

from coop_engine.errors import ALREADY_SENT_AGAIN, NOT_ELIGIBLE_FOR_SEND, Conflict

from .support import HELD, SENT, cursor, peer_entry, row, verdict

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


def is_iso(value: str) -> bool:
    return bool(ISO_8601.match(value)) and datetime.fromisoformat(value) is not None


@pytest.fixture
def played(steps, clock):
    """The sketch: a receiver that silently drops the first frame, one Send again."""
    engine = steps.engine
    first = steps.invitation()["outbox"]  # enqueue

    attempt = engine.mark_uncertain(first, cursor())["attempt"]  # deliver: intent first
    engine.record_transport(first, attempt, SENT)
    assert row(first).state == "uncertain"

    with pytest.raises(Conflict) as blind_retry:  # a blind retry is refused
        engine.mark_uncertain(first, cursor())
    assert str(blind_retry.value) == NOT_ELIGIBLE_FOR_SEND

    clock.advance(5 * 60)  # silence: still uncertain
    assert row(first).state == "uncertain"

    clock.advance(60)  # dialog expiry plus grace: the verdict
    engine.expire(first, verdict(first, HELD))
    assert row(first).state == "expired"

    second = engine.resend(first, by="dad")["outbox"]  # send again, by Dad's press
    attempt = engine.mark_uncertain(second, cursor())["attempt"]
    engine.record_transport(second, attempt, SENT)
    clock.advance(2)
    engine.record_receipt(second, peer_entry(second))
    assert row(second).state == "delivered"

    with pytest.raises(Conflict) as once:  # second Send again refused
        engine.resend(first, by="dad")
    assert str(once.value) == "This delivery was already sent again" == ALREADY_SENT_AGAIN
    return first, second


def test_seed_001_sketch_runs_against_the_engine(played):
    first, second = played
    assert (row(first).state, row(first).resent_as) == ("expired", second)
    assert (row(second).state, row(second).resent_from) == ("delivered", first)


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
    assert old["facts"]["stored"] and old["facts"]["transport"] and not old["facts"]["received"]
    assert new["facts"]["received"] and not new["facts"]["accepted"]
    assert new["payload"]["text"] != old["payload"]["text"]


def test_seed_001_second_send_again_through_the_cli_is_refused(played, run_coop):
    first, _ = played
    done = run_coop("resend", first, "--by", "dad")
    assert done.returncode == 1
    assert done.stderr.strip().endswith(ALREADY_SENT_AGAIN)
    assert done.stdout == ""
