"""A frame written into a chat's inbox that the chat never read, because its process
died, has a fate no receiver's record settles: whether a new process later resumes the
same conversation changes nothing of that. Found by probing beside the oracle
(tests/oracle): the verdict takes the resumed process's idle status, a process that
never had the frame, as its proof of `receiver-idle-without-entry`."""

from __future__ import annotations

import os
import signal

from officekit import Office

from coop_engine.models import Outbox
from hosts.sim.launch import SimChat


def written_then_dead(office: Office) -> tuple[SimChat, str]:
    """A chat sent an invitation while stopped (the bytes wait in its inbox), then
    SIGKILLed with them unread: (the dead chat, the invitation)."""
    chat = office.macs["office"].start("--history")
    os.kill(chat.pid, signal.SIGSTOP)
    todo = office.engine.add_todo("Written, never read")["id"]
    invitation = str(office.engine.invite(todo, chat.ref, "office")["outbox"])
    office.coordinator.tick()
    assert Outbox.get_by_id(invitation).transport_at is not None
    chat.kill()
    office.coordinator.tick()
    return chat, invitation


def test_a_frame_a_dead_chat_never_read_is_never_proven_lost(office: Office) -> None:
    _, invitation = written_then_dead(office)
    office.clock.advance(3600)
    office.coordinator.tick()
    assert Outbox.get_by_id(invitation).state == "uncertain"


def test_a_new_process_resuming_the_conversation_proves_nothing_of_a_frame_the_dead_one_held(
    office: Office,
) -> None:
    chat, invitation = written_then_dead(office)
    resumed = office.macs["office"].start("--session-id", chat.session_id)
    office.coordinator.tick()  # the chat, resumed in a new process, idle
    office.clock.advance(3600)
    office.coordinator.tick()
    assert resumed.frames() == []  # the resumed process never had the frame
    row = Outbox.get_by_id(invitation)
    assert (row.state, row.expiry) == ("uncertain", None)
