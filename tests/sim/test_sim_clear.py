"""/clear in the simulated chat plays the real 2.1.328's (tests/real_claude/OBSERVED.md
12, tests/real_claude/test_drift_observed.py): the same process and inbox, a new
sessionId in the same registry file, the old transcript closed with a cost-state line,
the new one written at once with the /clear itself; a frame to the old id is dropped.
Typed while a turn runs, /clear waits for it; a frame queued behind the /clear lands in
the new conversation's file (its dequeue too), one queued ahead of it in the old one's,
taking the frames behind the /clear along. A thinking turn is held open with
--think-gate, so turn, /clear and frames come in the order each test sets up."""

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


def test_a_frame_queued_behind_a_clear_typed_mid_turn_lands_in_the_new_file(
    start_chat, sim_home
) -> None:
    # A turn without tool calls (a peer turn thinking, held open by the gate until the
    # frame behind the /clear is queued): what arrives meanwhile queues.
    chat, gate = held_in_a_turn(start_chat, sim_home)
    clear_queued(chat)
    behind = queued(chat, chat.frame("Queued behind the clear. Say COOP_ACCEPT k1"))
    gate.touch()
    new = drifted(chat)
    new_path = transcript_of(chat, new)
    lines = wait_until(
        lambda: chat.finals(found := _lines(new_path)) and found, "its turn in the new file", 20
    )
    at = entry_at(chat, lines, behind["msg_id"])
    assert dequeues(lines[:at]) == 1, "dequeued into the new conversation"
    assert "COOP_ACCEPT k1" in chat.finals(lines)[-1]
    old = chat.transcript()
    assert not chat.peer_entries(old, behind["msg_id"])
    assert enqueued(old, behind["message"]["content"])
    assert dequeues(old) == 2, "the thinking frame's and the /clear's"
    assert old[-1]["type"] == "cost-state"


def test_frames_queued_ahead_of_a_clear_take_the_frames_behind_it_along(
    start_chat, sim_home
) -> None:
    # The order the first test avoids: a frame not yet taken into a turn when /clear is
    # typed. Peer frames first in the queue jump the /clear, and take those behind it.
    chat, gate = held_in_a_turn(start_chat, sim_home)
    ahead = queued(chat, chat.frame("Queued ahead of the clear. Say COOP_ACCEPT kA"))
    clear_queued(chat)
    behind = queued(chat, chat.frame("Queued behind the clear. Say COOP_ACCEPT kB"))
    gate.touch()
    new = drifted(chat)
    old = chat.transcript()
    a, b = entry_at(chat, old, ahead["msg_id"]), entry_at(chat, old, behind["msg_id"])
    assert b == a + 1, "both in one batch, in the old file"
    finals = chat.finals(old)
    assert len(finals) == 2 and "COOP_ACCEPT kB" in finals[1], "the thinking turn, then theirs"
    assert old[-1]["type"] == "cost-state"
    talk = [e for e in _lines(transcript_of(chat, new)) if e.get("type") in ("user", "assistant")]
    assert len(talk) == 2 and not chat.peer_entries(talk, behind["msg_id"]), "only the /clear"


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


def held_in_a_turn(start_chat: Any, sim_home: Any) -> tuple[Any, Path]:
    """A typed chat thinking in a peer turn that lasts until the gate file is touched."""
    gate = sim_home.root / "think-gate"
    chat = start_chat("--typed", "--think-gate", str(gate))
    think_in_turn(chat, chat.frame("Think about this for a while."))
    return chat, gate


def queued(chat: Any, frame: dict[str, Any]) -> dict[str, Any]:
    """``frame``, sent and queued behind the turn (its enqueue is written)."""
    chat.send(frame)
    chat.wait_transcript(lambda lines: enqueued(lines, frame["message"]["content"]))
    return frame


def clear_queued(chat: Any) -> None:
    chat.type("/clear")
    chat.wait_transcript(lambda lines: enqueued(lines, "/clear"))


def think_in_turn(chat: Any, frame: dict[str, Any]) -> None:
    """Send ``frame`` and wait until its turn has begun (its entry is written): status
    busy alone also means queued, and a /clear typed before the turn takes the frame
    queues behind it instead of behind the turn."""
    chat.send(frame)
    chat.wait_transcript(lambda lines: chat.peer_entries(lines, frame["msg_id"]))


def entry_at(chat: Any, lines: list[dict], msg_id: str) -> int:
    """The index of the one entry naming ``msg_id``."""
    (found,) = [i for i, entry in enumerate(lines) if chat.peer_entries([entry], msg_id)]
    return found


def enqueued(lines: list[dict], content: str) -> bool:
    return any(e.get("operation") == "enqueue" and e.get("content") == content for e in lines)


def dequeues(lines: list[dict]) -> int:
    return sum(e.get("operation") == "dequeue" for e in lines)


def _lines(path: Path) -> list[dict]:
    import json

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
    return [json.loads(line) for line in data.split(b"\n")[:-1]]
