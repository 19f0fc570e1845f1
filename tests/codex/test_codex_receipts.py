"""Reading a Codex rollout for one envelope (coop_engine/loop/doors/rollouts.py): the receipt is the
`item_completed` UserMessage whose `client_id` is the outbox id (or, for the
`codex queue` fallback, whose text ends with the envelope's marker); the answer is
the final of the turn that receipt began."""

from __future__ import annotations

import json
from typing import Any

from coop_engine.loop.doors import rollouts
from hosts.mac.codex_door import marker

ENVELOPE = "5f0c7a52-7f1d-4a38-9d0e-2b1c3d4e5f60"
TURN = "01a23224-8b42-7c83-9c71-067de745e71c"


def event(payload: dict[str, Any]) -> str:
    stamp = "2026-12-01T15:00:00.000Z"
    return json.dumps({"timestamp": stamp, "type": "event_msg", "payload": payload})


def user_item(client_id: str | None, text: str = "hello", turn: str = TURN) -> str:
    content = [{"type": "text", "text": text, "text_elements": []}]
    item: dict[str, Any] = {"type": "UserMessage", "id": "item-1", "content": content}
    if client_id is not None:
        item["client_id"] = client_id
    return event({"type": "item_completed", "thread_id": "t", "turn_id": turn, "item": item})


def test_the_user_message_carrying_the_client_id_is_the_receipt() -> None:
    (seen,) = rollouts.receipts([(100, user_item(ENVELOPE))], ENVELOPE)
    assert (seen.offset, seen.turn_id, seen.item_id, seen.shape) == (
        100,
        TURN,
        "item-1",
        "client-id",
    )


def test_other_client_ids_and_other_items_are_not_receipts() -> None:
    agent_item = {"type": "AgentMessage", "client_id": ENVELOPE}
    agent = event({"type": "item_completed", "turn_id": TURN, "item": agent_item})
    response = json.dumps({"type": "response_item", "payload": {"client_id": ENVELOPE}})
    lines = [
        (1, user_item("another-envelope")),
        (2, user_item(ENVELOPE.upper())),
        (3, agent),
        (4, response),
        (5, user_item(None, f"quoting {ENVELOPE} in passing")),
        (6, "not json " + ENVELOPE),
    ]
    assert list(rollouts.receipts(lines, ENVELOPE)) == []


def test_the_fallback_receipt_is_a_user_message_ending_with_the_marker() -> None:
    text = f"Please look at the importer.\n\n{marker(ENVELOPE)}"
    (seen,) = rollouts.receipts([(7, user_item(None, text))], ENVELOPE)
    assert seen.shape == "marker"
    # `codex queue` gives the message a client id of its own, never printed.
    (cli,) = rollouts.receipts(
        [(9, user_item("01a2322c-0000-7000-8000-000000000001", text))], ENVELOPE
    )
    assert cli.shape == "marker"
    # Another envelope's marker, or the marker quoted mid-text, is not this receipt.
    assert list(rollouts.receipts([(8, user_item(None, marker("other")))], ENVELOPE)) == []
    quoted = f"{marker(ENVELOPE)} was in the last message"
    assert list(rollouts.receipts([(10, user_item(None, quoted))], ENVELOPE)) == []


def test_the_turn_ends_with_its_task_complete_and_its_last_agent_message() -> None:
    other = {"type": "task_complete", "turn_id": "another-turn", "last_agent_message": "x"}
    ours = {"type": "task_complete", "turn_id": TURN, "last_agent_message": "COOP_ACCEPT n"}
    lines = [(10, event(other)), (20, event(ours))]
    end = rollouts.turn_end(lines, TURN)
    assert end is not None and (end.offset, end.ended, end.final) == (
        20,
        "task_complete",
        "COOP_ACCEPT n",
    )


def test_an_aborted_turn_ends_without_a_final_and_a_running_one_has_not_ended() -> None:
    aborted = rollouts.turn_end([(5, event({"type": "turn_aborted", "turn_id": TURN}))], TURN)
    assert aborted is not None and (aborted.ended, aborted.final) == ("turn_aborted", None)
    assert rollouts.turn_end([(5, user_item(ENVELOPE))], TURN) is None
