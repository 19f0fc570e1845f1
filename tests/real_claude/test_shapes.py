"""shapes.py finds the differences it exists for (no chat needed)."""

from __future__ import annotations

import copy
from typing import Any

from . import shapes

MSG = "24519e5b-0000-4000-8000-000000000000"
TEXT = "Coop invites you to todo #1: x\nTo take it, end your reply with: COOP_ACCEPT tok"
COMMON = {"isSidechain": False, "userType": "external", "sessionId": "s", "cwd": "/p"}


def absorbed_turn() -> list[dict[str, Any]]:
    origin = {"kind": "peer", "from": "cwkCoop", "verifiedPeerPid": 7, "msg_id": MSG}
    use = {"type": "assistant", "message": {"content": [{"type": "tool_use", "id": "t"}]}}
    result = {"type": "user", "message": {"content": [{"type": "tool_result"}]}}
    return [
        {"type": "mode", "mode": "normal"},
        {"type": "permission-mode", "permissionMode": "auto"},
        {**COMMON, "type": "user", "uuid": "u1", "parentUuid": None, "origin": {"kind": "human"},
         "message": {"content": "COOP_WORK 3"}},
        {**COMMON, **use, "uuid": "a1", "parentUuid": "u1"},
        {"type": "queue-operation", "operation": "enqueue", "timestamp": "t", "sessionId": "s",
         "content": TEXT},
        {"type": "queue-operation", "operation": "remove", "timestamp": "t", "sessionId": "s",
         "content": TEXT, "reason": "absorbed_mid_turn", "commandUuid": "c1", "deliveryId": "d"},
        {**COMMON, **result, "uuid": "r1", "parentUuid": "a1"},
        {**COMMON, "type": "attachment", "uuid": "q1", "parentUuid": "r1", "timestamp": "t",
         "attachment": {"type": "queued_command", "prompt": TEXT, "source_uuid": "c1",
                        "delivery_id": "d", "origin": origin, "timestamp": "t", "isMeta": True}},
        {**COMMON, **use, "uuid": "a2", "parentUuid": "q1"},
        {**COMMON, **result, "uuid": "r2", "parentUuid": "a2"},
        {**COMMON, **use, "uuid": "a3", "parentUuid": "r2"},
        {**COMMON, **result, "uuid": "r3", "parentUuid": "a3"},
        {**COMMON, "type": "assistant", "uuid": "a4", "parentUuid": "r3",
         "message": {"content": [{"type": "text", "text": "COOP_ACCEPT tok"}]}},
        {**COMMON, "type": "system", "subtype": "turn_duration", "uuid": "e", "parentUuid": "a4"},
    ]  # fmt: skip


def problems(real: list[dict[str, Any]], sim: list[dict[str, Any]]) -> list[str]:
    envelopes = [(MSG, TEXT)]
    return shapes.transcript_differences(real, sim) + shapes.facts_differences(
        real, sim, envelopes, envelopes
    )


def test_the_same_shapes_with_other_values_and_more_tool_calls_match() -> None:
    real = absorbed_turn()
    sim = copy.deepcopy(real)
    sim[4]["timestamp"] = sim[12]["message"]["content"][0]["text"] = "other values"
    del sim[10:12]  # one tool call fewer after the absorption: the model's choice
    sim[10]["parentUuid"] = "r2"
    real.insert(6, {"type": "tools-used", "tools": []})  # bookkeeping Coop never reads
    assert problems(real, sim) == []


def test_a_frame_that_lands_between_two_tool_calls_matches_one_during_the_next() -> None:
    real = absorbed_turn()
    enqueue = real.pop(4)
    use, result = copy.deepcopy(real[3]), copy.deepcopy(real[5])
    use["uuid"], result["uuid"], result["parentUuid"] = "a0", "r0", "a0"
    real[3:3] = [use, result, enqueue]  # a call before, then the frame, then a1
    real[6]["parentUuid"] = "r0"
    assert problems(real, absorbed_turn()) == []


def test_a_frame_enqueued_before_the_turn_is_an_order_difference() -> None:
    real = absorbed_turn()
    sim = copy.deepcopy(real)
    sim.insert(2, sim.pop(4))
    assert problems(real, sim)[0].startswith("entry order differs")


def test_a_top_level_is_meta_and_an_id_on_enqueue_are_found() -> None:
    real = absorbed_turn()
    sim = copy.deepcopy(real)
    sim[7]["isMeta"] = True
    sim[4]["commandUuid"] = "c1"
    found = "\n".join(problems(real, sim))
    assert "attachment:queued_command #5 keys" in found
    assert "top-level isMeta" in found
    assert "enqueue records the raw text, no id: real True, simulator False" in found


def test_an_attachment_before_the_tool_result_is_an_order_difference() -> None:
    real = absorbed_turn()
    sim = copy.deepcopy(real)
    sim[6], sim[7] = sim[7], sim[6]
    assert problems(real, sim)[0].startswith("entry order differs")


def test_notice_wording_and_registry_status_are_compared() -> None:
    held = "Held peer message \u2014 from an unidentified session [verified pid 7]; preview: "
    real = [
        {"type": "system", "subtype": "informational", "content": held + "\u00abHi\u00bb (1 held)."}
    ]
    sim = [
        {
            "type": "system",
            "subtype": "informational",
            "content": "Held peer message \u00abHi\u00bb",
        }
    ]
    assert "notice:held #0 wording" in "\n".join(shapes.transcript_differences(real, sim))
    entry = {"pid": 1, "status": "idle", "tmux": "chat:@0.%0"}
    waiting = {"pid": 1, "status": "waiting", "waitingFor": "permission prompt"}
    found = shapes.registry_differences({"holding": entry}, {"holding": waiting})
    assert any("status" in p for p in found) and any("keys" in p for p in found)
    assert shapes.registry_differences({"x": entry}, {"x": {"pid": 2, "status": "idle"}}) == []


def test_the_simulator_may_not_invent_entry_types() -> None:
    real = absorbed_turn()
    sim = [*copy.deepcopy(real), {"type": "made-up"}]
    assert "entry types the real chat does not: ['made-up']" in problems(real, sim)[0]
