"""Properties of the text boundary: for any string a chat, a Mac or a paste could write
(controls, markup, bidi), what Coop prints holds no character that steers a terminal;
and for any bytes in a file or an answer Coop reads, the reader ends with its own
answer or its own refusal, never another exception."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, given, settings
from untrusted import HOSTILE, steering

from coop_engine import receipts
from coop_engine.cli.output import print_rows
from coop_engine.errors import BadInput
from coop_engine.formats import STEERING, entry_line, one_line, printable
from coop_engine.frame_text import title
from coop_engine.loop.notifier import message_of
from coop_engine.policy import inbound_policy
from hosts import shapes
from hosts.fleet import FleetError, read_fleet_config
from hosts.mac import codex_records
from hosts.mac import settings as claude_settings

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(HOSTILE)
def test_the_renderer_leaves_no_character_that_steers_a_terminal(text: str) -> None:
    assert steering(printable(text), kept="\t\n") == []
    assert steering(one_line(text)) == []


@SETTINGS
@given(st.text(max_size=40).filter(lambda t: not STEERING.search(t)))
def test_text_that_steers_nothing_is_shown_as_it_is(text: str) -> None:
    assert printable(text) == text


@SETTINGS
@given(HOSTILE)
def test_the_door_refuses_a_title_exactly_when_it_holds_a_steering_character(text: str) -> None:
    stripped = text.strip()
    try:
        kept = title(text)
    except BadInput:
        assert (
            not stripped
            or STEERING.search(stripped)
            or len(stripped) > 200
            or any(c in stripped for c in "\u2028\u2029")
        )
        return
    assert kept == stripped and not STEERING.search(kept)


@SETTINGS
@given(st.lists(st.dictionaries(st.sampled_from(["id", "name", "title"]), HOSTILE), max_size=4))
def test_a_cli_table_of_hostile_rows_holds_no_control(rows: list[dict[str, Any]]) -> None:
    columns = [(name.upper(), lambda r, n=name: r.get(n)) for name in ("id", "name", "title")]
    printed: list[str] = []

    class Out:
        def write(self, text: str) -> None:
            printed.append(text)

    print_rows(rows, columns, False, Out())  # type: ignore[arg-type]
    shown = "".join(printed)
    assert steering(shown, kept="\n") == []
    assert shown.count("\n") == max(len(rows), 0) + 1


@SETTINGS
@given(HOSTILE, HOSTILE, HOSTILE)
def test_a_desktop_notification_holds_no_control(chat: str, todo_title: str, text: str) -> None:
    alert = {"chat": chat, "mac": "laptop", "todo": 3, "todo_title": todo_title, "text": text}
    assert steering(message_of(alert)) == []


@SETTINGS
@given(HOSTILE)
def test_a_transcript_line_written_by_a_chat_is_shown_without_controls(said: str) -> None:
    entry = {"type": "assistant", "message": {"role": "assistant", "content": said}}
    line = entry_line(0, json.dumps(entry))
    assert steering(line.kind + line.excerpt + (line.timestamp or "")) == []


# --- readers of what others wrote ---------------------------------------------------------

BYTES = st.binary(max_size=300) | HOSTILE.map(str.encode) | st.just(b"[" * 5000)


def written(content: bytes, name: str = "file") -> Path:
    folder = Path(tempfile.mkdtemp())
    path = folder / name
    path.write_bytes(content)
    return path


@SETTINGS
@given(BYTES)
def test_any_settings_file_is_a_value_or_an_error_and_the_prediction_never_raises(
    content: bytes,
) -> None:
    source = claude_settings.read_json_file(written(content, "settings.json"))
    assert source is not None and ("value" in source or "error" in source)
    verdict = inbound_policy({"user": source})
    assert verdict["verdict"] in ("accept", "hold", "refuse", "unknown")


@SETTINGS
@given(BYTES)
def test_any_rollout_first_line_is_its_meta_or_a_reason(content: bytes) -> None:
    payload, why = codex_records.session_meta(written(content, "rollout.jsonl"))
    assert (payload is None) != (why is None)


@SETTINGS
@given(BYTES)
def test_any_held_notice_line_is_a_notice_or_nothing(content: bytes) -> None:
    entry, _ = receipts.parse(content.decode("utf-8", "replace"))
    if entry is not None:
        receipts.held_notice(entry, 0)


@SETTINGS
@given(BYTES)
def test_any_fleet_toml_is_a_fleet_or_one_fleet_error(content: bytes) -> None:
    try:
        read_fleet_config(written(content, "fleet.toml"))
    except FleetError:
        pass  # its own refusal, one line: tests/ssh/test_fleet_config.py words them


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@SETTINGS
@given(st.sampled_from(sorted(shapes.SHAPES)), JSON_VALUES)
def test_any_answer_a_mac_gives_is_its_shape_or_malformed(op: str, answer: Any) -> None:
    try:
        assert shapes.check(op, answer) is answer
    except shapes.Malformed:
        pass


@pytest.mark.parametrize("op", sorted(shapes.SHAPES))
def test_an_answer_of_the_wrong_kind_is_malformed_naming_where(op: str) -> None:
    with pytest.raises(shapes.Malformed, match=op):
        shapes.check(op, [])
