"""Coop's Codex door against the real Codex CLI 0.171.0, offline (door_driver.py).

One driver run (about half a minute) plays every scenario inside a loopback-only network
namespace; each test checks one of them from what Coop's own CLI and Codex's own records
said. Skips like the other real-binary tests when the CLI cannot run here; fails
instead under COOP_REQUIRE_REAL_CODEX=1 (CI).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import real_codex

DOOR_DRIVER = Path(__file__).with_name("door_driver.py")
DOOR_TIMEOUT = 400.0


@pytest.fixture(scope="module")
def door(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("codex-door")
    return real_codex.run_driver(codex_binary, root, DOOR_DRIVER, DOOR_TIMEOUT)


def scenario(door: dict[str, Any], name: str) -> dict[str, Any]:
    seen: dict[str, Any] = door[name]
    assert "error" not in seen, seen.get("error")
    return seen


def test_a_held_thread_receives_the_invitation_and_the_todo_is_taken(
    door: dict[str, Any],
) -> None:
    held = scenario(door, "held")
    (chat,) = held["chats"]
    assert (chat["vendor"], chat["status"]) == ("codex", "open")
    assert chat["inbound"].startswith("picked up within about 10 s")
    after_add = held["after_add"]
    assert after_add["door"] == "codex"
    assert after_add["inbound"]["open"] is True
    row = held["row"]
    facts = row["facts"]
    assert row["state"] == "delivered"
    assert facts["stored"] <= facts["transport"] <= facts["received"] <= facts["accepted"]
    assert held["todo_state"] == "taken"
    assert held["receipts"] == 1  # one item_completed carrying the outbox id


def test_an_unheld_thread_stays_queued_is_withdrawn_and_sent_again_once(
    door: dict[str, Any],
) -> None:
    unheld = scenario(door, "unheld")
    (chat,) = unheld["chats"]
    assert (chat["status"], chat["inbound"]) == ("saved", "waits until the thread is opened")
    queued = unheld["queued"]
    assert (queued["state"], queued["queued"], queued["thread_open"]) == ("uncertain", True, False)
    assert queued["facts"]["received"] is None
    assert unheld["withdraw"]["rc"] == 0, unheld["withdraw"]
    after = unheld["after"]
    assert (after["state"], after["reason"]) == ("expired", "withdrawn-from-queue")
    assert unheld["queue_rows_old"] == 0  # Codex's own queue no longer holds it
    assert unheld["resend"]["rc"] == 0, unheld["resend"]
    assert unheld["resend_twice"]["rc"] == 1
    assert "already sent again" in unheld["resend_twice"]["err"]
    resent = unheld["resent"]
    assert (resent["state"], resent["queued"]) == ("uncertain", True)
    assert unheld["queue_rows_new"] == 1


def test_archived_unknown_and_malformed_threads_are_refused_and_none_is_created(
    door: dict[str, Any],
) -> None:
    refused = scenario(door, "refused")
    archived, unknown, malformed = refused["archived"], refused["unknown"], refused["malformed"]
    assert archived["rc"] == 1 and "is archived" in archived["err"]
    assert unknown["rc"] == 1 and "No Mac has a saved Codex thread" in unknown["err"]
    assert malformed["rc"] == 2
    for answer in (archived, unknown, malformed):
        assert len(answer["err"].splitlines()) == 1
    assert refused["rollouts_after"] == refused["rollouts_before"]
    assert not [row for row in refused["outbox"] if row["todo"] == refused["todo"]]


def test_a_holder_killed_mid_turn_leaves_the_invitation_received_and_unanswered(
    door: dict[str, Any],
) -> None:
    killed = scenario(door, "killed_holder")
    assert killed["received"]["state"] == "delivered"
    later = killed["later"]
    assert later["state"] == "delivered"  # never lost: it was received
    assert later["facts"]["accepted"] is None
    assert later["reason"] is None
    assert killed["todo_state"] == "invited"


def test_coop_killed_between_intent_and_the_adds_answer_delivers_once(
    door: dict[str, Any],
) -> None:
    killed = scenario(door, "killed_coop")
    assert killed["withheld"], "the add's answer was never withheld: nothing was tested"
    assert killed["killed"]["state"] == "uncertain"
    assert killed["killed"]["facts"]["transport"] is None
    # Found by its client id in Codex's queue, not sent a second time.
    assert killed["reconciled"]["facts"]["transport"] is not None
    assert killed["queue_rows_after_reconcile"] == 1
    assert killed["row"]["state"] == "delivered"
    assert killed["receipts"] == 1
