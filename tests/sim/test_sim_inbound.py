"""The receiver's inbound judgement: settings, permission-mode parity, holds, Deliver."""

from __future__ import annotations

import json
import signal
import time

INVITE = "Coop invites you to todo #273: Fix the flaky importer test. COOP_ACCEPT n7Qk2xVb9"
SCALE = 0.02  # 60 s of dialog expiry pass in 1.2 s


def write_json(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_bypass_receiver_holds_with_notice_and_waiting_then_drops_after_dialog_expiry(
    start_chat,
) -> None:
    chat = start_chat("--mode", "bypassPermissions", "--dialog-expiry", "60s", time_scale=SCALE)
    frame = chat.frame(INVITE)
    sent = time.monotonic()
    chat.send(frame)
    entry = chat.wait_status("waiting")
    assert entry["waitingFor"] == "permission prompt"
    lines = chat.transcript()
    assert lines[0] == {
        "type": "permission-mode",
        "permissionMode": "bypassPermissions",
        "sessionId": chat.session_id,
    }
    [notice] = chat.of_type(lines, "system", "informational")
    assert notice["level"] == "warning"
    assert notice["content"].startswith("Held peer message — from cwkCoop")
    assert "preview: «Coop invites you to todo #273" in notice["content"]
    assert not chat.peer_entries(lines, frame["msg_id"])
    assert not chat.of_type(lines, "user")
    chat.wait_note(f"frame {frame['msg_id']}: held frame expired")
    assert time.monotonic() - sent >= 60 * SCALE * 0.9
    idle = chat.wait_status("idle")
    assert "waitingFor" not in idle
    assert chat.transcript() == lines  # dropping writes nothing


def test_older_desktop_build_holds_without_writing_anything(start_chat) -> None:
    chat = start_chat("--dangerously-skip-permissions", "--no-held-notice")
    chat.send(chat.frame(INVITE))
    chat.wait_status("waiting")
    assert not chat.transcript_path.exists()


def test_deliver_signal_releases_held_frames_as_normal_peer_entries(start_chat) -> None:
    chat = start_chat("--permission-mode", "bypassPermissions")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_status("waiting")
    chat.kill(signal.SIGUSR1)  # the user chooses Deliver
    lines = chat.wait_turn_end()
    [entry] = chat.peer_entries(lines, frame["msg_id"])
    assert entry["type"] == "user" and entry["permissionMode"] == "bypassPermissions"
    kinds = [e.get("subtype") or e.get("operation") or e["type"] for e in lines]
    assert kinds.index("informational") < kinds.index("enqueue") < kinds.index("user")
    assert chat.finals(lines) == ["I will take it. COOP_ACCEPT n7Qk2xVb9"]
    assert "waitingFor" not in chat.wait_status("idle")


def test_refuse_drops_at_once_and_writes_nothing(start_chat) -> None:
    chat = start_chat("--inbound", "refuse")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: refuse (flag)")
    assert not chat.transcript_path.exists()
    assert chat.registry()["status"] == "idle"


def test_explicit_accept_flag_makes_a_bypass_receiver_deliver_at_once(start_chat) -> None:
    chat = start_chat("--mode", "bypassPermissions", "--inbound", "accept")
    frame = chat.frame(INVITE)
    chat.send(frame)
    lines = chat.wait_turn_end()
    assert chat.peer_entries(lines, frame["msg_id"])
    assert not chat.of_type(lines, "system", "informational")


def test_user_settings_accept_is_read_live_by_a_bypass_receiver(start_chat, sim_home) -> None:
    chat = start_chat("--mode", "bypassPermissions")
    held = chat.frame("First message.")
    chat.send(held)
    chat.wait_note(f"frame {held['msg_id']}: hold (permission-mode-parity)")
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "accept"})
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: accept (user)")
    lines = chat.wait_turn_end()
    assert chat.peer_entries(lines, frame["msg_id"])
    assert not chat.peer_entries(lines, held["msg_id"])


def test_project_settings_can_tighten_but_never_loosen(start_chat, sim_home) -> None:
    write_json(sim_home.cwd / ".claude" / "settings.json", {"crossSessionInbound": "accept"})
    chat = start_chat("--mode", "bypassPermissions")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (permission-mode-parity)")
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "accept"})
    write_json(sim_home.cwd / ".claude" / "settings.local.json", {"crossSessionInbound": "refuse"})
    second = chat.frame("Another message.")
    chat.send(second)
    chat.wait_note(f"frame {second['msg_id']}: refuse (local)")


def test_managed_settings_outrank_the_settings_flag(start_chat, sim_home) -> None:
    write_json(sim_home.managed / "managed-settings.json", {"crossSessionInbound": "accept"})
    write_json(
        sim_home.managed / "managed-settings.d" / "50-lock.json", {"crossSessionInbound": "refuse"}
    )
    chat = start_chat("--inbound", "accept")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: refuse (managed)")


def test_explicit_hold_parks_for_review_and_does_not_expire(start_chat) -> None:
    chat = start_chat("--inbound", "hold", "--dialog-expiry", "60s", time_scale=0.01)
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (flag)")
    [notice] = chat.of_type(chat.transcript(), "system", "informational")
    assert "parked for your review" in notice["content"]
    time.sleep(60 * 0.01 * 1.5)  # well past the parity dialog's expiry
    assert chat.registry()["status"] == "waiting"
    assert not any("expired" in note for note in chat.notes)


def test_default_mode_from_user_settings_sets_parity(start_chat, sim_home) -> None:
    write_json(
        sim_home.config / "settings.json", {"permissions": {"defaultMode": "bypassPermissions"}}
    )
    chat = start_chat()
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (permission-mode-parity)")


def test_settings_flag_file_is_read_at_each_judgement(start_chat, sim_home) -> None:
    flag_file = sim_home.root / "flag.json"
    write_json(flag_file, {"crossSessionInbound": "refuse"})
    chat = start_chat("--settings", str(flag_file))
    first = chat.frame("First message.")
    chat.send(first)
    chat.wait_note(f"frame {first['msg_id']}: refuse (flag)")
    write_json(flag_file, {"crossSessionInbound": "accept"})
    second = chat.frame(INVITE)
    chat.send(second)
    chat.wait_note(f"frame {second['msg_id']}: accept (flag)")
