"""A chat is its process, not its conversation: a managed chat cleared mid-delivery
stays one managed chat, at its generation, nothing exited, and its envelope's receipt
and answer are read from the new conversation's transcript (the simulated chat drifts as
the real 2.1.328 was measured to: tests/real_claude/OBSERVED.md 12)."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from officekit import Office
from waiting import wait_until

from coop_engine import queries
from coop_engine.models import Event, Notification, Outbox, Session
from hosts.sim.launch import SimChat


def busy_with(chat: SimChat, text: str) -> None:
    """Set the chat thinking on a message of its own (a peer turn without tool calls:
    what arrives meanwhile queues behind it)."""
    frame = {
        "type": "user",
        "session_id": chat.session_id,
        "uuid": str(uuid.uuid4()),
        "msg_id": str(uuid.uuid4()),
        "from": "someone-else",
        "priority": "next",
        "message": {"role": "user", "content": text},
    }
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as inbox:
        inbox.connect(str(chat.socket))
        inbox.sendall(json.dumps(frame).encode() + b"\n")
    # Its turn has begun (its entry is written): what comes now queues behind the turn,
    # rather than joining the batch that starts it.
    started = f'"msg_id":"{frame["msg_id"]}"'.encode()
    wait_until(
        lambda: any(started in line and b'"type":"user"' in line for line in _lines(chat)),
        "the chat's own turn begun",
    )


def _lines(chat: SimChat) -> list[bytes]:
    try:
        return chat.transcript.read_bytes().splitlines()
    except FileNotFoundError:
        return []


def _written(path: Path) -> list[dict[str, Any]]:
    """The complete lines of a JSON-lines file the chat may be appending to, parsed."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in data.split(b"\n")[:-1] if line.strip()]


def _enqueued(chat: SimChat, content: str) -> bool:
    return any(
        e.get("operation") == "enqueue" and e.get("content") == content
        for e in _written(chat.transcript)
    )


def clear_queued(chat: SimChat) -> None:
    """Type /clear into a chat in a turn, and wait until it is queued (its enqueue is
    written): what the coordinator sends from now on queues behind it."""
    chat.type("/clear")
    wait_until(lambda: _enqueued(chat, "/clear"), "the /clear queued")


def envelope_queued(chat: SimChat, envelope: str) -> None:
    """Wait until the frame of ``envelope`` (its msg_id) is queued in the chat: the
    enqueue entry of the very text its inbox received for that msg_id is written."""

    def received() -> str | None:
        frames = [f for f in _written(chat.frame_log) if f.get("msg_id") == envelope]
        return str(frames[0]["message"]["content"]) if frames else None

    text = wait_until(received, "the envelope's frame received")
    wait_until(lambda: _enqueued(chat, text), "the envelope's frame queued")


def tick_until(office: Office, done: Callable[[], object], what: str) -> object:
    def ticked() -> object:
        office.coordinator.tick()
        return done()

    return wait_until(ticked, what, interval=0.05)


def invited_while_busy(office: Office, gate: Path) -> tuple[SimChat, str]:
    """A chat invited to a todo, thinking on a message of its own until ``gate`` exists
    (its final unwritten: what the test queues meanwhile waits behind the turn):
    (chat, invitation)."""
    chat = office.macs["office"].start("--think-gate", str(gate))
    todo = office.engine.add_todo("Fix the importer")["id"]
    invitation = office.engine.invite(todo, chat.ref, "office")["outbox"]
    busy_with(chat, "Think about the release for a while.")
    return chat, str(invitation)


def accepted(office: Office, invitation: str) -> Outbox:
    row = tick_until(
        office,
        lambda: (r := Outbox.get_by_id(invitation)).accepted_at is not None and r,
        "the invitation accepted",
    )
    assert isinstance(row, Outbox)
    return row


