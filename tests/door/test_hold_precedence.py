"""Two holds of equal strength, one that expires and one that does not (DESIGN.md 5.6,
5.7): a receiver in bypassPermissions holds Coop's frame by permission-mode parity
(dropped at its dialog expiry, so proven lost 6 minutes after the send), while its
repository's settings hold it explicitly (held for ever, no dialog). The explicit hold is
the prediction: a frame the receiver keeps for good is never given up at 6 minutes.

Real simulated chats; the engine's clock is stepped across the 6-minute mark and far
beyond it, and the parity-only receiver shows that the same steps do expire a frame."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doorkit import Door

from coop_engine.models import Outbox

PARITY_LOST_AFTER = 5 * 60 + 60  # the default dialog expiry, then the grace
LATER = (PARITY_LOST_AFTER, PARITY_LOST_AFTER + 1, 3600, 7 * 24 * 3600)
REPOSITORY_FILES = {"project": "settings.json", "project-local": "settings.local.json"}


def repository(tmp_path: Path, source: str | None) -> Path:
    """A chat's working folder; with `source`, its repository settings hold."""
    folder = tmp_path / "repo"
    (folder / ".claude").mkdir(parents=True, exist_ok=True)
    if source is not None:
        settings = folder / ".claude" / REPOSITORY_FILES[source]
        settings.write_text(json.dumps({"crossSessionInbound": "hold"}))
    return folder


def sent_at(outbox_id: str) -> float:
    return float(Outbox.get_by_id(outbox_id).cursor["sent_at"])


def test_a_bypass_receiver_with_no_explicit_hold_is_given_up_at_six_minutes(
    door: Door, tmp_path: Path
) -> None:
    # The control: the parity hold alone, and the same clock steps expire the frame.
    cwd = repository(tmp_path, None)
    chat = door.chat("--dangerously-skip-permissions", "--no-held-notice", "--cwd", str(cwd))
    outbox_id = door.invite(chat)
    door.tick()
    inbound = door.row(outbox_id)["inbound"]
    assert (inbound["verdict"], inbound["source"]) == ("hold", "permission-mode-parity")
    door.clock.now = sent_at(outbox_id) + PARITY_LOST_AFTER - 1
    door.tick()
    assert door.row(outbox_id)["state"] == "uncertain"
    door.clock.now = sent_at(outbox_id) + PARITY_LOST_AFTER
    door.tick()
    row = door.row(outbox_id)
    assert (row["state"], row["reason"]) == ("expired", "held-for-approval-then-expired")


@pytest.mark.parametrize("source", list(REPOSITORY_FILES))
def test_an_explicit_repository_hold_outranks_an_equal_parity_hold_and_never_expires(
    door: Door, tmp_path: Path, source: str
) -> None:
    cwd = repository(tmp_path, source)
    # An older receiver writes no held notice: the prediction alone decides the verdict.
    chat = door.chat("--dangerously-skip-permissions", "--no-held-notice", "--cwd", str(cwd))
    outbox_id = door.invite(chat)
    door.tick()
    inbound = door.row(outbox_id)["inbound"]
    assert (inbound["verdict"], inbound["source"], inbound["mode"]) == (
        "hold",
        source,
        "bypassPermissions",
    )
    for later in LATER:
        door.clock.now = sent_at(outbox_id) + later
        door.tick()
        row = door.row(outbox_id)
        assert (row["state"], row["reason"]) == ("uncertain", None), f"at +{later} s"
    assert not [line for line in door.log if "expired" in line]
    # Still watched: the repository lets go and the user accepts; the held frame goes in
    # and Coop records its receipt.
    (cwd / ".claude" / REPOSITORY_FILES[source]).unlink()
    door.fleet.config_dir.mkdir(parents=True, exist_ok=True)
    (door.fleet.config_dir / "settings.json").write_text(
        json.dumps({"crossSessionInbound": "accept"})
    )
    door.tick_until(lambda: door.row(outbox_id)["state"] == "delivered")


def test_the_receivers_own_notice_of_a_repository_hold_keeps_it_watched_past_six_minutes(
    door: Door, tmp_path: Path
) -> None:
    cwd = repository(tmp_path, "project")
    chat = door.chat("--dangerously-skip-permissions", "--cwd", str(cwd))
    outbox_id = door.invite(chat)
    door.tick_until(lambda: door.row(outbox_id)["held"] is not None)
    row = door.row(outbox_id)
    assert row["inbound"]["source"] == "project"
    assert row["held"]["cause"] == "explicit"
    assert chat.entry()["status"] == "idle"  # no approval dialog: nothing will drop it
    for later in LATER:
        door.clock.now = sent_at(outbox_id) + later
        door.tick()
        assert door.row(outbox_id)["state"] == "uncertain", f"at +{later} s"
