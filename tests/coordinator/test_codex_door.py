"""The Codex door through the coordinator (issue [4/6]), against the Codex simulator: a
real `codex app-server` stand-in over stdio (hosts/sim/bin/codex), Codex's queue in a
real `queue_1.sqlite`, and holder processes that take the queue and write rollouts.

Intent before the add, the outbox id as the client id, the receipt from the rollout,
the answer from the turn's final; no expiry by silence; withdrawal only on Codex's own
`deleted: true`; a lost answer reconciled by the client id, never sent twice.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from officekit import Office
from waiting import wait_until

from coop_engine.errors import Conflict
from coop_engine.loop import withdrawal
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.survey import live_chats, locate_thread
from coop_engine.models import Dispatch, Event, HostQueue, Outbox, QueueSighting, Todo
from hosts.mac.host import Host, NativeRefusal

DAY = 86400.0


def queue_rows(office: Office, mac: str, client_id: str) -> int:
    """How many of Codex's queue rows carry this client id."""
    path = Path(office.codex_homes[mac]) / "queue_1.sqlite"
    if not path.exists():
        return 0
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        payloads = [row[0] for row in conn.execute("SELECT payload_json FROM queued_items")]
    finally:
        conn.close()
    return [json.loads(p)["UserInput"].get("client_id") for p in payloads].count(client_id)


def invite(office: Office, mac: str = "office", *thread_args: str) -> tuple[str, str, int]:
    """A saved thread on `mac` and an invitation to it: (thread id, outbox id, todo)."""
    thread = office.codex_thread(mac, *thread_args)["thread_id"]
    todo = office.engine.add_todo("Port the importer")["id"]
    outbox_id = office.engine.invite(todo, f"codex:{thread}", mac)["outbox"]
    return thread, outbox_id, todo


def tick_until(office: Office, outbox_id: str, done: Callable[[Outbox], bool]) -> Outbox:
    def ticked() -> Outbox | None:
        office.coordinator.tick()
        row = Outbox.get_by_id(outbox_id)
        return row if done(row) else None

    row: Outbox = wait_until(ticked, "the pass that sends it", interval=0.05)
    return row


def test_a_held_thread_takes_the_invitation_answers_it_and_gets_the_work(office: Office) -> None:
    thread, outbox_id, todo = invite(office)
    office.holder("office", thread)
    row = tick_until(office, outbox_id, lambda r: r.accepted_at is not None)
    assert row.cursor["client_id"] == outbox_id and row.cursor["inbound"]["open"] is True
    assert row.transport["queued_id"] and row.transport["via"] == "app-server"
    assert (row.receipt["shape"], row.receipt["host"]) == ("client-id", "office")
    assert row.created_at <= row.transport_at <= row.received_at <= row.accepted_at
    assert f"COOP_ACCEPT {row.payload['nonce']}" in row.acceptance["final"]
    assert Todo.get_by_id(todo).state == "taken"
    (work,) = Outbox.select().where((Outbox.kind == "work") & (Outbox.session == row.session))
    work = tick_until(office, work.id, lambda r: r.state == "delivered")
    assert work.receipt["shape"] == "client-id"


def test_an_unheld_thread_keeps_the_envelope_queued_and_silence_never_expires_it(
    office: Office,
) -> None:
    thread, outbox_id, _ = invite(office)
    row = tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    assert row.state == "uncertain" and row.cursor["inbound"]["open"] is False
    office.coordinator.tick()
    seen = QueueSighting.get_by_id(outbox_id)
    assert (seen.queued, seen.open) == (True, False)
    for _ in range(3):
        office.clock.advance(DAY)
        office.coordinator.tick()
    assert Outbox.get_by_id(outbox_id).state == "uncertain"  # silence proves no loss
    assert queue_rows(office, "office", outbox_id) == 1  # and nothing was added again


def test_withdrawn_from_codexs_queue_it_expires_and_is_sent_again_once(office: Office) -> None:
    thread, outbox_id, _ = invite(office)
    row = tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    withdrawal.withdraw(office.engine, office.hosts["office"], row, "dad")
    row = Outbox.get_by_id(outbox_id)
    assert (row.state, row.expiry["reason"], row.expiry["deleted"]) == (
        "expired",
        "withdrawn-from-queue",
        True,
    )
    assert queue_rows(office, "office", outbox_id) == 0
    again = office.engine.resend(outbox_id, "dad")["outbox"]
    with pytest.raises(Conflict, match="already sent again"):
        office.engine.resend(outbox_id, "dad")
    office.holder("office", thread)
    resent = tick_until(office, again, lambda r: r.state == "delivered")
    assert resent.receipt["shape"] == "client-id"


