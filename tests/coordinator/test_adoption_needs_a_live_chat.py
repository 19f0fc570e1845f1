"""A Claude take is adopted only into a live chat (seed 003): the id must be in a live
registry entry on that Mac. An exited chat's lingering entry is not found."""

from __future__ import annotations

from officekit import Office

from coop_engine.models import Session


def test_the_lingering_entry_of_an_exited_chat_is_not_found(office: Office) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Fix the importer")["id"]
    session_id = office.engine.take_cli(todo, chat.ref, "office")["session"]
    chat.kill()
    assert chat.registry.exists()  # SIGKILL leaves the entry behind
    (result,) = office.adoption.run()
    assert result["result"] == "not found"
    assert Session.get_by_id(session_id).mode == "observed"
