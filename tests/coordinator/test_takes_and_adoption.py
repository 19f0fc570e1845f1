"""Seed 003 end to end: CLI takes detected without asking the model, and the adoption
pass that enrolls the taker's chat."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from officekit import Office
from waiting import wait_until

from coop_engine import formats, prompts, queries
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.models import Outbox, Session
from hosts.mac.host import Host, HostError

COOP = str(Path(sys.executable).with_name("coop"))


def coop(
    office: Office, *args: str, mac: str = "office", **env: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COOP, *args], capture_output=True, text=True, env=office.env(mac, **env), timeout=30
    )


def wait_for(check: Any, what: str = "the passes' outcome") -> Any:
    return wait_until(check, what, interval=0.1)


def session_row(native_id: str) -> Session | None:
    return Session.get_or_none(Session.native_id == native_id)


def test_cli_take_inside_a_chat_is_detected_through_several_shells(office: Office) -> None:
    office.engine.add_todo("Fix the importer")
    inner = shlex.quote(f"{COOP} todo take 1")
    nested = "sh -c " + shlex.quote(f"sh -c {inner}")
    chat = office.macs["office"].start("--run", nested, env=office.env())
    row = wait_for(lambda: session_row(chat.session_id), "the take recorded")
    assert (row.mode, row.surface, row.status, row.host) == (
        "observed",
        "compatibility",
        "unknown",
        "office",
    )
    (dispatch,) = row.dispatches
    assert dispatch.state == "accepted" and dispatch.receipt["source"] == "cli-take"
    assert [b.state for b in row.bindings] == ["active"]
    (obligation,) = queries.obligations()
    assert obligation["legacy"] is True
    assert obligation["due_at"] == formats.iso(dispatch.accepted_at + 3 * 3600)


def test_cli_take_names_its_chat_from_the_environment(office: Office) -> None:
    office.engine.add_todo("Review the patch")
    thread = "019c8a70-dda7-7f33-98ea-f30553347322"
    result = coop(
        office,
        "todo",
        "take",
        "1",
        "--json",
        PIPPA_COOP_SESSION=f"codex:{thread}",
        PIPPA_COOP_HOST="laptop",
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["caller"] == f"codex:{thread}"
    row = session_row(thread)
    assert row is not None and (row.vendor, row.host, row.mode) == ("codex", "laptop", "observed")


def test_cli_take_with_no_chat_is_still_a_take_with_a_legacy_obligation(office: Office) -> None:
    office.engine.add_todo("Rotate the keys")
    result = coop(office, "todo", "take", "1")
    assert result.returncode == 0, result.stderr
    assert "legacy take" in result.stdout
    assert Session.select().count() == 0
    (todo,) = queries.todos()
    assert todo["state"] == "taken"
    (obligation,) = queries.obligations()
    assert obligation["legacy"] is True


def take_from(office: Office, chat_ref: str, declared: str, todo: str = "Fix the importer") -> int:
    todo_id = office.engine.add_todo(todo)["id"]
    return int(office.engine.take_cli(todo_id, chat_ref, declared)["session"])


def test_adoption_finds_the_chat_on_its_declared_mac(office: Office) -> None:
    chat = office.macs["laptop"].start()
    session_id = take_from(office, chat.ref, "laptop")
    (result,) = office.adoption.run()
    assert result["found"] == "laptop"
    assert [a["host"] for a in result["searched"]] == ["laptop"]
    row = Session.get_by_id(session_id)
    assert (row.mode, row.surface, row.generation, row.host) == ("managed", "native", 2, "laptop")
    (work,) = Outbox.select().where(Outbox.session == session_id)
    assert work.kind == "work" and work.payload["text"].startswith(prompts.CLI_TAKE_OPENING)
    assert work.payload["scope"]["source"] == "cli-take"
    assert [n["kind"] for n in queries.notifications()] == ["chat enrolled"]
    office.coordinator.tick()
    wait_for(lambda: (office.coordinator.tick(), Outbox.get_by_id(work.id).state == "delivered")[1])


def test_adoption_searches_the_office_after_the_declared_mac(office: Office) -> None:
    chat = office.macs["office"].start()
    take_from(office, chat.ref, "laptop")
    (result,) = office.adoption.run()
    assert [a["host"] for a in result["searched"]] == ["laptop", "office"]
    assert result["found"] == "office"
    assert result["result"].startswith("adopted at generation 2 on office")


def test_adoption_reaches_a_later_mac_reachable_ones_first(office: Office) -> None:
    chat = office.macs["studio"].start()
    take_from(office, chat.ref, "office")
    (result,) = office.adoption.run()
    assert [a["host"] for a in result["searched"]] == ["office", "laptop", "studio"]
    assert result["found"] == "studio"


def test_two_live_entries_with_the_id_on_one_mac_is_a_conflict(office: Office) -> None:
    chat = office.macs["office"].start()
    office.macs["office"].start("--session-id", chat.session_id)
    session_id = take_from(office, chat.ref, "office")
    (result,) = office.adoption.run()
    assert result["result"] == "conflict: 2 matches on office"
    assert Session.get_by_id(session_id).mode == "observed"


def test_not_found_is_tried_again_ten_minutes_later(office: Office) -> None:
    session_ref = "claude:5f0c7e1e-0000-4000-8000-00000000abcd"
    session_id = take_from(office, session_ref, "office")
    (result,) = office.adoption.run()
    assert result["result"] == "not found"
    office.clock.advance(9 * 60)
    assert office.adoption.run() == []
    office.macs["office"].start("--session-id", session_ref.split(":", 1)[1])
    office.clock.advance(60)
    (again,) = office.adoption.run()
    assert again["result"].startswith("adopted")
    assert Session.get_by_id(session_id).mode == "managed"


def test_refused_adoption_is_not_retried_for_48_hours(office: Office) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Invited first")["id"]
    office.engine.invite(todo, chat.ref, "office")  # a managed enrollment on office
    taker = take_from(office, chat.ref, "laptop", "Taken through the CLI, declared on the laptop")
    (result,) = office.adoption.run()
    managed = Session.get((Session.host == "office") & (Session.native_id == chat.session_id))
    assert (
        result["result"]
        == f"refused: Another enrollment already names this chat on office: {managed.id}"
    )
    office.clock.advance(47 * 3600)
    assert office.adoption.run() == []
    office.clock.advance(3600)
    (later,) = office.adoption.run()
    assert later["result"].startswith("refused")
    assert Session.get_by_id(taker).mode == "observed"


def test_at_most_five_candidates_per_pass(office: Office) -> None:
    for index in range(7):
        take_from(office, f"claude:00000000-0000-4000-8000-{index:012d}", "office", f"todo {index}")
    assert len(office.adoption.run()) == 5
    assert len(office.adoption.run()) == 2


def test_pending_reply_is_carried_across_the_generation_bump(office: Office) -> None:
    """#326: an envelope queued while nobody watched the chat belongs to it still."""
    chat = office.macs["office"].start()
    session_id = take_from(office, chat.ref, "office")
    reply = office.engine.queue_reply(
        session_id, "Dad says: keep the old importer for now.", "dad"
    )["outbox"]
    (result,) = office.adoption.run()
    assert result["result"].startswith("adopted")
    assert Outbox.get_by_id(reply).generation == 2
    office.coordinator.cancel_stale()  # cancels what older generations left: not this one
    assert Outbox.get_by_id(reply).state == "pending"
    wait_for(lambda: (office.coordinator.tick(), Outbox.get_by_id(reply).state == "delivered")[1])
    assert not any("cancelled" in line for line in office.log)