def test_what_codex_already_took_from_its_queue_cannot_be_withdrawn(office: Office) -> None:
    thread, outbox_id, _ = invite(office)
    row = tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    office.holder("office", thread, "--answer", "hang")  # takes it, and the turn hangs
    wait_until(lambda: queue_rows(office, "office", outbox_id) == 0, "Codex's queue emptied")
    with pytest.raises(Conflict, match="Codex already took it from its queue"):
        withdrawal.withdraw(office.engine, office.hosts["office"], row, "chief")
    assert Outbox.get_by_id(outbox_id).state == "uncertain"
    received = tick_until(office, outbox_id, lambda r: r.state == "delivered")
    assert received.accepted_at is None  # received, its turn still running: no answer yet


def test_a_lost_answer_to_the_add_is_found_by_the_client_id_and_not_sent_twice(
    office: Office,
) -> None:
    thread, outbox_id, _ = invite(office)
    host = office.hosts["office"]
    # The intent was recorded and Codex queued the message; Coop died before its answer.
    cursor = {"door": "codex", "host": "office", "offset": 0, "client_id": outbox_id}
    office.engine.mark_uncertain(outbox_id, {**cursor, "inbound": {"verdict": "queued"}})
    host.codex_queue_add(thread, outbox_id, Outbox.get_by_id(outbox_id).payload["text"])
    restarted = Coordinator(office.engine, office.hosts, office.log.append)
    restarted.tick()
    row = Outbox.get_by_id(outbox_id)
    assert row.transport["found_by"].startswith("its client id in Codex's queue")
    restarted.tick()
    assert queue_rows(office, "office", outbox_id) == 1
    assert HostQueue.select().where(HostQueue.outbox == outbox_id).count() == 1
    office.holder("office", thread)
    row = tick_until(office, outbox_id, lambda r: r.state == "delivered")


def test_an_uncertain_send_codex_never_queued_stays_uncertain(office: Office) -> None:
    """Neither in the queue nor in the rollout: never inferred unsent."""
    thread, outbox_id, _ = invite(office)
    cursor = {"door": "codex", "host": "office", "offset": 0, "client_id": outbox_id}
    office.engine.mark_uncertain(outbox_id, {**cursor, "inbound": {"verdict": "queued"}})
    restarted = Coordinator(office.engine, office.hosts, office.log.append)
    for _ in range(2):
        office.clock.advance(DAY)
        restarted.tick()
    row = Outbox.get_by_id(outbox_id)
    assert (row.state, row.transport_at) == ("uncertain", None)
    assert queue_rows(office, "office", outbox_id) == 0
    with pytest.raises(Conflict, match="holds no message with this envelope's id"):
        withdrawal.withdraw(office.engine, office.hosts["office"], row, "dad")


def test_an_archived_thread_is_refused_before_any_intent(office: Office) -> None:
    thread, outbox_id, _ = invite(office)
    office.codex_thread("office", "--archive", thread)
    office.coordinator.tick()
    row = Outbox.get_by_id(outbox_id)
    assert row.state == "pending" and "is archived" in row.last_error
    assert not HostQueue.select().where(HostQueue.outbox == outbox_id).exists()


def test_only_a_uuid_shaped_thread_id_ever_reaches_codex(office: Office) -> None:
    host = office.hosts["office"]
    for bad in ("not-a-thread", "../../etc", "01A2322C-98CF-78C0-A14E-509A397F29FA", "x" * 40):
        with pytest.raises(NativeRefusal, match="not a Codex thread id"):
            host.codex_queue_add(bad, "5f0c7a52-7f1d-4a38-9d0e-2b1c3d4e5f60", "hello")
    assert host._app is None  # no app-server was even started


