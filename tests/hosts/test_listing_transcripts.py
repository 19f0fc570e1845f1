"""Where a listing reads each live chat's recorded permission mode: the transcript's
last lines, read at once where the chat's cwd puts it, and found by its id anywhere
else. A real process registered as a chat; real files and a real FIFO."""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hosts.mac.local import LocalHost
from hosts.mac.transcripts import escape_cwd
from tests.refusing import RefusingChat

SESSION = "5b0f3c1e-8a2d-4c6e-9f10-2a3b4c5d6e7f"


@pytest.fixture
def chat(tmp_path: Path) -> Iterator[RefusingChat]:
    inbox = Path(tempfile.mkdtemp(prefix="lt", dir="/tmp"))  # AF_UNIX paths are short
    inbox.rmdir()
    live = RefusingChat(tmp_path / "claude" / "sessions", inbox, tmp_path / "work", SESSION)
    try:
        yield live
    finally:
        live.close()


def record_mode(folder: Path, mode: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    entry = {"type": "user", "permissionMode": mode, "message": {"content": "hi"}}
    (folder / f"{SESSION}.jsonl").write_text(json.dumps(entry) + "\n")


def listed_mode(config: Path) -> Any:
    host = LocalHost("office", config_dir=config, managed_dir=config / "managed")
    (chat,) = host.chats(with_policy=True)["chats"]
    return chat["policy_inputs"]["recorded_mode"]


def test_the_transcript_where_the_cwd_puts_it_gives_the_recorded_mode(
    tmp_path: Path, chat: RefusingChat
) -> None:
    config = tmp_path / "claude"
    record_mode(config / "projects" / escape_cwd(str(tmp_path / "work")), "plan")
    assert listed_mode(config) == "plan"


def test_a_transcript_in_another_project_folder_is_found_by_its_id(
    tmp_path: Path, chat: RefusingChat
) -> None:
    # A chat that moved (`cd` in the session): its transcript stays where it started.
    config = tmp_path / "claude"
    record_mode(config / "projects" / "-somewhere-else", "acceptEdits")
    assert listed_mode(config) == "acceptEdits"


def test_a_fifo_where_the_transcript_would_be_does_not_hold_the_listing(
    tmp_path: Path, chat: RefusingChat
) -> None:
    config = tmp_path / "claude"
    folder = config / "projects" / escape_cwd(str(tmp_path / "work"))
    folder.mkdir(parents=True)
    os.mkfifo(folder / f"{SESSION}.jsonl")
    answers: list[Any] = []
    listing = threading.Thread(target=lambda: answers.append(listed_mode(config)), daemon=True)
    listing.start()
    listing.join(timeout=10)  # a deadline for a hang, not a speed bound
    if listing.is_alive():
        # Let the stuck open go (a writer's open completes it), then fail.
        with open(folder / f"{SESSION}.jsonl", "wb"):
            pass
        pytest.fail("the listing waited on a FIFO named like the chat's transcript")
    assert answers == [None]
