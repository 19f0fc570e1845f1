"""Transcript lines -> receipts, conflicts and finals, on the hand-written shapes and on
real Claude Code transcripts."""

from __future__ import annotations

from pathlib import Path

import prerequisites
import pytest

from coop_engine import receipts
from hosts.mac import transcripts

SHARED = prerequisites.shared() / "fixtures"
SHAPES = SHARED / "claude-shapes"
REAL = SHARED / "real"
OUTBOX_ID = "3b9e6f0a-1c2d-4e5f-8a7b-9c0d1e2f3a4b"
NONCE = "n7Qk2xVb9"


@pytest.fixture
def shared_fixtures() -> Path:
    """../shared/fixtures: skipped without it, a failure naming it in CI."""
    return prerequisites.shared_fixtures()


needs_shared = pytest.mark.usefixtures("shared_fixtures")


def lines_of(path: Path) -> list[tuple[int, str]]:
    chunk = transcripts.read_lines(path, 0)
    return [(offset, line.decode("utf-8", "replace")) for offset, line in chunk.lines]


@needs_shared
def test_idle_shape_is_a_receipt_by_origin_msg_id_and_the_torn_tail_waits() -> None:
    path = SHAPES / "transcript_idle_peer_entry.jsonl"
    chunk = transcripts.read_lines(path, 0)
    assert chunk.end < path.stat().st_size  # the torn last line is not read
    (seen,) = receipts.sightings(lines_of(path), OUTBOX_ID)
    assert seen.is_receipt and seen.shape == "user"
    assert seen.entry_uuid != OUTBOX_ID  # the receiver minted its own uuid
    (final,) = receipts.finals(lines_of(path))
    assert receipts.answer_in(final.text, NONCE) == "accept"


@needs_shared
def test_busy_shape_is_a_receipt_and_the_joined_turn_final_answers() -> None:
    lines = lines_of(SHAPES / "transcript_busy_absorbed.jsonl")
    (seen,) = receipts.sightings(lines, OUTBOX_ID)
    assert seen.is_receipt and seen.shape == "queued_command"
    (final,) = receipts.finals(lines)
    assert final.offset > seen.offset
    assert receipts.answer_in(final.text, NONCE) == "accept"


@needs_shared
def test_wrong_provenance_is_not_a_receipt() -> None:
    (seen,) = receipts.sightings(lines_of(SHAPES / "transcript_wrong_provenance.jsonl"), OUTBOX_ID)
    assert not seen.is_receipt
    assert seen.problems == ["origin.from is 'uds:/run/user/501/cc-socks/777.sock', not 'cwkCoop'"]


@needs_shared
def test_seen_twice_yields_two_sightings() -> None:
    found = receipts.sightings(lines_of(SHAPES / "transcript_seen_twice.jsonl"), OUTBOX_ID)
    assert len(found) == 2 and found[0].offset != found[1].offset


@needs_shared
def test_every_real_transcript_line_parses_or_is_skipped_with_a_reason() -> None:
    files = sorted(REAL.glob("*.jsonl"))
    assert files, "no real transcripts found"
    for path in files:
        lines = lines_of(path)
        assert lines
        for _, text in lines:
            entry, reason = receipts.parse(text)
            assert (entry is None) == (reason is not None)
            if entry is not None:
                receipts.sighting(entry, 0, OUTBOX_ID)
                receipts.assistant_text(entry)
                receipts.held_notice(entry, 0)
        assert receipts.sightings(lines, OUTBOX_ID) == []


@needs_shared
def test_real_claude_transcripts_have_turn_finals() -> None:
    for name in (
        "claude_spotter_short.jsonl",
        "claude_spotter_tool_heavy.jsonl",
        "claude_fasthooks_sample_main_transcript.jsonl",
    ):
        found = list(receipts.finals(lines_of(REAL / name)))
        assert found, name
        assert all(f.text and f.end > f.offset for f in found)


@needs_shared
def test_sidechain_transcript_has_no_main_chain_final() -> None:
    assert (
        list(receipts.finals(lines_of(REAL / "claude_spotter_agent-acompact-e1f845.jsonl"))) == []
    )


def test_lines_that_are_json_but_not_objects_are_skipped() -> None:
    assert receipts.parse("[1,2]") == (None, "JSON list, not an object")
    assert receipts.parse("nul\x00l") == (None, "not JSON")


def test_answer_needs_the_exact_nonce_as_a_word() -> None:
    assert receipts.answer_in("ok COOP_ACCEPT abc123", "abc123") == "accept"
    assert receipts.answer_in("ok COOP_ACCEPT abc1234", "abc123") is None
    assert receipts.answer_in("COOP_ACCEPT xyz", "abc123") is None
    assert receipts.answer_in("COOP_DECLINE abc123", "abc123") == "decline"
    assert receipts.answer_in("COOP_ACCEPT abc123 COOP_DECLINE abc123", "abc123") == "both"


def test_a_final_is_the_last_main_chain_text_before_turn_duration() -> None:
    import json

    def line(entry: dict) -> str:
        return json.dumps(entry)

    text = [
        line(
            {
                "type": "assistant",
                "message": {"content": [{"type": "text", "text": "first COOP_ACCEPT n1"}]},
            }
        ),
        line(
            {
                "type": "assistant",
                "isSidechain": True,
                "message": {"content": [{"type": "text", "text": "side"}]},
            }
        ),
        line({"type": "assistant", "message": {"content": [{"type": "tool_use", "name": "Bash"}]}}),
        line(
            {"type": "assistant", "message": {"content": [{"type": "text", "text": "the final"}]}}
        ),
        line({"type": "system", "subtype": "turn_duration"}),
    ]
    (final,) = receipts.finals(list(enumerate(text)))
    assert final.text == "the final" and final.offset == 3 and final.end == 4


def test_held_notice_preview_matches_the_envelope_text() -> None:
    content = (
        "Held peer message — from an unidentified session [verified pid 4242]; "
        "preview: «Coop invites you to todo #3: Fix the build» … "
        "— not delivered to Claude (1 held)."
    )
    notice = receipts.held_notice(
        {"type": "system", "subtype": "informational", "content": content}, 7
    )
    assert notice is not None
    assert receipts.preview_matches(
        notice.preview, "Coop invites you to todo #3: Fix the build, again\nTo take it"
    )
    assert not receipts.preview_matches(notice.preview, "Coop invites you to todo #4: Other")