def test_without_the_queue_api_it_falls_back_to_codex_queue_and_says_so(
    office: Office, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COOP_SIM_CODEX_NO_QUEUE_API", "1")
    thread, outbox_id, _ = invite(office)
    row = tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    assert row.transport["via"] == "codex queue" and "no client id" in row.transport["fallback"]
    office.holder("office", thread)
    row = tick_until(office, outbox_id, lambda r: r.accepted_at is not None)
    assert row.receipt["shape"] == "marker"
    assert Dispatch.get_by_id(row.dispatch_id).state == "accepted"


def test_coop_chats_lists_codex_threads_open_or_saved_with_the_predicted_delivery(
    office: Office,
) -> None:
    held = office.codex_thread("laptop", "--name", "importer")["thread_id"]
    saved = office.codex_thread("laptop")["thread_id"]
    archived = office.codex_thread("laptop")["thread_id"]
    office.codex_thread("laptop", "--archive", archived)
    office.holder("laptop", held)
    rows, failed = live_chats([office.hosts["laptop"]])
    assert failed == []
    by_id = {row["session_id"]: row for row in rows if row["vendor"] == "codex"}
    assert set(by_id) == {held, saved}
    assert (by_id[held]["status"], by_id[held]["name"]) == ("open", "importer")
    assert by_id[held]["inbound"] == "picked up within about 10 s (the thread is open)"
    assert (by_id[saved]["status"], by_id[saved]["inbound"]) == (
        "saved",
        "waits until the thread is opened",
    )


class Watching(Host):
    """The office's own host, noting the ledger's state at the moment each Codex queue
    request leaves: what Coop had recorded before it asked."""

    def __init__(self, host: Host, outbox_id: str) -> None:
        self.name, self.host, self.outbox_id = host.name, host, outbox_id
        self.seen: dict[str, Any] = {}

    def call(self, op: str, **args: Any) -> Any:
        if op in ("codex_queue_add", "codex_queue_delete"):
            row = Outbox.get_by_id(self.outbox_id)
            asked = Event.select().where(
                (Event.subject == f"outbox:{self.outbox_id}") & (Event.command == "ask_withdrawal")
            )
            self.seen[op] = (row.state, row.cursor and row.cursor.get("client_id"), asked.exists())
        return self.host.call(op, **args)


def test_the_intent_is_durable_before_the_add_and_the_ask_before_the_delete(
    office: Office,
) -> None:
    thread, outbox_id, _ = invite(office)
    watching = Watching(office.hosts["office"], outbox_id)
    coordinator = Coordinator(office.engine, {**office.hosts, "office": watching})
    coordinator.tick()
    assert watching.seen["codex_queue_add"] == ("uncertain", outbox_id, False)
    withdrawal.withdraw(office.engine, watching, Outbox.get_by_id(outbox_id), "dad")
    assert watching.seen["codex_queue_delete"] == ("uncertain", outbox_id, True)


def test_the_app_server_is_kept_while_envelopes_are_in_flight_and_let_go_after(
    office: Office,
) -> None:
    thread, outbox_id, todo = invite(office)
    host = office.hosts["office"]
    tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    app = host._app
    assert app is not None and app.alive
    app.last_used -= 3600  # idle for an hour, but an envelope is still in flight
    office.coordinator.tick()
    assert host._app is app
    office.holder("office", thread)
    tick_until(office, outbox_id, lambda r: r.accepted_at is not None)
    work = Outbox.get(
        (Outbox.kind == "work") & (Outbox.dispatch == Outbox.get_by_id(outbox_id).dispatch)
    )
    tick_until(office, work.id, lambda r: r.state == "delivered")
    office.engine.report_outcome(todo, "ported", "dad")  # the work is done: nothing in flight
    host._app.last_used -= 3600
    office.coordinator.tick()
    assert host._app is None and not app.alive


def test_the_same_envelope_run_twice_by_codex_is_a_conflict_not_two_receipts(
    office: Office,
) -> None:
    """Codex does not de-duplicate client ids: a second add of the same id (here by
    hand) runs twice. The first run is the receipt; the second is a conflict."""
    thread, outbox_id, _ = invite(office)
    row = tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    office.hosts["office"].codex_queue_add(thread, outbox_id, row.payload["text"])
    office.coordinator.tick()
    assert "queued 2 times in Codex" in (Outbox.get_by_id(outbox_id).conflict or "")
    office.holder("office", thread)  # runs it twice, answering twice
    row = tick_until(office, outbox_id, lambda r: r.accepted_at is not None)
    wait_until(lambda: queue_rows(office, "office", outbox_id) == 0, "Codex's queue emptied")
    for _ in range(3):
        office.coordinator.tick()
    work = Outbox.select().where((Outbox.kind == "work") & (Outbox.dispatch == row.dispatch))
    assert work.count() == 1  # one receipt, one take, one work envelope
    assert Outbox.get_by_id(outbox_id).received_at == row.received_at


def test_an_invitation_finds_the_saved_thread_its_name_and_refuses_an_archived_one(
    office: Office,
) -> None:
    named = office.codex_thread("laptop", "--name", "importer")["thread_id"]
    archived = office.codex_thread("studio")["thread_id"]
    office.codex_thread("studio", "--archive", archived)
    macs = list(office.hosts.values())
    where = locate_thread(macs, named, f"codex:{named}")
    assert (where["host"], where["entry"]["name"]) == ("laptop", "importer")
    with pytest.raises(Conflict, match="is archived on studio"):
        locate_thread(macs, archived, f"codex:{archived}")


def test_a_thread_whose_rollout_moves_is_the_same_thread_and_its_receipt_is_read(
    office: Office,
) -> None:
    """A thread is its thread id: archived (its rollout moves flat into
    archived_sessions/) and re-opened (back to its dated folder) while an envelope waits
    in its queue, it is still the thread the envelope went to, and the receipt the
    rollout gains after the moves is the envelope's, with no conflict."""
    thread, outbox_id, _ = invite(office)
    tick_until(office, outbox_id, lambda r: r.transport_at is not None)
    archived = office.codex_thread("office", "--archive", thread)
    assert archived["archived"] is True
    office.coordinator.tick()
    unarchived = office.codex_thread("office", "--unarchive", thread)
    assert unarchived["archived"] is False and "/sessions/" in unarchived["rollout_path"]
    office.coordinator.tick()
    office.holder("office", thread)
    row = tick_until(office, outbox_id, lambda r: r.accepted_at is not None)
    assert row.receipt["shape"] == "client-id" and row.conflict is None
    assert row.receipt["rollout"] == unarchived["rollout_path"]
    assert Outbox.select().where(Outbox.kind == "invitation").count() == 1


def test_a_lost_answer_is_resolved_from_codexs_queue_once_not_at_every_pass(
    office: Office,
) -> None:
    """The add reached Codex but its answer was lost (the request failed after it was
    written): fact 2 is found by the client id in Codex's queue and recorded once, under
    a key of its own, and no pass is refused for reusing the lost answer's key."""
    thread, outbox_id, _ = invite(office)
    host = office.hosts["office"]
    cursor = {"door": "codex", "host": "office", "offset": 0, "client_id": outbox_id}
    attempt = office.engine.mark_uncertain(outbox_id, {**cursor, "inbound": {"verdict": "queued"}})
    host.codex_queue_add(thread, outbox_id, Outbox.get_by_id(outbox_id).payload["text"])
    lost = {"ok": False, "written": True, "stage": "request", "error": "office: timed out"}
    office.engine.record_transport(outbox_id, attempt["attempt"], lost)
    for _ in range(3):
        office.coordinator.tick()
    row = Outbox.get_by_id(outbox_id)
    assert row.transport_at is not None
    assert row.transport["found_by"].startswith("its client id in Codex's queue")
    found = Event.select().where(
        (Event.subject == f"outbox:{outbox_id}") & (Event.command == "record_transport")
    )
    assert found.count() == 2  # the lost answer, then what Codex showed: once
    assert not [line for line in office.log if "refused" in line], office.log
    office.holder("office", thread)
    assert tick_until(office, outbox_id, lambda r: r.state == "delivered").conflict is None


def test_the_codex_queue_fallback_claims_nothing_of_codexs_queue(office: Office) -> None:
    """`codex queue` adds with a client id of its own: Coop cannot look the envelope up in
    Codex's queue, so it never says it is not there."""
    thread, outbox_id, _ = invite(office)
    row = Outbox.get_by_id(outbox_id)
    cursor = {"door": "codex", "host": "office", "offset": 0, "client_id": outbox_id}
    attempt = office.engine.mark_uncertain(outbox_id, {**cursor, "inbound": {"verdict": "queued"}})
    sent = {"ok": True, "written": True, "queued_id": None, "via": "codex queue"}
    office.engine.record_transport(outbox_id, attempt["attempt"], sent)
    office.coordinator.tick()
    office.coordinator.tick()
    assert QueueSighting.get_or_none(QueueSighting.outbox == row.id) is None
