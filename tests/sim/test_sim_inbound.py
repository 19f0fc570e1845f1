"""The receiver's inbound judgement: settings, permission-mode parity, holds, Deliver."""

from __future__ import annotations

import json
import os
import signal
import time

INVITE = "Coop invites you to todo #273: Fix the flaky importer test. COOP_ACCEPT n7Qk2xVb9"
SCALE = 0.02  # 60 s of dialog expiry pass in 1.2 s


def write_json(path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def test_bypass_receiver_holds_with_notice_and_waiting(start_chat) -> None:
    chat = start_chat("--mode", "bypassPermissions", "--dialog-expiry", "60s")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (permission-mode-parity)")
    entry = chat.wait_status("waiting")
    assert entry["waitingFor"] == "permission prompt"
    assert list(entry)[-1] == "waitingFor"
    lines = chat.transcript()
    assert lines[:2] == [
        {"type": "mode", "mode": "normal", "sessionId": chat.session_id},
        {
            "type": "permission-mode",
            "permissionMode": "bypassPermissions",
            "sessionId": chat.session_id,
        },
    ]
    [notice] = chat.of_type(lines, "system", "informational")
    assert notice["level"] == "warning" and notice["isMeta"] is False
    assert notice["parentUuid"] is None
    assert notice["content"] == (
        f"Held peer message \u2014 from an unidentified session [verified pid {os.getpid()}]; "
        f"preview: \u00ab{INVITE}\u00bb \u2014 not delivered to Claude (1 held). The sender "
        "did not attest its permission mode and this session bypasses prompts. Review it "
        'below, or set "crossSessionInbound" to "accept".'
    )
    assert not chat.peer_entries(lines, frame["msg_id"])
    assert not chat.of_type(lines, "user")
    # Still held once the chat has judged a later frame: the hold does not end by itself
    # before its expiry (a minute here, which no test waits for).
    later = chat.frame("A later message.")
    chat.send(later)
    chat.wait_note(f"frame {later['msg_id']}: hold (permission-mode-parity)")
    assert not any("expired" in note for note in chat.notes)
    assert chat.registry()["status"] == "waiting"
    assert "(2 held)" in chat.of_type(chat.transcript(), "system", "informational")[1]["content"]


def test_bypass_receiver_drops_the_held_frame_after_the_dialogs_expiry(start_chat) -> None:
    chat = start_chat("--mode", "bypassPermissions", "--dialog-expiry", "60s", time_scale=SCALE)
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (permission-mode-parity)")
    lines = chat.transcript()  # the notice, written before the note
    assert chat.of_type(lines, "system", "informational")
    chat.wait_note(f"frame {frame['msg_id']}: held frame expired")
    idle = chat.wait_status("idle")
    assert "waitingFor" not in idle
    assert chat.transcript() == lines  # dropping writes nothing
    assert not chat.peer_entries(lines, frame["msg_id"])


def test_held_notice_previews_the_first_line_and_counts_what_is_held(start_chat) -> None:
    chat = start_chat("--dangerously-skip-permissions")
    long_line = "L" * 150 + " end"
    chat.send(chat.frame(long_line))
    chat.send(chat.frame(long_line))  # identical, yet held again: no duplicate check
    chat.send(chat.frame("Second held.\nline two"))
    notices = chat.wait_transcript(
        lambda lines: len(chat.of_type(lines, "system", "informational")) == 3
    )
    contents = [n["content"] for n in chat.of_type(notices, "system", "informational")]
    cut = "\u00ab" + "L" * 120 + "\u00bb \u2026[1 line, 154 chars total \u2014 expand to review"
    assert cut in contents[0] and "(1 held)" in contents[0]
    assert cut in contents[1] and "(2 held)" in contents[1]
    assert "\u00abSecond held.\u00bb \u2026[2 lines, 21 chars total" in contents[2]
    assert "(3 held)" in contents[2]


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
    assert kinds[2:] == [
        "informational",
        "enqueue",
        "dequeue",
        "informational",
        "user",
        "assistant",
        "turn_duration",
    ]
    released = chat.of_type(lines, "system", "informational")[1]
    assert released["content"] == (
        "Released 1 held cross-session message to Claude's queue (you approved it)."
    )
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


def test_user_settings_accept_is_read_live_and_releases_what_is_held(start_chat, sim_home) -> None:
    chat = start_chat("--mode", "bypassPermissions")
    held = chat.frame("First message.")
    chat.send(held)
    chat.wait_note(f"frame {held['msg_id']}: hold (permission-mode-parity)")
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "accept"})
    chat.wait_note(f"frame {held['msg_id']}: released (policy)")
    chat.wait_turn_end(1)
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: accept (user)")
    lines = chat.wait_turn_end(2)
    assert chat.peer_entries(lines, frame["msg_id"])
    assert chat.peer_entries(lines, held["msg_id"])
    released = chat.of_type(lines, "system", "informational")[1]
    assert released["content"] == (
        "Released 1 held cross-session message to Claude's queue (crossSessionInbound now accepts)."
    )


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


