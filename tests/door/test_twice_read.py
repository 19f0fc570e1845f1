"""The two checks that pin a receiver before a frame is written (DESIGN.md 5.4), each on
its own: the engine reads the target twice and refuses when the readings differ, before
it records any intent; the host reads the registry a third time where the chat lives
and refuses, before it connects, when that reading differs from the pinned facts.

Each check is tested with the other one out of the way, so a refusal can only be the
check under test: the engine's compare with a host that does not read again (it writes
to whatever socket the engine pinned), the host's read with a registry that changes
only after the engine's two readings agreed. Real simulated chats, real sockets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from doorkit import Door

from coop_engine.models import Event, HostQueue
from hosts.mac import native
from hosts.mac.host import Host
from hosts.mac.native import RECEIVER_CHANGED
from hosts.sim.launch import SimChat


class ChangingRegistry(Host):
    """A LocalHost whose registry is rewritten (`change`) right after its N-th `target`
    reading; with `reread=False` its send does not read the registry a third time: it
    writes the frame to the socket the engine pinned, as a host without that check would."""

    def __init__(
        self, inner: Host, after_reads: int, change: Callable[[], None], reread: bool
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.after_reads = after_reads
        self.change = change
        self.reread = reread
        self.reads = 0
        self.sends = 0

    def call(self, op: str, **args: Any) -> Any:
        if op == "send_frame":
            self.sends += 1
            if not self.reread:
                return native.write_frame(args["expected"]["socket_path"], args["line"].encode())
        result = self.inner.call(op, **args)
        if op == "target":
            self.reads += 1
            if self.reads == self.after_reads:
                self.change()
        return result


def _never() -> None:
    pass


def point_at(chat: SimChat, other: SimChat) -> Callable[[], None]:
    """The chat's registry entry now names the other chat's (also private) socket."""
    return lambda: chat.rewrite_entry(messagingSocketPath=str(other.socket))


def intents(outbox_id: str) -> list[str]:
    """The host-queue rows of the envelope's attempts, by state."""
    return [attempt.state for attempt in HostQueue.select().where(HostQueue.outbox == outbox_id)]


def intent_events(outbox_id: str) -> int:
    return (
        Event.select()
        .where((Event.command == "mark_uncertain") & (Event.subject == f"outbox:{outbox_id}"))
        .count()
    )


def msg_ids(chat: SimChat) -> list[str]:
    return [frame["msg_id"] for frame in chat.frames()]


# --- the engine's compare, with a host that does not read again --------------------------


def test_a_host_that_does_not_read_again_delivers_what_the_engine_pinned(door: Door) -> None:
    # The control: nothing changes, and this host writes the frame where the engine's
    # readings pointed, so a refusal below can only be the engine's own.
    chat = door.chat()
    outbox_id = door.invite(chat)
    host = ChangingRegistry(door.host, 1, _never, reread=False)
    door.use_host(host)
    door.tick_until(lambda: msg_ids(chat) == [outbox_id])
    assert host.sends == 1
    assert door.row(outbox_id)["state"] in ("uncertain", "delivered")
    assert intents(outbox_id) == ["written"]


def test_the_engine_refuses_readings_that_differ_before_recording_any_intent(
    door: Door,
) -> None:
    chat, other = door.chat(), door.chat()
    outbox_id = door.invite(chat)
    # The entry changes between the engine's first and second reading; the host would
    # write, unchecked, to the socket of the first.
    host = ChangingRegistry(door.host, 1, point_at(chat, other), reread=False)
    door.use_host(host)
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "pending"
    assert row["last_error"] == RECEIVER_CHANGED
    assert row["facts"]["transport"] is None
    assert host.reads == 2 and host.sends == 0  # refused by the engine: the host never asked
    assert intents(outbox_id) == [] and intent_events(outbox_id) == 0

    # The entry is put right: the next pass sends to the chat. Only then are the two
    # inboxes read, once the frame that did go has arrived.
    chat.rewrite_entry(messagingSocketPath=str(chat.socket))
    door.tick_until(lambda: msg_ids(chat) == [outbox_id])
    assert msg_ids(other) == []
    assert intents(outbox_id) == ["written"]


