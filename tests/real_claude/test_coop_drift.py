"""Coop's coordinator against a real Claude Code 2.1.328 cleared mid-delivery.

The last-but-one row of OBSERVED.md 12's busy table, driven through Coop's CLI (`coop
invite`, `coop tick`): a chat busy in a turn without tool calls gets `/clear` typed
(queued), then Coop's invitation, admitted under the old session id (its `enqueue` in
the old file). The /clear runs first; the invitation's peer entry, its COOP_ACCEPT
final and turn_duration land in the NEW conversation's file. Coop must keep the chat as
one chat (its process, coop_engine/identity.py): the same enrollment, managed,
generation 1, its earlier conversation in `previous_ids`, never `exited`; and read the
receipt and the acceptance from the new transcript, with no conflict
(tests/coordinator/test_drift.py is the same against the simulator).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .offices import Entry, RealOffice, RealReceiver
from .test_drift_observed import (
    assistant_text,
    clear_queued,
    drifted,
    find,
    is_clear_command,
    is_turn_end,
    peer_entry,
    queue_op,
    read,
    session_id_now,
    start_slow_turn,
    transcript_of,
    type_clear,
    wait_idle,
)

pytestmark = pytest.mark.real_claude

TITLE = "Fix the flaky importer test"
# The running turn's answer streams over this long: time enough, on a loaded machine, to
# type /clear, invite and send while it runs (measured: the frame was enqueued 0.7 to 1.3 s
# after the turn began).
SLOW = 10
HANG = 60.0


class Ticks:
    """`coop tick` passes through the CLI, keeping what each said (the coordinator's log
    lines on stderr) for a failure message and the report."""

    def __init__(self, office: RealOffice) -> None:
        self.office = office
        self.said: list[str] = []

    def tick(self) -> None:
        done = self.office.coop("tick")
        lines = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
        self.said += [f"{time.strftime('%H:%M:%S')} {line}" for line in lines]
        assert done.returncode == 0, f"coop tick: {done.stderr}\n{self.log()}"

    def until(self, check: Callable[[], Any], what: str, timeout: float = HANG) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            self.tick()
            value = check()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}\n{self.log()}")
            time.sleep(0.1)

    def log(self) -> str:
        return "--- coop tick said ---\n" + "\n".join(self.said)


def ledger_rows(office: RealOffice, table: str) -> list[dict[str, Any]]:
    """Every row of one ledger table, read-only, JSON columns parsed."""
    uri = f"file:{office.home / 'coop.db'}?mode=ro"
    with sqlite3.connect(uri, uri=True, timeout=15) as db:
        db.row_factory = sqlite3.Row
        rows = [dict(row) for row in db.execute(f"SELECT * FROM {table}")]  # noqa: S608
    for row in rows:
        for key, value in row.items():
            if isinstance(value, str) and value[:1] in "{[":
                try:
                    row[key] = json.loads(value)
                except ValueError:
                    pass
    return rows


def outbox_row(office: RealOffice, outbox_id: str) -> dict[str, Any]:
    (row,) = [r for r in ledger_rows(office, "engine_outbox") if r["id"] == outbox_id]
    return row


def at(path: Path, offset: int) -> Entry:
    """The transcript entry that starts at byte ``offset`` of ``path``."""
    with path.open("rb") as f:
        f.seek(offset)
        return dict(json.loads(f.readline()))


@pytest.fixture
def office(claude_binary: Path) -> Iterator[RealOffice]:
    # Short paths: the chats' tmux and inbox sockets live under them.
    root = Path(tempfile.mkdtemp(prefix="coop-drift-", dir="/tmp"))
    office = RealOffice(root, claude_binary)
    try:
        yield office
    finally:
        office.stop()
        shutil.rmtree(root, ignore_errors=True)


def test_a_real_chat_cleared_mid_delivery_stays_one_chat_and_accepts_in_its_new_file(
    office: RealOffice,
) -> None:
    receiver = office.start()
    assert isinstance(receiver, RealReceiver)
    chat = receiver.chat
    old = chat.session_id
    old_path = chat.transcript_path()
    ticks = Ticks(office)

    # Busy in a turn without tool calls; /clear typed, and queued behind it.
    start_slow_turn(chat, SLOW)
    began = time.monotonic()
    type_clear(chat, clear_queued(chat))
    assert session_id_now(chat) == old

    # Then Coop invites the chat and a coordinator pass sends the invitation.
    todo = office.coop_ok("todo", "add", TITLE).strip()
    invitation = str(office.coop_json("invite", todo, "--session", receiver.ref)["outbox"])
    ticks.tick()
    (enrolled,) = office.coop_json("sessions")
    assert (enrolled["native_id"], enrolled["pid"], enrolled["previous_ids"]) == (old, chat.pid, [])
    sent = outbox_row(office, invitation)
    assert sent["transport_at"] is not None, f"not sent: {sent}\n{ticks.log()}"
    text = sent["payload"]["text"]
    # Admitted under the old id, behind the queued /clear, while the turn still ran.
    chat.wait_for(lambda: find(read(old_path), queue_op("enqueue", text)), HANG, "enqueued")
    admitted = time.monotonic() - began
    entries = read(old_path)
    (cleared,) = find(entries, queue_op("enqueue", "/clear"))
    (enqueued,) = find(entries, queue_op("enqueue", text))
    assert cleared < enqueued
    assert not [e for e in entries if is_turn_end(e)], (
        f"the slow turn ended before the invitation was admitted ({admitted:.1f} s)"
    )

    # The /clear runs first; Coop sees the drift and reads on in the new file.
    accepted = ticks.until(
        lambda: (row := outbox_row(office, invitation))["accepted_at"] is not None and row,
        "the invitation accepted",
    )
    assert drifted(chat, old)()
    new = session_id_now(chat)
    new_path = transcript_of(chat, new)
    assert new_path.exists()

    # One chat: the same enrollment, managed, generation 1, its conversation moved on.
    (session,) = office.coop_json("sessions")
    assert session["id"] == enrolled["id"]
    assert session["native_id"] == new and session["previous_ids"] == [old]
    assert (session["mode"], session["generation"], session["pid"]) == ("managed", 1, chat.pid)
    assert session["status"] != "exited"
    assert session["tmux"] == "chat:@0.%0"
    (listed,) = office.coop_json("chats")
    assert (listed["session_id"], listed["pid"]) == (new, chat.pid)
    assert listed["status"] in ("busy", "idle")
    statuses = [e["to"] for e in office.events("record_status")]
    assert "exited" not in statuses, f"{statuses}\n{ticks.log()}"
    processes = office.events("record_process")
    said = [e["evidence"].get("said") for e in processes]
    assert f"conversation changed from {old} to {new}" in said, f"{processes}\n{ticks.log()}"
    (changed,) = [e for e in processes if e["evidence"].get("how") == "changed"]
    assert (changed["from"], changed["to"]) == (old, new)
    assert changed["evidence"]["pid"] == chat.pid
    assert changed["evidence"]["envelopes"] == [invitation]
    assert office.coop_json("notifications") == [], ticks.log()

    # The five facts as without a drift, fact 3 and 4 read from the new transcript.
    assert accepted["cursor"]["native_session"] == old
    assert accepted["cursor"]["transcript"] == str(old_path)
    receipt = accepted["receipt"]
    assert receipt["transcript"] == str(new_path)
    assert accepted["conflict"] is None and accepted["state"] == "delivered"
    created, sent_at = accepted["created_at"], accepted["transport_at"]
    assert created <= sent_at <= accepted["received_at"] <= accepted["accepted_at"]
    peer = at(new_path, receipt["offset"])
    assert peer_entry(invitation)(peer) and peer["sessionId"] == new
    assert (peer["origin"]["kind"], peer["origin"]["from"]) == ("peer", "cwkCoop")
    new_entries = read(new_path)
    clear_at = find(new_entries, is_clear_command)
    peer_at = find(new_entries, peer_entry(invitation))
    assert clear_at and len(peer_at) == 1 and clear_at[0] < peer_at[0]
    assert not find(read(old_path), peer_entry(invitation)), "no receipt in the old file"
    acceptance = accepted["acceptance"]
    final = at(new_path, acceptance["offset"])
    nonce = accepted["payload"]["nonce"]
    assert f"COOP_ACCEPT {nonce}" in assistant_text(final)
    assert is_turn_end(at(new_path, acceptance["turn_end"]))
    assert receipt["offset"] < acceptance["offset"] < acceptance["turn_end"]
    (receipted,) = office.events("record_receipt", invitation)
    assert receipted["evidence"]["transcript"] == str(new_path)

    # The work that follows is sent into the new conversation and received there.
    work = ticks.until(
        lambda: [
            r
            for r in ledger_rows(office, "engine_outbox")
            if r["kind"] == "work" and r["received_at"] is not None
        ],
        "the work received",
    )[0]
    assert work["cursor"]["native_session"] == new
    assert work["receipt"]["transcript"] == str(new_path)
    assert work["conflict"] is None
    wait_idle(chat)
    ticks.tick()
    (session,) = office.coop_json("sessions")
    assert (session["native_id"], session["previous_ids"]) == (new, [old])
    assert (session["mode"], session["generation"], session["status"]) == ("managed", 1, "idle")
    conflicts = [r["conflict"] for r in ledger_rows(office, "engine_outbox")]
    assert conflicts == [None, None], ticks.log()
    print(f"admitted {admitted:.1f} s into the turn\n{ticks.log()}")  # shown by -rP