def test_codex_take_is_adopted_where_the_thread_is_saved(office: Office) -> None:
    thread = office.codex_thread("laptop", "--name", "importer")["thread_id"]
    session_id = take_from(office, f"codex:{thread}", "office")
    (result,) = office.adoption.run()
    assert [a["host"] for a in result["searched"]] == ["office", "laptop"]
    assert result["found"] == "laptop"
    row = Session.get_by_id(session_id)
    assert (row.vendor, row.mode, row.host, row.generation) == ("codex", "managed", "laptop", 2)
    # The work envelope goes through the Codex door into the thread's queue on the
    # laptop, and the thread's holder takes it.
    office.holder("laptop", thread)
    (work,) = Outbox.select().where(Outbox.session == session_id)
    wait_for(lambda: (office.coordinator.tick(), Outbox.get_by_id(work.id).state)[1] == "delivered")
    work = Outbox.get_by_id(work.id)
    assert (work.generation, work.receipt["shape"], work.receipt["host"]) == (
        2,
        "client-id",
        "laptop",
    )


def test_archived_codex_thread_is_not_found(office: Office) -> None:
    thread = office.codex_thread("office")["thread_id"]
    office.codex_thread("office", "--archive", thread)
    take_from(office, f"codex:{thread}", "office")
    (result,) = office.adoption.run()
    assert result["result"] == "not found"


class Unreachable(Host):
    """A Mac that cannot be asked."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked = 0

    def call(self, op: str, **args: Any) -> Any:
        self.asked += 1
        raise HostError(self.name, "connection refused")


def test_a_pass_run_on_its_own_asks_the_macs_that_answer_first(office: Office) -> None:
    """`coop adopt --once` and the app's pass have no coordinator to say which Macs
    answer: they ask every Mac's health at once first, then search online ones first."""
    chat = office.macs["studio"].start()
    take_from(office, chat.ref, "office")
    hosts = {**office.hosts, "laptop": Unreachable("laptop")}
    adoption = AdoptionPass(office.engine, hosts, "office", office.log.append)
    (result,) = adoption.run()
    assert [a["host"] for a in result["searched"]] == ["office", "studio"]
    assert result["found"] == "studio"