# --- the host's third read, with readings the engine could not tell apart --------------


def test_the_hosts_third_read_refuses_a_registry_changed_after_the_engines_readings(
    door: Door,
) -> None:
    chat, other = door.chat(), door.chat()
    outbox_id = door.invite(chat)
    # Both engine readings agree; the entry changes after them, before the send.
    host = ChangingRegistry(door.host, 2, point_at(chat, other), reread=True)
    door.use_host(host)
    door.tick()
    row = door.row(outbox_id)
    # The intent was recorded (the engine's check passed), then the host refused before
    # connecting: the attempt is refused and the envelope pending again.
    assert host.sends == 1 and intent_events(outbox_id) == 1
    assert intents(outbox_id) == ["refused"]
    assert row["state"] == "pending"
    assert row["last_error"] == RECEIVER_CHANGED

    chat.rewrite_entry(messagingSocketPath=str(chat.socket))
    door.tick_until(lambda: msg_ids(chat) == [outbox_id])
    assert msg_ids(other) == []
    assert intents(outbox_id) == ["refused", "written"]


FACTS = ("pid", "birth", "socket_path", "socket_inode")


def _elsewhere(fact: str, pinned: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """The pinned facts with one of them another live chat's (a birth: one the chat's pid
    never had, as when the pid was reused)."""
    changed = pinned["birth"] + "0" if fact == "birth" else other[fact]
    return {**pinned, fact: changed}


@pytest.mark.parametrize("fact", FACTS)
def test_the_host_writes_nothing_when_one_pinned_fact_differs_from_its_own_reading(
    door: Door, fact: str
) -> None:
    chat, other = door.chat(), door.chat()
    pinned = door.host.target(chat.session_id)
    expected = _elsewhere(fact, pinned, door.host.target(other.session_id))
    assert expected != pinned
    line = native.frame(chat.session_id, "0b5e2c4a-6d1f-4e8a-9b7c-3f2e1d0c9a8b", "First").decode()
    refused = door.host.send_frame(expected, chat.session_id, line)
    assert refused == {
        "ok": False,
        "written": False,
        "stage": "verify",
        "error": RECEIVER_CHANGED,
    }

    control_id = "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
    line = native.frame(chat.session_id, control_id, "Second").decode()
    sent = door.host.send_frame(pinned, chat.session_id, line)
    assert sent["ok"] and sent["written"]
    door.tick_until(lambda: msg_ids(chat) != [])
    assert msg_ids(chat) == [control_id]
    assert msg_ids(other) == []


# --- the readings' round trips ------------------------------------------------------------


class Asked(Host):
    """A LocalHost that records how it was asked: each `read_together` as one group of
    operations (one round trip to a Mac behind a helper), each other call alone."""

    def __init__(self, inner: Host) -> None:
        self.inner = inner
        self.name = inner.name
        self.groups: list[list[str]] = []

    def call(self, op: str, **args: Any) -> Any:
        self.groups.append([op])
        return self.inner.call(op, **args)

    def read_together(self, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        self.groups.append([op for op, _ in requests])
        return self.inner.read_together(requests)


def test_a_send_asks_its_two_readings_policy_and_position_in_one_round_trip(door: Door) -> None:
    """Before a send, the two readings, the policy inputs and the transcript's end are
    reads, asked of the Mac at once; the send (with its third reading) goes after the
    intent, on its own."""
    chat = door.chat()
    outbox_id = door.invite(chat)
    host = Asked(door.host)
    door.use_host(host)
    door.tick_until(lambda: msg_ids(chat) == [outbox_id])
    readings = ["target", "target", "policy_inputs", "transcript_position"]
    assert readings in host.groups
    assert host.groups[host.groups.index(readings) + 1] == ["send_frame"]
    assert ["target"] not in host.groups
