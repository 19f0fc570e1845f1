"""``python -m hosts.sim codex``: what it writes has the shapes the real Codex CLI writes."""

from __future__ import annotations

import json
import shutil
import sqlite3
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hosts.mac.codex import is_thread_id

from .conftest import REPO, SimCodex

# The real Codex CLI 0.171.0's `threads` columns, in order (seen in its state_5.sqlite).
REAL_COLUMNS = (
    "id rollout_path created_at updated_at source model_provider cwd title sandbox_policy"
    " approval_mode tokens_used has_user_event archived archived_at git_sha git_branch"
    " git_origin_url cli_version first_user_message agent_nickname agent_role memory_mode"
    " model reasoning_effort agent_path created_at_ms updated_at_ms thread_source preview"
    " recency_at recency_at_ms history_mode name is_pinned thread_section_id section_position"
    " section_entered_at_ms project_id originator daybreak_enabled creator_user_id"
    " creator_account_id attached_thread_parent_id"
).split()
# Line kinds one `codex exec` turn of 0.171.0 wrote, (type, payload.type).
REAL_KINDS = {
    ("session_meta", None),
    ("event_msg", "task_started"),
    ("response_item", "message"),
    ("world_state", None),
    ("turn_context", None),
    ("event_msg", "thread_settings_applied"),
    ("event_msg", "item_completed"),
    ("token_usage_record", None),
    ("event_msg", "token_count"),
    ("event_msg", "task_complete"),
}
REAL_META_KEYS = {
    "account_scoped",
    "base_instructions",
    "cli_version",
    "context_window",
    "cwd",
    "history_mode",
    "id",
    "model_provider",
    "originator",
    "runtime_workspace_roots",
    "session_id",
    "source",
    "thread_source",
    "timestamp",
}


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def kind(entry: dict[str, Any]) -> tuple[str, str | None]:
    payload = entry.get("payload") or {}
    return entry["type"], payload.get("type") if entry["type"] in (
        "event_msg",
        "response_item",
    ) else None


def extra(entry: dict[str, Any]) -> list[str]:
    """Top-level keys after ``payload``: response items carry their ``metadata``."""
    return ["metadata"] if entry["type"] == "response_item" else []


def test_the_simulator_prints_one_line_describing_what_it_wrote(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    report = sim_codex(tmp_path / "codex", "--name", "n", "--turns", "2")

    assert set(report) == {
        "action",
        "codex_home",
        "thread_id",
        "rollout_path",
        "archived",
        "name",
        "turns",
        "state_db",
        "index_line",
    }
    assert report["action"] == "created" and is_thread_id(report["thread_id"])
    assert (report["name"], report["turns"], report["index_line"]) == ("n", 2, True)
    assert report["state_db"] == str(tmp_path / "codex" / "state_5.sqlite")
    assert Path(report["rollout_path"]).is_file()


def test_rollout_lines_have_the_real_kinds_keys_and_ordinals(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    made = sim_codex(tmp_path / "codex", "--turns", "2", "--cwd", "/srv/app")
    sim_codex(tmp_path / "codex", "--thread-id", made["thread_id"], "--turns", "1")

    entries = lines(Path(made["rollout_path"]))

    assert all(list(e) == ["timestamp", "ordinal", "type", "payload", *extra(e)] for e in entries)
    assert [e["ordinal"] for e in entries] == list(range(len(entries)))
    assert {kind(e) for e in entries} == REAL_KINDS
    meta = entries[0]
    assert meta["type"] == "session_meta" and set(meta["payload"]) == REAL_META_KEYS
    assert meta["payload"]["id"] == made["thread_id"] and meta["payload"]["cwd"] == "/srv/app"
    items = [e["metadata"]["history_sequence"] for e in entries if e["type"] == "response_item"]
    assert items == list(range(1, len(items) + 1))
    completes = [e for e in entries if kind(e) == ("event_msg", "task_complete")]
    assert len(completes) == 3 and entries[-1] == completes[-1]
    # The opening context lines come once, on the first turn only.
    assert sum(1 for e in entries if e["type"] == "world_state") == 1


def test_rollout_lines_share_the_kinds_of_the_real_fixture_rollouts(
    tmp_path: Path, sim_codex: SimCodex, fixture_rollouts: list[Path]
) -> None:
    made = sim_codex(tmp_path / "codex")
    ours = lines(Path(made["rollout_path"]))
    theirs = [entry for path in fixture_rollouts for entry in lines(path)]

    assert ours[0]["type"] == "session_meta" and all(
        lines(path)[0]["type"] == "session_meta" for path in fixture_rollouts
    )
    shared = {"session_meta", "response_item", "event_msg", "turn_context"}
    assert shared <= {e["type"] for e in ours} and shared <= {e["type"] for e in theirs}
    fixture_meta = set(theirs[0]["payload"]) - {"git", "instructions"}
    assert fixture_meta <= set(ours[0]["payload"])


def test_a_compressed_rollout_is_a_zstd_frame_of_the_same_bytes(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    made = sim_codex(tmp_path / "codex", "--turns", "40")  # more than one 128 KiB block
    original = Path(made["rollout_path"]).read_bytes()
    mtime = Path(made["rollout_path"]).stat().st_mtime_ns
    packed = Path(sim_codex(tmp_path / "codex", "--compress", made["thread_id"])["rollout_path"])

    data = packed.read_bytes()
    assert not Path(made["rollout_path"]).exists() and packed.stat().st_mtime_ns == mtime
    assert struct.unpack("<I", data[:4])[0] == 0xFD2FB528
    assert struct.unpack("<Q", data[5:13])[0] == len(original) > 128 * 1024
    if shutil.which("zstd"):
        done = subprocess.run(["zstd", "-dc", str(packed)], capture_output=True, check=True)
        assert done.stdout == original


def test_the_state_database_is_wal_with_the_real_columns(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--client", "desktop", "--name", "desk")
    archived = sim_codex(home, "--archive", made["thread_id"], "--now", "1795989000")

    conn = sqlite3.connect(f"file:{home / 'state_5.sqlite'}?mode=ro", uri=True)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        columns = [row[1] for row in conn.execute("PRAGMA table_info(threads)")]
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM threads").fetchone())
    finally:
        conn.close()
    assert columns == REAL_COLUMNS
    assert (row["originator"], row["source"], row["name"]) == ("Codex Desktop", "vscode", "desk")
    assert (row["archived"], row["archived_at"]) == (1, 1795989000)
    assert row["rollout_path"] == archived["rollout_path"]


def test_index_lines_are_compact_with_nanosecond_utc_times(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--name", "named", "--now", "1795988741.318275")

    line = (home / "session_index.jsonl").read_text()

    assert line == (
        '{"id":"' + made["thread_id"] + '","thread_name":"named",'
        '"updated_at":"2026-11-29T21:45:41.318275000Z"}\n'
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--archive", "01a2294a-0000-7000-8000-000000000001", "--name", "x"],
        ["--archive", "01a2294a-0000-7000-8000-000000000001"],  # no such thread
        ["--thread-id", "../escape"],
        ["--turns", "-1"],
    ],
)
def test_usage_errors_exit_2_and_write_nothing(tmp_path: Path, args: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(tmp_path / "c"), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("hosts.sim codex: error:")
    assert not list((tmp_path / "c").glob("**/*.jsonl"))
