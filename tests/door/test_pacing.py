"""Pacing end to end (DESIGN.md 5.7b): real coordinator passes against a real simulated
chat, which drops what the real receiver drops (a bucket of 30 refilled at 0.5 a second,
at most 50 undelivered queued, the same body again within 30 s). Coop must send so that
the chat drops nothing, and keep the rest pending, saying why, until its time.

The engine's clock is the test's. The chat times arrivals by its own clock (real time,
sped up by its time scale), so `Coupled.advance` lets at least as much of the chat's
time pass as it moves the engine's: the chat's clock never falls behind Coop's.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from doorkit import Door
from waiting import wait_until

from coop_engine import pacing
from coop_engine.models import Event, HostQueue, Outbox
from hosts.sim.launch import SimChat
from hosts.sim.options import TIME_SCALE_ENV

DROPPED = "Dropped a peer message"
_NAMED = re.compile(r" at (\d\d):(\d\d):(\d\d)")


class Coupled:
    """A Door whose chats run at ``scale`` of real time, and whose engine clock the test
    moves together with theirs."""

    def __init__(self, door: Door, scale: float) -> None:
        self.door = door
        self.scale = scale

    def chat(self, *args: str) -> SimChat:
        return self.door.fleet.start(*args, env={TIME_SCALE_ENV: str(self.scale)})

    def advance(self, seconds: float) -> None:
        self.door.clock.advance(seconds)
        time.sleep(seconds * self.scale)  # the chat's clock must keep up, never lag

    def invitations(self, chat: SimChat, count: int) -> list[str]:
        """New invitations to ``chat``, in the order the coordinator takes them."""
        made = [self.door.invite(chat, f"Todo number {n}") for n in range(count)]
        rows = Outbox.select(Outbox.id).where(Outbox.id.in_(made))
        return [row.id for row in rows.order_by(Outbox.created_at, Outbox.id)]

    def run(self, check: Callable[[], bool], step: float, timeout: float = 120) -> None:
        """Passes, each followed by ``step`` seconds of both clocks, until ``check``."""
        self.door.tick()

        def passed() -> bool:
            if check():
                return True
            self.advance(step)
            self.door.tick()
            return False

        wait_until(passed, "the passes' outcome", timeout, 0, detail=lambda: self.door.log[-10:])


def state(outbox_id: str) -> str:
    return str(Outbox.get_by_id(outbox_id).state)


def reason(outbox_id: str) -> str | None:
    return Outbox.get_by_id(outbox_id).last_error  # type: ignore[no-any-return]


def states(ids: list[str]) -> list[str]:
    return [state(i) for i in ids]


def refusals(outbox_id: str) -> int:
    """How many times a reason was recorded for the envelope."""
    subject = Event.subject == f"outbox:{outbox_id}"
    return int(Event.select().where(subject & (Event.command == "record_refusal")).count())


def named(text: str, now: float) -> float:
    """The first time (HH:MM:SS, UTC) a reason names, as Unix seconds near ``now``."""
    found = _NAMED.search(text)
    assert found, text
    hours, minutes, seconds = (int(part) for part in found.groups())
    day = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    at = (day + timedelta(hours=hours, minutes=minutes, seconds=seconds)).timestamp()
    return at + 86400 if at < now - 43200 else at


def notices(chat: SimChat) -> list[str]:
    """The warnings the chat wrote into its transcript (a torn last line is skipped)."""
    if not chat.transcript.exists():
        return []
    found = []
    for line in chat.transcript.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("type") == "system" and entry.get("subtype") == "informational":
            found.append(str(entry.get("content")))
    return found


def sent_at(outbox_id: str) -> float:
    """When the frame left, as the ledger recorded it (its host-queue row)."""
    return float(HostQueue.get(HostQueue.outbox == outbox_id).updated_at)


def test_a_burst_of_36_is_paced_and_the_chat_receives_every_one(door: Door) -> None:
    kit = Coupled(door, scale=0.25)
    chat = kit.chat("--answer", "silent")
    ids = kit.invitations(chat, 36)
    door.tick()
    left = {i[:8]: reason(i) for i in ids if state(i) == "pending"}
    assert [state(i) == "pending" for i in ids] == [False] * 30 + [True] * 6, left
    said: dict[str, list[str]] = {i: [] for i in ids}
    while pending := [i for i in ids if state(i) == "pending"]:
        now = door.clock()
        for outbox_id in pending:
            # A paced envelope stays pending, saying so, until the time it names ...
            text = reason(outbox_id)
            assert text is not None and text.startswith("paced: this chat admits one more ")
            assert named(text, now) > now
            if not said[outbox_id] or said[outbox_id][-1] != text:
                said[outbox_id].append(text)
        kit.advance(1)
        door.tick()
        for outbox_id in pending:
            if state(outbox_id) != "pending":
                # ... and goes on the first pass at or after it.
                assert named(said[outbox_id][-1], now) <= door.clock()
                assert sent_at(outbox_id) == door.clock()
    door.tick_until(lambda: states(ids) == ["delivered"] * 36)
    assert not [text for text in notices(chat) if DROPPED in text]
    assert len(chat.frames()) == 36
    # Each reason was recorded once, however many passes it stood.
    assert all(refusals(i) == len(said[i]) for i in ids)
    assert [refusals(i) for i in ids[30:]] == [1, 2, 3, 4, 5, 6]


def test_an_envelope_paced_on_one_pass_is_sent_by_a_later_one(door: Door) -> None:
    kit = Coupled(door, scale=0.25)
    chat = kit.chat("--answer", "silent")
    *burst, last = kit.invitations(chat, 31)
    door.tick()
    text = reason(last)
    assert state(last) == "pending" and text is not None and text.startswith("paced: ")
    door.tick()
    door.tick()
    assert state(last) == "pending" and reason(last) == text and refusals(last) == 1
    # The time its words name is when the coordinator wakes for it, and not before.
    assert pacing.goes_at(Outbox.get_by_id(last), door.clock()) == named(text, door.clock())
    assert door.coordinator.due("office", door.clock()) == named(text, door.clock())
    kit.advance(named(text, door.clock()) - door.clock())
    door.tick()
    assert state(last) != "pending" and reason(last) is None
    door.tick_until(lambda: state(last) == "delivered")
    assert not [notice for notice in notices(chat) if DROPPED in notice]


def test_the_same_text_waits_until_the_chat_would_take_it(door: Door) -> None:
    kit = Coupled(door, scale=0.01)  # the chat's 30 s window lasts 0.3 s
    chat = kit.chat("--answer", "silent")
    (invitation,) = kit.invitations(chat, 1)
    session = Outbox.get_by_id(invitation).session_id
    first = door.engine.queue_reply(session, "Yes, go ahead.", by="dad")["outbox"]
    door.clock.advance(0.1)  # so the coordinator takes them in this order
    again = door.engine.queue_reply(session, "Yes, go ahead.", by="dad")["outbox"]
    door.tick()
    assert state(first) != "pending" and state(again) == "pending"
    text = reason(again)
    assert text is not None and text.startswith("paced: this chat got the same text at ")
    due = named(text.split("; this goes")[1], door.clock())
    assert due - sent_at(first) > 30
    assert pacing.goes_at(Outbox.get_by_id(again), door.clock()) == due
    kit.advance(due - door.clock() - 1)
    door.tick()
    assert state(again) == "pending" and reason(again) == text and refusals(again) == 1
    kit.advance(1)
    door.tick()
    assert state(again) != "pending"
    door.tick_until(lambda: states([invitation, first, again]) == ["delivered"] * 3)
    assert not [notice for notice in notices(chat) if DROPPED in notice]


def test_fifty_outstanding_hold_the_rest_until_the_chat_takes_them(
    door: Door, tmp_path: Path
) -> None:
    kit = Coupled(door, scale=0.01)
    release = tmp_path / "release"
    # A turn that runs until the test ends it: meanwhile every frame queues, undelivered.
    command = f"while [ ! -e {release} ]; do sleep 0.05; done"
    chat = kit.chat("--answer", "silent", "--run", command)
    ids = kit.invitations(chat, 52)
    door.tick()
    kit.advance(70)  # the bucket is full again: only the queue's cap holds them now
    door.tick()
    assert states(ids).count("uncertain") == 50
    waiting = [i for i in ids if state(i) == "pending"]
    assert len(waiting) == 2
    text = reason(waiting[0])
    assert text == (
        "paced: 50 envelopes to this chat are not yet received, as many as its queue "
        "holds; this goes once one of them is"
    )
    recorded = refusals(waiting[0])
    kit.advance(70)
    door.tick()
    assert [state(i) for i in waiting] == ["pending"] * 2
    assert reason(waiting[0]) == text and refusals(waiting[0]) == recorded
    release.touch()
    kit.run(lambda: states(ids) == ["delivered"] * 52, step=1)
    assert not [notice for notice in notices(chat) if DROPPED in notice]
    assert len(chat.frames()) == 52
