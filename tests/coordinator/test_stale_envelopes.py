"""A pass starts by cancelling what an older generation left pending (seed 003, #326):
an envelope of a generation its chat has left is never sent, and is said to be
cancelled rather than left waiting."""

from __future__ import annotations

from officekit import Office

from coop_engine.models import Outbox, Session


def test_a_pass_cancels_a_pending_envelope_an_older_generation_left(office: Office) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Fix the importer")["id"]
    outbox_id = office.engine.invite(todo, chat.ref, "office")["outbox"]
    session = Outbox.get_by_id(outbox_id).session
    # The chat moved on to a new generation (a restart of its enrollment) meanwhile.
    Session.update(generation=session.generation + 1).where(Session.id == session.id).execute()
    office.coordinator.tick()
    assert Outbox.get_by_id(outbox_id).state == "cancelled"
    assert any(line.startswith(f"{outbox_id[:8]} cancelled: left pending") for line in office.log)
    assert chat.frames() == []
