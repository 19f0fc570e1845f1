"""Both receipt shapes as Claude Code 2.1.328 writes them (DESIGN 5 and 5.5): the
receiver mints its own ids, so an envelope is found by `origin.msg_id` first. An idle
receiver's `user` entry keeps Coop's uuid only on a host-named socket; a busy one's
absorbed `queued_command` attachment carries the receiver's `commandUuid` as its
`source_uuid`, never Coop's id."""

from __future__ import annotations

import json
from typing import Any

from coop_engine import receipts

OUTBOX_ID = "3b9e6f0a-1c2d-4e5f-8a7b-9c0d1e2f3a4b"
COMMAND_UUID = "0f6e2d1c-9b8a-4765-8432-10fedcba9876"  # minted by the receiver
ORIGIN = {"kind": "peer", "from": "cwkCoop", "verifiedPeerPid": 51002, "msg_id": OUTBOX_ID}


def _lines(*entries: dict[str, Any]) -> list[tuple[int, str]]:
    lines, offset = [], 0
    for entry in entries:
        text = json.dumps(entry)
        lines.append((offset, text))
        offset += len(text) + 1
    return lines


def test_an_absorbed_frame_is_found_by_its_origin_msg_id_not_its_source_uuid() -> None:
    lines = _lines(
        {
            "type": "queue-operation",
            "operation": "remove",
            "reason": "absorbed_mid_turn",
            "commandUuid": COMMAND_UUID,
        },
        {
            "type": "attachment",
            "isSidechain": False,
            "isMeta": True,
            "attachment": {
                "type": "queued_command",
                "prompt": "Another Claude session sent a message:\n...",
                "source_uuid": COMMAND_UUID,
                "origin": ORIGIN,
                "isMeta": True,
            },
            "uuid": "a1",
        },
    )
    (seen,) = receipts.sightings(lines, OUTBOX_ID)
    assert seen.is_receipt, seen.problems
    assert (seen.shape, seen.entry_uuid, seen.offset) == (
        "queued_command",
        COMMAND_UUID,
        lines[1][0],
    )
