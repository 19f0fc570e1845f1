"""A pass never dies of a refusal (issue 12): a Coop refusal raised for one item costs
that item, is said once, and the pass goes on; racing adoption passes adopt once, and
the search asks reachable Macs first."""

from __future__ import annotations

import pytest
from officekit import Office

from coop_engine.errors import Conflict
from coop_engine.loop.adoption import AdoptionPass, candidates
from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.models import Outbox, Session


def invite(office: Office, mac: str = "office") -> str:
    chat = office.macs[mac].start()
    todo = office.engine.add_todo(f"Work for {chat.session_id[:8]}")["id"]
    return str(office.engine.invite(todo, chat.ref, mac)["outbox"])


def test_a_refusal_for_one_envelope_costs_that_envelope_not_the_pass(
    office: Office, monkeypatch: pytest.MonkeyPatch
) -> None:
    refused, sent = invite(office), invite(office)
    deliver = ClaudeDoor.deliver

    def refusing(door: ClaudeDoor, row: Outbox) -> None:
        if row.id == refused:
            raise Conflict("another coordinator took this envelope first")
        deliver(door, row)

    monkeypatch.setattr(ClaudeDoor, "deliver", refusing)
    office.coordinator.tick()
    office.coordinator.tick()
    assert Outbox.get_by_id(sent).state != "pending"  # the pass went on to the next
    assert Outbox.get_by_id(refused).state == "pending"
    said = [line for line in office.log if "refused" in line]
    # Said once for the unchanged cause, though two passes met it.
    assert said == [f"{refused[:8]} deliver refused: another coordinator took this envelope first"]


def test_a_bug_is_not_a_refusal_and_stops_the_pass(
    office: Office, monkeypatch: pytest.MonkeyPatch
) -> None:
    invite(office)

    def broken(door: ClaudeDoor, row: Outbox) -> None:
        raise KeyError("a bug in Coop's own code")

    monkeypatch.setattr(ClaudeDoor, "deliver", broken)
    with pytest.raises(KeyError):
        office.coordinator.tick()


def test_two_racing_adoption_passes_adopt_once_and_neither_dies(office: Office) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Taken through the CLI")["id"]
    taker = int(office.engine.take_cli(todo, chat.ref, "office")["session"])
    (stale,) = candidates(office.clock())  # the second pass read its candidates first
    first = AdoptionPass(office.engine, office.hosts, "office", office.log.append)
    assert first.adopt_one(stale)["result"].startswith("adopted at generation 2")
    # The chat's status moved since: the second pass adopts with other evidence under
    # the same idempotency key.
    chat.rewrite_entry(status="busy")
    second = AdoptionPass(office.engine, office.hosts, "office", office.log.append)
    assert second.adopt_one(stale)["result"] == "adopted by another pass on office"
    row = Session.get_by_id(taker)
    assert (row.mode, row.generation) == ("managed", 2)
    assert Session.get_by_id(taker).refused_until is None  # not held 48 h as a refusal
    assert Outbox.select().where(Outbox.session == taker).count() == 1  # one work envelope


def test_adoption_asks_reachable_macs_first(office: Office) -> None:
    chat = office.macs["studio"].start()
    todo = office.engine.add_todo("Taken on the studio")["id"]
    office.engine.take_cli(todo, chat.ref, "office")
    office.coordinator.unreachable["laptop"] = "timed out after 5s"
    adoption = AdoptionPass(
        office.engine, office.hosts, "office", office.log.append, office.coordinator.reachable
    )
    (result,) = adoption.run()
    assert [a["host"] for a in result["searched"]] == ["office", "studio"]
    assert result["found"] == "studio"
