"""The real Claude Code 2.1.328 as a receiver of Coop's frames (shapes in OBSERVED.md).

Frames are written with the harness's raw writer, not Coop's code. Each test starts its
own chat (about 1 to 3 s) and waits only for what it needs.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .frames import coop_frame, write_frame_read
from .harness import Chat

pytestmark = pytest.mark.real_claude

Entry = dict[str, Any]
HANG = 60.0  # seconds: bounds a hang only (a loaded machine's real chat is slow)


def invitation(nonce: str) -> str:
    return (
        "Coop invites you to todo #273: Fix the flaky importer test.\n"
        f"To take it, end your reply with: COOP_ACCEPT {nonce}"
    )


def is_turn_end(entry: Entry) -> bool:
    return entry.get("type") == "system" and entry.get("subtype") == "turn_duration"


def assistant_text(entry: Entry) -> str:
    if entry.get("type") != "assistant" or entry.get("isSidechain"):
        return ""
    content = entry.get("message", {}).get("content") or []
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def final_after(entries: list[Entry], index: int) -> tuple[str, int]:
    """The final of the turn containing ``entries[index]``: the last assistant text
    before the next turn_duration; returns (text, index of that turn_duration)."""
    final = ""
    for i in range(index, len(entries)):
        final = assistant_text(entries[i]) or final
        if is_turn_end(entries[i]):
            return final, i
    raise AssertionError("the turn has not ended")


def next_line(screen: str, line: str) -> str | None:
    """The screen line after the one that shows ``line``, stripped."""
    rows = screen.splitlines()
    at = [i for i, row in enumerate(rows) if line in row]
    return rows[at[0] + 1].strip() if at and at[0] + 1 < len(rows) else None


def find(entries: list[Entry], match: Callable[[Entry], bool]) -> list[int]:
    return [i for i, e in enumerate(entries) if match(e)]


def wait_turn_end(chat: Chat, after: Callable[[Entry], bool], timeout: float = HANG) -> list[Entry]:
    """Wait until a turn_duration follows the first entry matching ``after``."""

    def ended() -> list[Entry] | None:
        entries = chat.transcript()
        starts = find(entries, after)
        if starts and any(is_turn_end(e) for e in entries[starts[0] :]):
            return entries
        return None

    return chat.wait_for(ended, timeout, "the turn to end")


def peer_user_entry(msg_id: str) -> Callable[[Entry], bool]:
    return lambda e: e.get("type") == "user" and (e.get("origin") or {}).get("msg_id") == msg_id


def queued_command(msg_id: str) -> Callable[[Entry], bool]:
    def match(e: Entry) -> bool:
        attachment = e.get("attachment") or {}
        return (
            e.get("type") == "attachment"
            and attachment.get("type") == "queued_command"
            and (attachment.get("origin") or {}).get("msg_id") == msg_id
        )

    return match


def test_idle_chat_writes_peer_entry_and_its_final_accepts(start_chat: Callable[..., Chat]) -> None:
    chat = start_chat()
    assert not chat.transcript_path().exists(), "no transcript before the first message"
    registry = chat.registry()
    assert registry is not None and registry["status"] == "idle"
    assert registry["peerProtocol"] == 1 and registry["pid"] == chat.pid

    frame = chat.send(invitation("n7Qk2xVb9"))
    msg_id = frame["msg_id"]
    entries = wait_turn_end(chat, peer_user_entry(msg_id))

    (at,) = find(entries, peer_user_entry(msg_id))
    peer = entries[at]
    assert peer["isMeta"] is True
    assert peer["uuid"] != msg_id, "the default socket re-mints the uuid"
    origin = peer["origin"]
    assert (origin["kind"], origin["from"], origin["msg_id"]) == ("peer", "cwkCoop", msg_id)
    assert origin["verifiedPeerPid"] == os.getpid()
    assert (peer["promptSource"], peer["turnOrigin"], peer["permissionMode"]) == (
        "system",
        "peer",
        "auto",
    )
    content = peer["message"]["content"]
    assert content.startswith("Another Claude session sent a message:\n" + invitation("n7Qk2xVb9"))
    assert "<cross-session-message" not in content
    # The queue records the raw text: enqueue (no ids), then dequeue, then the entry.
    ops = [e for e in entries[:at] if e.get("type") == "queue-operation"]
    assert [o["operation"] for o in ops] == ["enqueue", "dequeue"]
    assert ops[0]["content"] == invitation("n7Qk2xVb9") and "commandUuid" not in ops[0]

    final, _ = final_after(entries, at)
    assert final.endswith("COOP_ACCEPT n7Qk2xVb9")

    # The same chat, told to decline, answers the next invitation with COOP_DECLINE.
    chat.set_script({"invitation": "decline"})
    second = chat.send(invitation("Zx81"))
    entries = wait_turn_end(chat, peer_user_entry(second["msg_id"]))
    final, _ = final_after(entries, find(entries, peer_user_entry(second["msg_id"]))[0])
    assert final.endswith("COOP_DECLINE Zx81")
    chat.wait_for(lambda: (chat.registry() or {}).get("status") == "idle", HANG, "idle")


def test_busy_chat_absorbs_frame_mid_turn_and_the_joined_turn_answers(
    start_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    chat = start_chat()
    gate = tmp_path / "tool-gate"
    # Four Bash `sleep 1` calls or more, until the gate opens, then a final: the frame
    # arrives mid-turn however loaded the machine.
    chat.submit(f"COOP_WORK 4 1 UNTIL {gate}")
    chat.wait_for(
        lambda: any(e.get("type") == "assistant" for e in chat.transcript()), HANG, "a tool call"
    )
    assert (chat.registry() or {}).get("status") == "busy"

    msg_id = chat.send(invitation("busyN0nce"))["msg_id"]
    absorbed = queued_command(msg_id)
    chat.wait_for(lambda: find(chat.transcript(), absorbed), HANG, "the absorbed frame")
    gate.touch()
    entries = wait_turn_end(chat, queued_command(msg_id))

    assert not find(entries, peer_user_entry(msg_id)), "absorbed, not a new turn"
    (at,) = find(entries, queued_command(msg_id))
    attachment = entries[at]["attachment"]
    assert attachment["isMeta"] is True and "isMeta" not in entries[at]
    origin = attachment["origin"]
    assert (origin["kind"], origin["from"], origin["msg_id"]) == ("peer", "cwkCoop", msg_id)
    assert attachment["prompt"] == invitation("busyN0nce")

    removed = [
        e for e in entries if e.get("type") == "queue-operation" and e.get("operation") == "remove"
    ]
    assert len(removed) == 1 and removed[0]["reason"] == "absorbed_mid_turn"
    assert removed[0]["commandUuid"] == attachment["source_uuid"] != msg_id
    assert removed[0]["deliveryId"] == attachment["delivery_id"]

    final, end = final_after(entries, at)
    assert final.endswith("COOP_ACCEPT busyN0nce")
    assert sum(1 for e in entries if is_turn_end(e)) == 1, "one turn: the typed one"
    typed = find(entries, lambda e: e.get("type") == "user" and e.get("promptSource") == "typed")
    assert typed and typed[0] < at < end


def test_bypass_chat_holds_frame_with_notice_and_waits_for_permission(
    start_chat: Callable[..., Chat],
) -> None:
    chat = start_chat(bypass=True)
    text = invitation("h0ld")
    msg_id = chat.send(text)["msg_id"]

    def notice() -> Entry | None:
        for entry in chat.transcript():
            if entry.get("type") == "system" and entry.get("subtype") == "informational":
                return entry
        return None

    held = chat.wait_for(notice, HANG, "the held notice")
    assert held["level"] == "warning" and held["isMeta"] is False
    first_line = text.splitlines()[0]
    assert held["content"].startswith(
        "Held peer message — from an unidentified session [verified pid "
    )
    assert f"preview: «{first_line}» …[2 lines" in held["content"]
    assert "not delivered to Claude (1 held)" in held["content"]
    assert (
        "The sender did not attest its permission mode and this session bypasses prompts."
        in (held["content"])
    )
    registry = chat.wait_for(
        lambda: (r := chat.registry()) and r.get("status") == "waiting" and r, HANG, "waiting"
    )
    assert registry["waitingFor"] == "permission prompt"
    modes = [e["permissionMode"] for e in chat.transcript() if e.get("type") == "permission-mode"]
    assert modes and set(modes) == {"bypassPermissions"}
    assert not find(chat.transcript(), peer_user_entry(msg_id))


def test_bypass_chat_with_accept_in_settings_flag_delivers_at_once(
    start_chat: Callable[..., Chat],
) -> None:
    chat = start_chat(bypass=True, settings_flag={"crossSessionInbound": "accept"})
    msg_id = chat.send(invitation("fl4g"))["msg_id"]
    entries = wait_turn_end(chat, peer_user_entry(msg_id))
    peer = entries[find(entries, peer_user_entry(msg_id))[0]]
    assert peer["permissionMode"] == "bypassPermissions"
    assert final_after(entries, 0)[0].endswith("COOP_ACCEPT fl4g")


def test_host_named_socket_keeps_the_frame_uuid(start_chat: Callable[..., Chat], tmp_path) -> None:
    folder = tmp_path / "inbox"
    folder.mkdir(mode=0o700)
    chat = start_chat(messaging_socket_path=str(folder / "chat.sock"))
    assert chat.socket_path == str(folder / "chat.sock")
    assert os.stat(chat.socket_path).st_mode & 0o777 == 0o600
    msg_id = chat.send("A frame through a host-named socket.")["msg_id"]
    entries = wait_turn_end(chat, peer_user_entry(msg_id))
    assert entries[find(entries, peer_user_entry(msg_id))[0]]["uuid"] == msg_id


def test_identical_body_within_30s_is_dropped_with_a_notice(
    start_chat: Callable[..., Chat],
) -> None:
    chat = start_chat()
    text = "The same words twice."
    first = chat.send(text)["msg_id"]
    wait_turn_end(chat, peer_user_entry(first))
    size = chat.transcript_size()
    second = chat.send(text)["msg_id"]
    dropped = chat.wait_for(
        lambda: [e for e in chat.transcript(size) if e.get("subtype") == "informational"],
        HANG,
        "the drop notice",
    )
    assert dropped[0]["content"] == (
        "Dropped a peer message from cwkCoop: identical to the previous message from this sender."
    )
    # A later, different frame's turn has ended: the dropped one never made a turn.
    third = chat.send("Other words.")["msg_id"]
    entries = wait_turn_end(chat, peer_user_entry(third))
    assert not find(entries, peer_user_entry(second))


def test_refused_and_misaddressed_frames_leave_no_trace(start_chat: Callable[..., Chat]) -> None:
    refusing = start_chat(user_settings={"crossSessionInbound": "refuse"})
    plain = start_chat()
    # Each chat hangs up once it has read and judged the frame: the sign to look for traces.
    write_frame_read(refusing.socket_path, coop_frame(refusing.session_id, "Refused by policy."))
    elsewhere = coop_frame("00000000-0000-4000-8000-000000000000", "Addressed to another session.")
    write_frame_read(plain.socket_path, elsewhere)
    for chat in (refusing, plain):
        assert not chat.transcript_path().exists()
        assert (chat.registry() or {}).get("status") == "idle"
    # And a later frame the plain chat takes is all its transcript holds of peers.
    later = plain.send("Addressed to this session.")["msg_id"]
    entries = wait_turn_end(plain, peer_user_entry(later))
    received = [(e.get("origin") or {}).get("msg_id") for e in entries if e.get("type") == "user"]
    assert [msg_id for msg_id in received if msg_id] == [later]


def test_registry_is_removed_on_clean_exit_and_lingers_after_sigkill(
    start_chat: Callable[..., Chat],
) -> None:
    clean, killed = start_chat(), start_chat()
    sessions = clean.config_dir / "sessions"
    (key,) = sessions.glob(f"{clean.pid}.*.key")
    assert {p.name for p in sessions.iterdir()} == {f"{clean.pid}.json", key.name}
    assert re.fullmatch(rf"{clean.pid}\.[0-9a-f]{{64}}\.key", key.name)
    assert sessions.stat().st_mode & 0o777 == 0o700
    assert clean.registry_path().stat().st_mode & 0o777 == 0o644
    assert key.stat().st_mode & 0o777 == 0o600
    with open(f"/proc/{clean.pid}/stat") as f:
        assert clean.registry()["procStart"] == f.read().rsplit(")", 1)[1].split()[19]

    clean.send_signal(signal.SIGTERM)
    killed.send_signal(signal.SIGKILL)
    clean.wait_for(lambda: not clean.alive(), HANG, "a clean exit")
    killed.wait_for(lambda: not killed.alive(), HANG, "the kill")
    assert list(sessions.iterdir()) == [] and not os.path.exists(clean.socket_path)
    left = {p.name for p in (killed.config_dir / "sessions").iterdir()}
    assert f"{killed.pid}.json" in left and len(left) == 2
    assert os.path.exists(killed.socket_path), "the dead chat's socket file lingers"


def test_a_line_read_with_its_enter_stays_in_the_prompt_until_enter_again(
    start_chat: Callable[..., Chat], tmp_path: Path
) -> None:
    """What a loaded machine did to the harness's typing (OBSERVED.md 1.19)."""
    chat = start_chat()
    gate = tmp_path / "tool-gate"
    gate.touch()
    line = f"COOP_WORK 1 1 UNTIL {gate}"
    chat.keys("-l", line + "\r")  # the text and its Enter in one write
    chat.wait_for(lambda: line in chat.screen(), HANG, "the line on the screen")
    # A key typed after it lands on the prompt's next line: the Enter was a newline.
    chat.keys("-l", "Z")
    chat.wait_for(lambda: next_line(chat.screen(), line) == "Z", HANG, "Z after the line")
    assert not [e for e in chat.transcript() if e.get("type") == "user"], "sent as a prompt"
    chat.keys("BSpace")
    chat.wait_for(lambda: next_line(chat.screen(), line) == "", HANG, "the Z erased")

    chat.wait_sent(line)
    typed = [e for e in chat.transcript() if e.get("type") == "user" and not e.get("isMeta")]
    assert typed[0]["message"]["content"] == line
