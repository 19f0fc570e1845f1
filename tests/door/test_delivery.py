"""The Claude door end to end against real simulated chats: sockets, registries and
transcripts are real; only the engine's clock is moved by the test."""

from __future__ import annotations

import json
import uuid

import pytest
from doorkit import Door
from waiting import wait_until

from coop_engine.errors import ALREADY_SENT_AGAIN, Conflict
from coop_engine.models import Outbox


def test_frame_is_one_line_naming_the_receiver_and_the_outbox_id(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    door.tick()
    door.tick_until(lambda: len(chat.frames()) == 1)
    (frame,) = chat.frames()
    assert frame == {
        "type": "user",
        "session_id": chat.session_id,
        "uuid": outbox_id,
        "msg_id": outbox_id,
        "from": "cwkCoop",
        "priority": "next",
        "message": {"role": "user", "content": Outbox.get_by_id(outbox_id).payload["text"]},
    }
    assert "from-mode" not in json.dumps(frame) and "permissionMode" not in frame


def test_idle_receiver_takes_the_invitation_as_a_new_turn_and_accepts(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    door.tick()
    # The receiver may already have written its entry within the same pass.
    assert door.row(outbox_id)["state"] in ("uncertain", "delivered")
    assert door.row(outbox_id)["facts"]["transport"] is not None
    door.tick_until(lambda: door.row(outbox_id)["facts"]["accepted"] is not None)
    row = door.row(outbox_id)
    assert row["state"] == "delivered"
    receipt = Outbox.get_by_id(outbox_id).receipt
    assert receipt["shape"] == "user"
    assert receipt["origin"]["msg_id"] == outbox_id
    work_id = door.work_for(outbox_id)
    assert work_id is not None
    door.tick_until(lambda: door.row(work_id)["state"] == "delivered")
    assert door.row(work_id)["facts"]["accepted"] is not None


def test_busy_receiver_absorbs_the_invitation_and_the_joined_turn_final_accepts(door: Door) -> None:
    chat = door.chat("--busy", "--busy-seconds", "3", "--tool-interval", "0.2")
    outbox_id = door.invite(chat)
    door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")
    receipt = Outbox.get_by_id(outbox_id).receipt
    assert receipt["shape"] == "queued_command"
    assert door.row(outbox_id)["facts"]["accepted"] is None  # the turn is still running
    door.tick_until(lambda: door.row(outbox_id)["facts"]["accepted"] is not None)
    acceptance = Outbox.get_by_id(outbox_id).acceptance
    assert acceptance["offset"] > receipt["offset"]


def test_bypass_receiver_hold_expires_after_dialog_expiry_plus_grace(door: Door) -> None:
    chat = door.chat("--dangerously-skip-permissions")
    outbox_id = door.invite(chat)
    door.tick()
    row = door.row(outbox_id)
    assert row["inbound"]["verdict"] == "hold"
    assert row["inbound"]["source"] == "permission-mode-parity"
    assert row["inbound"]["dialog_expiry"] == "5m"
    door.tick_until(lambda: door.row(outbox_id)["held"] is not None)
    door.clock.advance(5 * 60 + 60 - 0.5)
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
    door.clock.advance(0.5)
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "expired"
    assert row["reason"] == "held-for-approval-then-expired"


def test_send_again_works_once_and_only_after_expiry(door: Door) -> None:
    chat = door.chat("--dangerously-skip-permissions", "--dialog-expiry", "60s")
    outbox_id = door.invite(chat)
    door.tick()
    with pytest.raises(Conflict):
        door.engine.resend(outbox_id, "dad")
    door.clock.advance(120)
    door.tick()
    assert door.row(outbox_id)["reason"] == "held-for-approval-then-expired"
    second = door.engine.resend(outbox_id, "dad")["outbox"]
    with pytest.raises(Conflict, match=ALREADY_SENT_AGAIN):
        door.engine.resend(outbox_id, "chief")
    door.tick()
    assert door.row(second)["state"] == "uncertain"
    # Written is not yet read: the chat logs a frame when it reads it.
    wait_until(lambda: len(chat.frames()) >= 2, "the chat to read the second frame")
    texts = [frame["message"]["content"] for frame in chat.frames()]
    assert len(texts) == 2 and texts[0] != texts[1]
    assert door.row(outbox_id)["resent_as"] == second
    assert door.row(second)["resent_from"] == outbox_id


def test_explicit_refuse_expires_at_once(door: Door) -> None:
    chat = door.chat("--inbound", "refuse")
    outbox_id = door.invite(chat)
    door.tick()
    row = door.row(outbox_id)
    assert row["inbound"]["source"] == "settings-flag"
    assert row["state"] == "expired"
    assert row["reason"] == "refused-by-receiver-policy"


def test_explicit_hold_in_a_settings_file_never_expires(door: Door) -> None:
    door.fleet.config_dir.mkdir(parents=True, exist_ok=True)
    (door.fleet.config_dir / "settings.json").write_text(
        json.dumps({"crossSessionInbound": "hold"})
    )
    chat = door.chat()
    outbox_id = door.invite(chat)
    door.tick()
    assert door.row(outbox_id)["inbound"] == {
        "verdict": "hold",
        "source": "user",
        "dialog_expiry": "5m",
        "mode": "default",
    }
    door.clock.advance(30 * 24 * 3600)
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"


def test_accepting_idle_receiver_that_lost_the_frame_expires_after_60s(door: Door) -> None:
    chat = door.chat("--lose-frames")
    outbox_id = door.invite(chat)
    door.tick()
    door.tick_until(lambda: len(chat.frames()) == 1)
    door.clock.advance(59)
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
    door.clock.advance(1)
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "expired"
    assert row["reason"] == "receiver-idle-without-entry"
    assert Outbox.get_by_id(outbox_id).expiry["receiver_status"] == "idle"


def test_waiting_chat_is_not_expired(door: Door) -> None:
    chat = door.chat("--lose-frames")
    outbox_id = door.invite(chat)
    door.tick()
    chat.rewrite_entry(status="waiting", waitingFor="permission prompt")
    door.clock.advance(600)
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
    chat.rewrite_entry(status="idle")
    door.tick()
    assert door.row(outbox_id)["reason"] == "receiver-idle-without-entry"


def _peer_entry(
    outbox_id: str, session_id: str, sender: str = "cwkCoop", minted: str | None = None
) -> str:
    entry = {
        "isSidechain": False,
        "type": "user",
        "sessionId": session_id,
        "isMeta": True,
        "promptSource": "system",
        "origin": {"kind": "peer", "from": sender, "msg_id": outbox_id},
        "message": {"role": "user", "content": "Another Claude session sent a message:\n..."},
        "uuid": minted or str(uuid.uuid4()),
        "timestamp": "2026-11-29T20:41:03.512Z",
    }
    return json.dumps(entry)


def test_wrong_provenance_is_a_conflict_not_a_receipt(door: Door) -> None:
    chat = door.chat("--lose-frames", "--history")
    outbox_id = door.invite(chat)
    door.tick()
    with chat.transcript.open("a") as transcript:
        transcript.write(
            _peer_entry(outbox_id, chat.session_id, sender="uds:/run/user/501/cc-socks/777.sock")
            + "\n"
        )
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "uncertain"
    assert row["conflict"].startswith("wrong provenance")


def test_second_sighting_is_a_conflict(door: Door) -> None:
    chat = door.chat("--answer", "silent")
    outbox_id = door.invite(chat)
    door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")
    with chat.transcript.open("a") as transcript:
        transcript.write(_peer_entry(outbox_id, chat.session_id) + "\n")
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "delivered"
    assert row["conflict"].startswith("seen twice")


def test_torn_last_transcript_line_waits_for_its_newline(door: Door) -> None:
    chat = door.chat("--lose-frames", "--history")
    outbox_id = door.invite(chat)
    door.tick()
    line = _peer_entry(outbox_id, chat.session_id)
    start = chat.transcript.stat().st_size
    with chat.transcript.open("a") as transcript:
        transcript.write(line[:40])
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
    with chat.transcript.open("a") as transcript:
        transcript.write(line[40:] + "\n")
    door.tick()
    assert door.row(outbox_id)["state"] == "delivered"
    assert Outbox.get_by_id(outbox_id).receipt["offset"] == start


def test_transcript_growing_while_read_loses_no_line(door: Door) -> None:
    import threading

    chat = door.chat("--lose-frames", "--history")
    outbox_id = door.invite(chat)
    door.tick()
    filler = json.dumps({"type": "progress", "data": "x" * 2000}) + "\n"
    where: dict[str, int] = {}

    def grow() -> None:
        with chat.transcript.open("a") as transcript:
            for index in range(3000):
                if index == 2000:
                    transcript.flush()
                    where["offset"] = chat.transcript.stat().st_size
                    transcript.write(_peer_entry(outbox_id, chat.session_id) + "\n")
                transcript.write(filler)
                if index % 50 == 0:
                    transcript.flush()

    writer = threading.Thread(target=grow)
    writer.start()
    try:
        door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")
    finally:
        writer.join()
    assert Outbox.get_by_id(outbox_id).receipt["offset"] == where["offset"]
    assert door.row(outbox_id)["conflict"] is None
