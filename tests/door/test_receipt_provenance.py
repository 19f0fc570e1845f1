"""A peer entry is a receipt only with its whole provenance (DESIGN.md 5.5): `isMeta`
true and an `origin` whose `kind`, `from` and `msg_id` are exactly `peer`, `cwkCoop`
and the outbox id. Each case first shows its unspoilt entry IS a receipt, then spoils one
field alone: that entry still names the envelope, and it is a conflict, never a receipt.
Both shapes (an idle receiver's `user` entry, a busy one's `queued_command`), then the
door itself over a real simulated chat."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from doorkit import Door

from coop_engine import receipts
from coop_engine.models import Outbox

OUTBOX_ID = "3b9e6f0a-1c2d-4e5f-8a7b-9c0d1e2f3a4b"
OTHER_ID = "9d1c0b7e-5f4a-4e3d-8c2b-1a0f9e8d7c6b"
MINTED = "c41f0b7e-77aa-4b8e-9d1e-5a3c2b1d0e9f"  # the receiver's own uuid for the entry
TEXT = 'Another Claude session sent a message:\n<cross-session-message from="cwkCoop">...'


def origin() -> dict[str, Any]:
    return {"kind": "peer", "from": "cwkCoop", "msg_id": OUTBOX_ID, "verifiedPeerPid": 51002}


def idle_entry(named_by_uuid: bool = False) -> dict[str, Any]:
    """Shape 1, as Claude Code 2.1.328 writes it. `named_by_uuid`: the frame came in on
    a host-named socket, so the entry also keeps Coop's uuid (and is named by it even
    when its origin says another id)."""
    return {
        "type": "user",
        "isSidechain": False,
        "isMeta": True,
        "promptSource": "system",
        "turnOrigin": "peer",
        "origin": origin(),
        "message": {"role": "user", "content": TEXT},
        "uuid": OUTBOX_ID if named_by_uuid else MINTED,
        "timestamp": "2026-11-29T20:41:03.512Z",
    }


def busy_entry() -> dict[str, Any]:
    """Shape 2: absorbed mid-turn; `source_uuid` is the outbox id, so the entry is named
    by it whatever its origin says."""
    return {
        "type": "attachment",
        "isSidechain": False,
        "isMeta": True,
        "attachment": {
            "type": "queued_command",
            "prompt": TEXT,
            "source_uuid": OUTBOX_ID,
            "origin": origin(),
            "isMeta": True,
            "commandMode": "prompt",
        },
        "uuid": "p2",
        "timestamp": "2026-11-29T20:50:02.301Z",
    }


def _origin_of(entry: dict[str, Any]) -> dict[str, Any]:
    holder = entry["attachment"] if entry["type"] == "attachment" else entry
    found: dict[str, Any] = holder["origin"]
    return found


def _set_meta(entry: dict[str, Any], value: Any) -> None:
    # A busy entry carries isMeta twice (the entry, its attachment): either true is one.
    holders = [entry, entry["attachment"]] if entry["type"] == "attachment" else [entry]
    for holder in holders:
        if value is _MISSING:
            holder.pop("isMeta", None)
        else:
            holder["isMeta"] = value


_MISSING = object()


def spoil_origin(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def spoil(entry: dict[str, Any]) -> None:
        if value is _MISSING:
            del _origin_of(entry)[key]
        else:
            _origin_of(entry)[key] = value

    return spoil


def spoil_meta(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda entry: _set_meta(entry, value)


def spoil_whole_origin(value: Any) -> Callable[[dict[str, Any]], None]:
    def spoil(entry: dict[str, Any]) -> None:
        holder = entry["attachment"] if entry["type"] == "attachment" else entry
        holder["origin"] = value

    return spoil


def drop_origin(entry: dict[str, Any]) -> None:
    """No origin at all: the entry is still named by its uuid (or source_uuid)."""
    holder = entry["attachment"] if entry["type"] == "attachment" else entry
    del holder["origin"]


# Each spoils one provenance field and nothing else; the problem the sighting names.
SPOILS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "origin.kind human": (spoil_origin("kind", "human"), "origin.kind is 'human', not 'peer'"),
    "origin.kind missing": (spoil_origin("kind", _MISSING), "origin.kind is None, not 'peer'"),
    "origin.kind Peer": (spoil_origin("kind", "Peer"), "origin.kind is 'Peer', not 'peer'"),
    "isMeta false": (spoil_meta(False), "isMeta is not true"),
    "isMeta missing": (spoil_meta(_MISSING), "isMeta is not true"),
    "isMeta the string true": (spoil_meta("true"), "isMeta is not true"),
    "isMeta 1": (spoil_meta(1), "isMeta is not true"),
    "origin.msg_id another id": (
        spoil_origin("msg_id", OTHER_ID),
        f"origin.msg_id is {OTHER_ID!r}, not {OUTBOX_ID!r}",
    ),
    "origin.msg_id missing": (
        spoil_origin("msg_id", _MISSING),
        f"origin.msg_id is None, not {OUTBOX_ID!r}",
    ),
    "origin.from another sender": (
        spoil_origin("from", "uds:/run/user/501/cc-socks/777.sock"),
        "origin.from is 'uds:/run/user/501/cc-socks/777.sock', not 'cwkCoop'",
    ),
    "origin missing": (drop_origin, "no origin"),
    "origin not an object": (
        spoil_whole_origin("peer"),
        "no origin",
    ),
}
SHAPES: dict[str, Callable[[], dict[str, Any]]] = {
    "user": lambda: idle_entry(named_by_uuid=True),
    "queued_command": busy_entry,
}


def sightings_of(entry: dict[str, Any]) -> list[receipts.Sighting]:
    return receipts.sightings([(0, json.dumps(entry))], OUTBOX_ID)


@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("spoilt", list(SPOILS))
def test_an_entry_with_one_spoilt_provenance_field_is_a_conflict_not_a_receipt(
    shape: str, spoilt: str
) -> None:
    control = SHAPES[shape]()
    (seen,) = sightings_of(control)
    assert seen.is_receipt and seen.problems == [] and seen.shape == shape

    spoil, problem = SPOILS[spoilt]
    entry = copy.deepcopy(control)
    spoil(entry)
    (seen,) = sightings_of(entry)  # it still names the envelope: a sighting, not nothing
    assert seen.shape == shape
    assert not seen.is_receipt
    assert seen.problems == [problem]


def test_the_idle_shape_named_only_by_origin_msg_id_is_a_receipt_and_each_spoil_refuses_it() -> (
    None
):
    # The usual idle entry: the receiver minted its own uuid, so origin.msg_id alone
    # names the envelope. Spoiling the other fields leaves it named, and refused.
    control = idle_entry()
    (seen,) = sightings_of(control)
    assert seen.is_receipt and seen.entry_uuid == MINTED
    for spoilt in ("origin.kind human", "isMeta false", "isMeta missing"):
        spoil, problem = SPOILS[spoilt]
        entry = copy.deepcopy(control)
        spoil(entry)
        (seen,) = sightings_of(entry)
        assert (seen.is_receipt, seen.problems) == (False, [problem]), spoilt


def test_an_entry_naming_another_envelope_in_every_field_is_not_a_sighting_at_all() -> None:
    entry = idle_entry()
    _origin_of(entry)["msg_id"] = OTHER_ID
    assert sightings_of(entry) == []


# --- the door, over a real simulated chat ------------------------------------------------


def _written(chat: Any, outbox_id: str, entry: dict[str, Any]) -> None:
    line = json.dumps({**entry, "sessionId": chat.session_id})
    with chat.transcript.open("a") as transcript:
        transcript.write(line.replace(OUTBOX_ID, outbox_id) + "\n")


@pytest.mark.parametrize("spoilt", ["origin.kind human", "isMeta missing", "isMeta false"])
def test_the_door_records_a_spoilt_peer_entry_as_a_conflict_and_the_unspoilt_one_as_receipt(
    door: Door, spoilt: str
) -> None:
    chat = door.chat("--lose-frames", "--history")  # the chat writes nothing of the frame
    outbox_id = door.invite(chat)
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"

    spoil, problem = SPOILS[spoilt]
    entry = idle_entry()
    spoil(entry)
    _written(chat, outbox_id, entry)
    door.tick()
    row = door.row(outbox_id)
    assert row["conflict"] == "wrong provenance: " + problem.replace(OUTBOX_ID, outbox_id)
    assert row["state"] == "uncertain"
    assert row["facts"]["received"] is None

    _written(chat, outbox_id, idle_entry())  # the same entry with its provenance
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "delivered"
    receipt = Outbox.get_by_id(outbox_id).receipt
    assert receipt["origin"]["msg_id"] == outbox_id and receipt["problems"] == []
