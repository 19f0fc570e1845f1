"""A held notice the receiver wrote outranks the prediction Coop made at send (issue 12):
a hold Coop did not predict is never proven lost by silence, and is delivered once a
settings change releases it. Real simulated chats, real passes, an injected clock."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from doorkit import Door

from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.models import Outbox


def hidden_managed_settings(tmp_path: Path, value: str) -> Path:
    """Managed settings the chat reads and Coop cannot (another folder than Coop's)."""
    folder = tmp_path / "hidden-managed"
    folder.mkdir(exist_ok=True)
    (folder / "managed-settings.json").write_text(json.dumps({"crossSessionInbound": value}))
    return folder


def test_an_unpredicted_explicit_hold_stays_watched_then_its_release_is_received(
    door: Door, tmp_path: Path
) -> None:
    hidden = hidden_managed_settings(tmp_path, "hold")
    chat = door.chat("--managed-settings-dir", str(hidden))
    outbox_id = door.invite(chat)
    door.tick_until(lambda: door.row(outbox_id)["held"] is not None)
    row = door.row(outbox_id)
    assert row["inbound"]["verdict"] == "accept"  # what Coop could read said accept
    assert row["held"]["cause"] == "explicit"
    assert "never expires" in row["held"]["proves"]
    assert chat.entry()["status"] == "idle"  # an explicit hold keeps the chat idle
    sent = float(Outbox.get_by_id(outbox_id).cursor["sent_at"])
    for later in (61, 6 * 60, 3600):
        door.clock.now = sent + later
        door.tick()
        assert door.row(outbox_id)["state"] == "uncertain", f"at +{later} s"
    assert not [line for line in door.log if "expired" in line]
    # The prediction at send is history: it stays as it was.
    assert door.row(outbox_id)["inbound"]["verdict"] == "accept"
    hidden_managed_settings(tmp_path, "accept")
    door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")
    assert [e for e in chat.transcript_entries() if "Released 1 held" in str(e.get("content"))]


def test_a_parity_hold_seen_under_an_unknown_expiry_stays_held_until_the_receiver_says(
    door: Door,
) -> None:
    # Coop cannot read the chat's user settings, so it cannot know the dialog's expiry:
    # the bypassing chat holds by parity and says so, and the hold is never expired for
    # silence (seed 001: unknown never expires a delivery) until the receiver's own
    # record says what happened; here its user delivers it.
    door.fleet.config_dir.mkdir(parents=True, exist_ok=True)
    (door.fleet.config_dir / "settings.json").write_text("{not json")
    chat = door.chat("--permission-mode", "bypassPermissions")
    outbox_id = door.invite(chat)
    door.tick_until(lambda: door.row(outbox_id)["held"] is not None)
    row = door.row(outbox_id)
    assert row["inbound"]["verdict"] == "unknown"
    assert row["inbound"]["dialog_expiry"] == "unknown"
    assert row["held"]["cause"] == "parity"
    assert row["waiting"] == "held by the receiver, expiry unknown: never expired for silence"
    sent = float(Outbox.get_by_id(outbox_id).cursor["sent_at"])
    for later in (6 * 60, 10 * 60 + 1, 86400):
        door.clock.now = sent + later
        door.tick()
        assert door.row(outbox_id)["state"] == "uncertain", f"at +{later} s"
    assert not [line for line in door.log if "expired" in line]
    chat.process.send_signal(signal.SIGUSR1)  # its user presses Deliver
    door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")
    assert door.row(outbox_id)["inbound"]["verdict"] == "unknown"  # the prediction stays history


def test_the_verdicts_fresh_read_finds_a_held_notice_the_survey_missed(
    door: Door, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before an accepting, idle chat's envelope is given up (receiver-idle-without-entry),
    the fresh read from the send's offset looks for its held notice as well as its entry:
    a held envelope is held, not lost, even when the pass's reading missed the notice
    (here: observing made blind to notices until the reading has gone past it)."""
    hidden = hidden_managed_settings(tmp_path, "hold")
    chat = door.chat("--managed-settings-dir", str(hidden))
    outbox_id = door.invite(chat)
    with monkeypatch.context() as blind:
        blind.setattr(ClaudeDoor, "_held", lambda self, row, lines: None)
        door.tick_until(
            lambda: (
                chat.transcript.exists()  # written once the frame has arrived
                and "Held peer message" in chat.transcript.read_text()
                and Outbox.get_by_id(outbox_id).observed_offset >= chat.transcript.stat().st_size
            )
        )
    assert door.row(outbox_id)["held"] is None
    assert chat.entry()["status"] == "idle"  # an explicit hold keeps the chat idle
    sent = float(Outbox.get_by_id(outbox_id).cursor["sent_at"])
    door.clock.now = sent + 61
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "uncertain" and row["held"]["cause"] == "explicit"
    door.clock.now = sent + 3600
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
