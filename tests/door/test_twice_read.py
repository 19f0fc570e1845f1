"""The two checks that pin a receiver before a frame is written (DESIGN.md 5.4), each on
its own: the engine reads the target twice and refuses when the readings differ, before
it records any intent; the host reads the registry a third time where the chat lives
and refuses, before it connects, when that reading differs from the pinned facts.

Each check is tested with the other one out of the way, so a refusal can only be the
check under test: the engine's compare with a host that does not read again (it writes
to whatever socket the engine pinned), the host's read with a registry that changes
only after the engine's two readings agreed. Real simulated chats, real sockets."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from doorkit import Door

from coop_engine.loop.surveyed import Surveyed
from coop_engine.models import Event, HostQueue
from hosts.channel import Stream
from hosts.mac import native
from hosts.mac.host import Host
from hosts.mac.native import RECEIVER_CHANGED
from hosts.pipe import PipeHost
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


READINGS = ["target", "target", "policy_inputs", "transcript_position"]


def test_a_send_asks_its_two_readings_policy_and_position_in_one_round_trip(door: Door) -> None:
    """Before a send, the two readings, the policy inputs and the transcript's end are
    reads, asked of the Mac at once: the pass's first send's with its survey, a later
    send's on their own; each send (with its third reading) goes after its intent, on
    its own."""
    first, second = door.chat(), door.chat()
    sent = [door.invite(first), door.invite(second)]
    host = Asked(door.host)
    door.use_host(host)
    door.tick_until(lambda: msg_ids(first) + msg_ids(second) == sent)
    at = host.groups.index(["send_frame"])
    assert host.groups[at - 1 : at + 3] == [
        ["survey", *READINGS],
        ["send_frame"],
        READINGS,
        ["send_frame"],
    ]
    assert ["target"] not in host.groups


class Written(Stream):
    """A helper's stream that records the operations of each write to it."""

    def __init__(self, inner: Stream, payload: int, writes: list[list[str]]) -> None:
        self.inner = inner
        self.payload = payload  # the payload's bytes, ahead of the first request
        self.writes = writes

    def send(self, data: bytes, timeout: float) -> None:
        skipped = min(self.payload, len(data))
        self.payload -= skipped
        self.writes.append([json.loads(line)["op"] for line in data[skipped:].splitlines()])
        self.inner.send(data, timeout)

    def recv(self, timeout: float) -> bytes:
        return self.inner.recv(timeout)

    def alive(self) -> bool:
        return self.inner.alive()

    def ending(self) -> str:
        return self.inner.ending()

    def close(self, broken: bool = False) -> None:
        self.inner.close(broken)


class Remote(PipeHost):
    """The chats' Mac as another Mac is asked: through its helper (over pipes, the same
    protocol as over ssh), each write to the helper recorded. A write is a round trip:
    the client reads the answers to one write before it sends the next."""

    def __init__(self, name: str, config_dir: Path) -> None:
        super().__init__(name, env={"CLAUDE_CONFIG_DIR": str(config_dir)})
        self.writes: list[list[str]] = []

    def _open(self, length: int) -> Stream:
        return Written(super()._open(length), length, self.writes)


def test_a_send_to_a_mac_behind_a_helper_costs_two_round_trips_up_to_its_frame(
    door: Door,
) -> None:
    """On the way from a pending envelope to its frame on another Mac, the pass writes to
    that Mac's helper twice: the survey with the send's readings, then the frame (after
    the intent was recorded); then observe reads the transcript."""
    chat = door.chat()
    mac = Remote(door.host.name, door.fleet.config_dir)
    door.use_host(mac)
    try:
        door.tick()  # the helper started and its first survey taken: nothing to send
        outbox_id = door.invite(chat)
        mac.writes.clear()
        door.tick()
        assert door.row(outbox_id)["facts"]["transport"] is not None
        assert mac.writes.index(["send_frame"]) == 1  # the second round trip is the frame
        assert mac.writes[0] == ["survey", *READINGS]
    finally:
        mac.close()


def test_readings_asked_with_the_survey_answer_only_the_asking_that_follows_it(
    door: Door,
) -> None:
    """What rode with the survey stands for the Mac as it was then: it answers the same
    reads asked next, once; once anything else was asked of the Mac, they are asked
    afresh."""
    chat = door.chat()
    host = Asked(door.host)
    view = Surveyed(host)
    asked = {"session_id": chat.session_id}
    readings = [(op, asked) for op in READINGS]

    view.take([], ahead=readings)
    assert view.read_together(readings)[0]["pid"] == chat.pid
    assert host.groups == [["survey", *READINGS]]  # answered from the survey's round trip
    view.read_together(readings)
    assert host.groups[-1] == READINGS  # once only

    view.take([], ahead=readings)
    view.transcript_position(chat.session_id)  # something else asked of the Mac
    view.read_together(readings)
    assert host.groups[-2:] == [["transcript_position"], READINGS]
