"""Which chat a CLI call was typed in (seed 003, "How a Chat Finds Itself"): an exported
PIPPA_COOP_SESSION always wins over detection; otherwise the parent chain is walked up
at most sixteen steps, the calling process included, to the first pid with a registry
entry. Real process trees: a simulated chat runs a command through its Bash tool, and
that command nests real processes until the caller stands exactly as deep as wanted."""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from hosts.sim.launch import SimChat, SimFleet

WALK = 16  # processes looked at: the caller and its 15 nearest ancestors (seed 003)
THREAD = "019c8a70-dda7-7f33-98ea-f30553347322"
ANSWER_SECONDS = 120.0  # only bounds a hang: a chain of 16 Pythons takes a few seconds

# Run by the chat's Bash tool: each process measures how many steps up its chat is and,
# while that is fewer than wanted, starts the next one beneath itself (no shell between);
# the one standing exactly as deep asks Coop who is calling and writes the answer.
CHAIN = """
import json, os, subprocess, sys
from hosts.mac.platforms import current_platform

wanted, answer = int(sys.argv[1]), sys.argv[2]
platform = current_platform()

def steps_to_chat():
    pid, steps = os.getpid(), 0
    while pid and pid > 1:
        argv = platform.cmdline(pid) or []
        if "hosts.sim" in argv and "chat" in argv:
            return steps
        pid, steps = platform.parent(pid), steps + 1
    raise SystemExit("no simulated chat above this process")

steps = steps_to_chat()
if steps < wanted:
    raise SystemExit(subprocess.run([sys.executable, *sys.argv]).returncode)
from coop_engine.cli.caller import caller_session
found = {"steps": steps, "caller": caller_session(), "pid": os.getpid()}
with open(answer + ".part", "w") as out:
    json.dump(found, out)
os.rename(answer + ".part", answer)
"""


def chain_command(wanted: int, answer: Path) -> str:
    script = answer.with_name("chain.py")
    script.write_text(CHAIN)
    return shlex.join([sys.executable, str(script), str(wanted), str(answer)])


@pytest.fixture
def chats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimFleet]:
    monkeypatch.delenv("PIPPA_COOP_SESSION", raising=False)
    fleet = SimFleet(tmp_path / "claude")
    try:
        yield fleet
    finally:
        fleet.stop_all()


def caller_at(
    chats: SimFleet, tmp_path: Path, wanted: int, **env: str
) -> tuple[SimChat, dict[str, Any]]:
    """A chat whose command runs a caller `wanted` steps below the chat (0: as near as
    its Bash tool puts it); what that caller was found to be."""
    answer = tmp_path / f"caller-{len(chats.chats)}.json"  # one per chat started
    chat = chats.start(
        "--run",
        chain_command(wanted, answer),
        env={"CLAUDE_CONFIG_DIR": str(chats.config_dir), **env},
    )

    def answered() -> bool:
        assert chat.process.poll() is None, "the chat exited"
        return answer.exists()

    wait_until(answered, "the caller's answer", ANSWER_SECONDS, detail=lambda: chat.frame_log)
    found: dict[str, Any] = json.loads(answer.read_text())
    if wanted:
        assert found["steps"] == wanted
    return chat, found


def test_a_caller_fifteen_steps_below_its_chat_is_found_the_sixteenth_process_looked_at(
    chats: SimFleet, tmp_path: Path
) -> None:
    chat, found = caller_at(chats, tmp_path, WALK - 1)
    assert found["caller"] == chat.ref


def test_a_caller_sixteen_steps_below_its_chat_is_not_found(
    chats: SimFleet, tmp_path: Path
) -> None:
    _, found = caller_at(chats, tmp_path, WALK)
    assert found["caller"] is None


def test_an_exported_session_wins_over_the_chat_found_by_detection(
    chats: SimFleet, tmp_path: Path
) -> None:
    # The control: the same command in the same kind of chat, nothing exported, is
    # detected as that chat, so the walk would have found one below.
    chat, found = caller_at(chats, tmp_path, 0)
    assert found["caller"] == chat.ref
    _, found = caller_at(chats, tmp_path, 0, PIPPA_COOP_SESSION=f"codex:{THREAD}")
    assert found["caller"] == f"codex:{THREAD}"
    _, found = caller_at(chats, tmp_path, WALK, PIPPA_COOP_SESSION=f"codex:{THREAD}")
    assert found["caller"] == f"codex:{THREAD}"  # wins where the walk finds nothing too


def test_a_caller_outside_any_chat_is_nobody_unless_it_exports_a_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from coop_engine.cli.caller import caller_session

    monkeypatch.delenv("PIPPA_COOP_SESSION", raising=False)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    (tmp_path / "claude" / "sessions").mkdir(parents=True)
    assert caller_session() is None
    monkeypatch.setenv("PIPPA_COOP_SESSION", f"  codex:{THREAD} ")
    assert caller_session() == f"codex:{THREAD}"