def test_a_chat_cleared_mid_delivery_is_one_chat_and_its_answer_is_read_in_the_new_file(
    office: Office, tmp_path: Path
) -> None:
    gate = tmp_path / "think-gate"
    chat, invitation = invited_while_busy(office, gate)
    old = chat.session_id
    clear_queued(chat)  # behind the running turn: it runs first
    tick_until(office, lambda: Outbox.get_by_id(invitation).transport_at, "the invitation written")
    envelope_queued(chat, invitation)  # behind the /clear
    gate.touch()  # the turn ends: the /clear, then the invitation's turn in the new file
    row = accepted(office, invitation)
    new = chat.entry()["sessionId"]
    assert new != old

    # One chat: the same enrollment, managed, at its generation, now in the new conversation.
    (session,) = Session.select()
    assert (session.native_id, session.mode, session.generation) == (new, "managed", 1)
    assert session.pid == chat.pid
    assert queries.session(session)["previous_ids"] == [old]
    statuses = [e.to_state for e in Event.select().where(Event.command == "record_status")]
    assert "exited" not in statuses
    said = [e.evidence.get("said") for e in Event.select().where(Event.command == "record_process")]
    assert f"conversation changed from {old} to {new}" in said
    assert [(n.kind, n.text) for n in Notification.select()] == []

    # The five facts as without a drift, the receipt and answer from the new transcript.
    assert row.cursor["native_session"] == old
    assert row.receipt["transcript"].endswith(f"{new}.jsonl")
    assert row.created_at <= row.transport_at <= row.received_at <= row.accepted_at
    assert row.conflict is None
    (work,) = Outbox.select().where(Outbox.kind == "work")
    delivered = tick_until(
        office, lambda: (w := Outbox.get_by_id(work.id)).received_at and w, "the work received"
    )
    assert isinstance(delivered, Outbox)
    assert delivered.cursor["native_session"] == new  # sent into the new conversation


def test_an_envelope_answered_in_the_old_file_before_the_clear_keeps_its_answer(
    office: Office, tmp_path: Path
) -> None:
    """Frames queued ahead of a /clear are delivered, and answered, in the old file."""
    gate = tmp_path / "think-gate"
    chat, invitation = invited_while_busy(office, gate)
    old = chat.session_id
    tick_until(office, lambda: Outbox.get_by_id(invitation).transport_at, "the invitation written")
    envelope_queued(chat, invitation)  # behind the running turn
    clear_queued(chat)  # behind the invitation: the invitation's turn is first
    gate.touch()  # the turn ends: the invitation's turn in the old file, then the /clear
    row = accepted(office, invitation)
    assert row.receipt["transcript"].endswith(f"{old}.jsonl")
    tick_until(office, lambda: Session.get().native_id != old, "the drift recorded")
    assert Outbox.get_by_id(invitation).conflict is None


def test_an_envelope_pending_when_the_conversation_changes_goes_to_the_new_one_at_once(
    office: Office,
) -> None:
    """The pass records who the chat is before it sends: a /clear since the last pass
    is no 'no live chat' refusal (and no notice to Dad), the frame goes to the new id."""
    chat = office.macs["office"].start()
    office.engine.invite(office.engine.add_todo("Warm up")["id"], chat.ref, "office")
    office.coordinator.tick()  # the chat's process is known
    chat.type("/clear")
    wait_until(lambda: chat.entry()["sessionId"] != chat.session_id, "the drift")
    todo = office.engine.add_todo("Fix the importer")["id"]
    invitation = office.engine.invite(todo, f"claude:{chat.session_id}", "office")["outbox"]
    office.coordinator.tick()
    row = Outbox.get_by_id(invitation)
    # Sent: a chat quick to write its peer entry is found by the same pass's observe step.
    assert row.state in ("uncertain", "delivered") and row.refusals is None
    assert row.cursor["native_session"] == chat.entry()["sessionId"]
    assert [n.kind for n in Notification.select()] == []
    assert Session.select().count() == 1, [(s.id, s.native_id) for s in Session.select()]
