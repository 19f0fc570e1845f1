"""The shapes a chat reference may take on the command line (coop_engine/cli/arguments.py):
any printable text of a name's length passes to be looked up; what is plainly no chat
(an empty or endless value, a control character, an unknown vendor or a vendor followed
by what is no id) is a usage line before anything is opened."""

from __future__ import annotations

import argparse
import re

import pytest

from coop_engine.cli.arguments import chat_id, full_ref, session_ref

UUID = "abcd1111-2222-4333-8444-555555555555"


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (f"claude:{UUID}", f"claude:{UUID}"),
        (f"CLAUDE:{UUID.upper()}", f"claude:{UUID}"),
        (f"codex:{UUID}", f"codex:{UUID}"),
        ("codex:019adf3e-7", "codex:019adf3e-7"),
        ("claude:abcd", "claude:abcd"),
        ("abcd1111", "abcd1111"),
        ("ABCD", "ABCD"),  # an id's start or a name: matched without case for an id only
        ("reviewer-7", "reviewer-7"),
        ("  reviewer-7 ", "reviewer-7"),
        ("fix: the importer", "fix: the importer"),  # a name with a colon
        ("ünïcode ✓", "ünïcode ✓"),
        ("../../sessions/1", "../../sessions/1"),  # a name is looked up, never a path
    ],
)
def test_a_reference_passes_as_text_to_look_up(text: str, parsed: str) -> None:
    assert session_ref(text) == parsed


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "1 to 255 printable characters"),
        ("   ", "1 to 255 printable characters"),
        ("a" * 256, "1 to 255 printable characters"),
        ("a\nb", "1 to 255 printable characters"),
        ("tab\there", "1 to 255 printable characters"),
        ("slack:abc", "a chat is named claude:<session id> or codex:<thread id>"),
        (f"slack:{UUID}", "a chat is named claude:<session id> or codex:<thread id>"),
        ("claude:abc", "after claude: comes an id or at least 4 characters of one"),
        ("codex:not-a-thread", "after codex: comes an id"),
        ("claude:reviewer-7", "after claude: comes an id"),
        ("claude:" + "a" * 37, "after claude: comes an id"),
        ("claude:../../../etc/passwd", "after claude: comes an id"),
    ],
)
def test_what_is_plainly_no_chat_is_a_usage_error(text: str, said: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(said)):
        session_ref(text)


def test_chat_show_reads_claude_chats_only() -> None:
    assert chat_id(UUID) == UUID
    assert chat_id(f"Claude:{UUID}") == f"claude:{UUID}"
    assert chat_id("reviewer-7") == "reviewer-7"
    with pytest.raises(argparse.ArgumentTypeError, match="reads a Claude chat"):
        chat_id(f"codex:{UUID}")


def test_only_a_whole_vendor_and_uuid_is_taken_without_a_look_up() -> None:
    assert full_ref(f"claude:{UUID}") and full_ref(f"codex:{UUID}")
    for partial in (UUID, "claude:abcd1111", f"claude:{UUID}0", "reviewer-7"):
        assert not full_ref(partial)
