"""/clear in the simulated chat plays the real 2.1.328's (tests/real_claude/OBSERVED.md
12, tests/real_claude/test_drift_observed.py): the same process and inbox, a new
sessionId in the same registry file, the old transcript closed with a cost-state line,
the new one written at once with the /clear itself; a frame to the old id is dropped.
Typed while a turn runs, /clear waits for it; a frame queued behind the /clear lands in
the new conversation's file, one queued ahead of it in the old one's."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from waiting import wait_until


def current(chat: Any) -> str:
    return str(chat.registry()["sessionId"])


def drifted(chat: Any) -> str:
    return str(wait_until(lambda: (now := current(chat)) != chat.session_id and now, "drift", 10))


def transcript_of(chat: Any, session_id: str) -> Path:
    return chat.transcript_path.with_name(f"{session_id}.jsonl")


def test_clear_in_an_idle_chat_keeps_the_process_and_inbox_and_starts_a_new_file(
    start_chat,
) -> None:
    chat = start_chat("--typed")
    first = chat.frame("Before the clear.")
    chat.send(first)
    chat.wait_turn_end()
    chat.wait_status("idle")
    before, inode = chat.registry(), os.stat(chat.socket).st_ino
    chat.type("/clear")
    new = drifted(chat)
    after = chat.registry()
    assert list(after) == list(before)
    assert {k for k in before if before[k] != after[k]} <= {"sessionId", "updatedAt"}
    assert after["pid"] == chat.pid and os.stat(chat.socket).st_ino == inode
    old_lines = chat.transcript()
    assert old_lines[-1]["type"] == "cost-state"
    new_path = transcript_of(chat, new)
    talk = [e for e in _lines(new_path) if e.get("type") in ("user", "system")]
    assert [(e["type"], e.get("subtype"), e.get("isMeta")) for e in talk] == [
        ("user", None, True),
        ("user", None, None),
        ("system", "local_command", False),
    ]
    assert talk[0]["parentUuid"] is None and talk[2]["commandRun"]["command"] == "clear"
    assert chat.session_id not in new_path.read_text()

    chat.send(chat.frame("To the old conversation."))
    chat.wait_note("dropped: session_id is not this chat's")
    later = chat.frame("To the new conversation.", session_id=new)
    chat.send(later)
    wait_until(lambda: chat.peer_entries(_lines(new_path), later["msg_id"]), "delivered", 10)
    assert chat.transcript() == old_lines


def test_a_frame_queued_behind_a_clear_typed_mid_turn_lands_in_the_new_file(start_chat) -> None:
    # A turn without tool calls (a peer turn thinking): what arrives meanwhile queues.
    chat = start_chat("--typed", "--think", "1.5")
    chat.send(chat.frame("Think about this for a while."))
    chat.wait_status("busy")
    chat.type("/clear")
    chat.wait_transcript(lambda lines: any(e.get("content") == "/clear" for e in lines))
    behind = chat.frame("Queued behind the clear. Say COOP_ACCEPT k1")
    chat.send(behind)
    new = drifted(chat)
    new_path = transcript_of(chat, new)
    lines = wait_until(
        lambda: chat.finals(found := _lines(new_path)) and found, "its turn in the new file", 20
    )
    assert chat.peer_entries(lines, behind["msg_id"])
    assert "COOP_ACCEPT k1" in chat.finals(lines)[-1]
    old = chat.transcript()
    assert not chat.peer_entries(old, behind["msg_id"])
    assert any(e.get("operation") == "enqueue" and "k1" in str(e.get("content")) for e in old)
    assert old[-1]["type"] == "cost-state"


def test_a_frame_absorbed_before_the_queued_clear_runs_is_answered_in_the_old_file(
    start_chat,
) -> None:
    chat = start_chat("--typed", "--busy-seconds", "1.5")
    chat.kill(signal.SIGUSR2)
    chat.wait_status("busy")
    ahead = chat.frame("Absorbed mid-turn. Say COOP_ACCEPT k2")
    chat.send(ahead)
    chat.wait_transcript(lambda lines: chat.peer_entries(lines, ahead["msg_id"]))
    chat.type("/clear")
    drifted(chat)
    old = chat.transcript()
    assert "COOP_ACCEPT k2" in chat.finals(old)[-1]
    assert old[-1]["type"] == "cost-state"


def _lines(path: Path) -> list[dict]:
    import json

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in data.split(b"\n")[:-1]]