def test_explicit_hold_shows_no_dialog_and_does_not_expire(start_chat) -> None:
    chat = start_chat("--inbound", "hold", "--dialog-expiry", "60s", time_scale=0.01)
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (flag)")
    [notice] = chat.of_type(chat.transcript(), "system", "informational")
    assert notice["content"].endswith(
        'Your "crossSessionInbound" setting is "hold"; set it to "accept" to deliver held messages.'
    )
    # Let the parity dialog's expiry (0.6 s here) pass, then have the chat judge a
    # later frame: an expiry due before it would have been noted before its verdict.
    time.sleep(60 * 0.01 * 1.5)
    later = chat.frame("A later message.")
    chat.send(later)
    chat.wait_note(f"frame {later['msg_id']}: hold (flag)")
    entry = chat.registry()
    assert entry["status"] == "idle" and "waitingFor" not in entry
    assert not any("expired" in note for note in chat.notes)
    chat.kill(signal.SIGUSR1)  # no dialog: Deliver has nothing to approve
    # The signal is handled before a frame sent after it is judged.
    last = chat.frame("The last message.")
    chat.send(last)
    chat.wait_note(f"frame {last['msg_id']}: hold (flag)")
    assert not any("released" in note for note in chat.notes)
    assert not chat.peer_entries(chat.transcript(), frame["msg_id"])


def test_user_hold_is_released_when_the_user_settings_accept(start_chat, sim_home) -> None:
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "hold"})
    chat = start_chat()
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (user)")
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "accept"})
    lines = chat.wait_turn_end()
    kinds = [e.get("subtype") or e.get("operation") or e["type"] for e in lines]
    assert kinds[2:] == [
        "informational",
        "enqueue",
        "dequeue",
        "informational",
        "user",
        "assistant",
        "turn_duration",
    ]
    assert chat.peer_entries(lines, frame["msg_id"])


def test_repository_hold_names_the_repository(start_chat, sim_home) -> None:
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "accept"})
    write_json(sim_home.cwd / ".claude" / "settings.json", {"crossSessionInbound": "hold"})
    chat = start_chat("--dangerously-skip-permissions")
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: hold (project)")
    [notice] = chat.of_type(chat.transcript(), "system", "informational")
    assert "This repository's settings set" in notice["content"]
    assert chat.registry()["status"] == "idle"


def test_an_invalid_value_is_ignored_in_user_settings_and_holds_elsewhere(
    start_chat, sim_home
) -> None:
    write_json(sim_home.config / "settings.json", {"crossSessionInbound": "bogus"})
    chat = start_chat()
    first = chat.frame("Delivered: user settings ignore the value.")
    chat.send(first)
    chat.wait_note(f"frame {first['msg_id']}: accept (permission-mode-parity)")
    write_json(sim_home.cwd / ".claude" / "settings.json", {"crossSessionInbound": "bogus"})
    second = chat.frame("Held: a repository's invalid value holds.")
    chat.send(second)
    chat.wait_note(f"frame {second['msg_id']}: hold (project)")
    lines = chat.wait_transcript(lambda lines: bool(chat.of_type(lines, "system", "informational")))
    [notice] = chat.of_type(lines, "system", "informational")
    assert 'unrecognized "crossSessionInbound" value' in notice["content"]
    assert chat.registry()["status"] in ("idle", "busy")


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
