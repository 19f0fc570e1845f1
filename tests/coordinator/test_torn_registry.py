"""A live chat is never "exited" by a torn file: Claude Code rewrites its registry entry
in place (truncate, then write), and a file left torn for a second says nothing of
whether the chat lives. Whether it lives is asked of its process; the entry's last good
reading stands, marked stale, and no state, event or notice changes."""

from __future__ import annotations

import time

from officekit import Office
from waiting import wait_until

from coop_engine.models import Event, Notification, Outbox, Session


def test_a_registry_file_torn_for_a_second_changes_no_chat_state_event_or_notice(
    office: Office,
) -> None:
    chat = office.macs["office"].start("--answer", "silent")  # no work follows: it stays idle
    todo = office.engine.add_todo("Fix the importer")["id"]
    invitation = office.engine.invite(todo, chat.ref, "office")["outbox"]

    def received() -> bool:
        office.coordinator.tick()
        return Outbox.get_by_id(invitation).received_at is not None

    wait_until(received, "the invitation received", interval=0.05)
    wait_until(lambda: chat.entry().get("status") == "idle", "the chat idle")
    office.coordinator.tick()
    before = (Event.select().count(), Notification.select().count(), Session.get().status)
    assert before[2] == "idle"

    whole = chat.registry.read_bytes()
    chat.registry.write_bytes(whole[: len(whole) // 2])  # torn, and left so
    torn_until = time.monotonic() + 1.0
    passes = 0
    while time.monotonic() < torn_until:
        office.coordinator.tick()
        passes += 1
    (listed,) = [c for c in office.hosts["office"].chats()["chats"] if c["pid"] == chat.pid]
    assert listed["live"] and listed["stale"]  # its last good reading, its process asked
    chat.registry.write_bytes(whole)
    office.coordinator.tick()

    assert passes >= 2
    after = (Event.select().count(), Notification.select().count(), Session.get().status)
    assert after == before
    assert not [line for line in office.log if "exited" in line]
