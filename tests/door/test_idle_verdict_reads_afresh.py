"""receiver-idle-without-entry needs a fresh read of the transcript (seed 001): a frame
the chat consumed after the pass's survey read its transcript is in the file before the
registry says idle, so the verdict reads the transcript again, from the send's offset,
before it calls the envelope lost."""

from __future__ import annotations

import json
import uuid
from typing import Any

from doorkit import Door

from hosts.mac.host import Host
from hosts.sim.launch import SimChat


class LateEntryHost(Host):
    """Passes calls to the door's host; once armed, right after a survey answers it
    appends the envelope's peer entry, as a chat that took the frame just then would."""

    def __init__(self, inner: Host, chat: SimChat) -> None:
        self.inner = inner
        self.name = inner.name
        self.chat = chat
        self.outbox_id: str | None = None

    def call(self, op: str, **args: Any) -> Any:
        answer = self.inner.call(op, **args)
        if op == "survey" and self.outbox_id is not None:
            with self.chat.transcript.open("a") as transcript:
                transcript.write(_peer_entry(self.outbox_id, self.chat.session_id) + "\n")
            self.outbox_id = None
        return answer

    def long_poller(self) -> Host:
        return self.inner.long_poller()

    def close(self) -> None:
        self.inner.close()


def _peer_entry(outbox_id: str, session_id: str) -> str:
    entry = {
        "isSidechain": False,
        "type": "user",
        "sessionId": session_id,
        "isMeta": True,
        "promptSource": "system",
        "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": outbox_id},
        "message": {"role": "user", "content": "Another Claude session sent a message:\n..."},
        "uuid": str(uuid.uuid4()),
        "timestamp": "2026-11-29T20:41:03.512Z",
    }
    return json.dumps(entry)


def test_an_entry_written_after_the_survey_keeps_an_idle_accepting_chat_from_expiring(
    door: Door,
) -> None:
    chat = door.chat("--lose-frames", "--history")
    outbox_id = door.invite(chat)
    late = LateEntryHost(door.host, chat)
    door.use_host(late)
    door.tick()
    door.tick_until(lambda: len(chat.frames()) == 1)
    assert door.row(outbox_id)["state"] == "uncertain"
    door.clock.advance(60)  # the grace is over; the chat is idle
    late.outbox_id = outbox_id
    door.tick()
    assert late.outbox_id is None, "the pass made no survey"
    assert door.row(outbox_id)["state"] == "uncertain"  # not lost: its entry is there
    door.tick()
    assert door.row(outbox_id)["state"] == "delivered"
