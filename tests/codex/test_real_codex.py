"""Coop's thread list against the real Codex CLI 0.171.0, offline (OBSERVED.md).

One driver run (real_driver.py, about 5 s) creates threads A, B, C, D with ``codex exec``,
names A twice (app-server ``thread/name/set``), archives B (``codex archive``), has Codex
compress C's rollout and writes D under a time zone whose date is not UTC's. Each test
checks one thing against what Codex itself reports: its app-server ``thread/list`` and
its ``state_5.sqlite``.
"""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hosts.mac.codex import find_thread, is_thread_id, thread_list

from . import real_codex
from .test_codex_sim import REAL_COLUMNS, REAL_KINDS, REAL_META_KEYS, extra, kind, lines

pytestmark = pytest.mark.real_claude  # the marker for tests that run real vendor binaries

Listing = dict[str, Any]


@pytest.fixture(scope="module")
def run(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The driver's observations, plus Coop's list read after every Codex process ended."""
    root = tmp_path_factory.mktemp("real-codex")
    result = real_codex.run_driver(codex_binary, root)
    result["coop"] = thread_list(result["codex_home"])
    return result


def by_id(threads: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {thread["id"]: thread for thread in threads}


def state_rows(home: str) -> dict[str, dict[str, Any]]:
    conn = sqlite3.connect(f"file:{home}/state_5.sqlite?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        return {row["id"]: dict(row) for row in conn.execute("SELECT * FROM threads")}
    finally:
        conn.close()


def test_codex_exec_first_line_carries_a_uuid7_thread_id(run: dict[str, Any]) -> None:
    for key, done in run["runs"].items():
        assert done["returncode"] == 0, (key, done["stderr"])
        assert done["first"]["type"] == "thread.started"
        assert is_thread_id(done["first"]["thread_id"])
        assert done["types"][-1] == "turn.completed"
    assert run["model_requests"] >= 4  # every turn really asked the loopback model


def test_thread_list_matches_codex_own_thread_list(run: dict[str, Any]) -> None:
    ours = by_id(run["coop"]["threads"])
    active, archived = by_id(run["codex_active"]), by_id(run["codex_archived"])

    assert run["coop"]["skipped"] == []
    assert set(active) == {t for t, v in ours.items() if not v["archived"]}
    assert set(archived) == {t for t, v in ours.items() if v["archived"]}
    assert set(ours) == set(run["ids"].values())
    for thread_id, theirs in {**active, **archived}.items():
        mine = ours[thread_id]
        assert mine["name"] == theirs["name"]
        assert mine["cwd"] == theirs["cwd"] == run["project"]
        assert (mine["originator"], mine["source"]) == (theirs["originator"], theirs["source"])
        assert mine["cli_version"] == theirs["cliVersion"] == "0.171.0"
        # Codex reports a compressed rollout under its old .jsonl name.
        assert mine["rollout_path"] in (theirs["path"], theirs["path"] + ".zst")


def test_thread_list_matches_codex_state_database(run: dict[str, Any]) -> None:
    ours = by_id(run["coop"]["threads"])
    rows = state_rows(run["codex_home"])

    assert set(rows) == set(ours)
    for thread_id, row in rows.items():
        assert ours[thread_id]["archived"] is bool(row["archived"])
        assert ours[thread_id]["name"] == row["name"]
        assert ours[thread_id]["rollout_path"] in (
            row["rollout_path"],
            row["rollout_path"] + ".zst",
        )
        assert "state" in ours[thread_id]["sources"] and "rollout" in ours[thread_id]["sources"]


def test_thread_list_reads_the_wal_database_while_codex_holds_it_open(
    run: dict[str, Any],
) -> None:
    assert run["wal_while_open"] is True
    while_open = run["coop_while_open"]
    assert while_open["skipped"] == []
    assert by_id(while_open["threads"]).keys() == by_id(run["coop"]["threads"]).keys()
    assert all("state" in t["sources"] for t in while_open["threads"])


def test_a_named_thread_takes_the_last_index_line(run: dict[str, Any]) -> None:
    named = run["ids"]["A"]
    index = [json.loads(x) for x in Path(run["codex_home"], "session_index.jsonl").open()]

    assert [(x["id"], x["thread_name"]) for x in index] == [
        (named, "first name"),
        (named, "coop-named"),
    ]
    assert by_id(run["coop"]["threads"])[named]["sources"] == ["index", "rollout", "state"]
    assert by_id(run["coop"]["threads"])[named]["name"] == "coop-named"


def test_an_archived_thread_is_found_archived(run: dict[str, Any]) -> None:
    gone = run["ids"]["B"]
    assert run["archive"] == {"returncode": 0, "stdout": f"Archived session {gone}."}

    found = find_thread(run["codex_home"], gone)

    assert Path(found["thread"]["rollout_path"]).parent.name == "archived_sessions"
    assert (found["matches"], found["archived"]) == (1, True)
    assert run["find_while_open"]["B"]["archived"] is True
    for key in "ACD":
        assert run["find_while_open"][key]["matches"] == 1
        assert run["find_while_open"][key]["archived"] is False


def test_a_rollout_compressed_by_codex_is_listed_by_its_file_name(run: dict[str, Any]) -> None:
    packed = run["ids"]["C"]
    thread = by_id(run["coop"]["threads"])[packed]

    assert run["compressed_path"].endswith(".jsonl.zst")
    assert thread["rollout_path"] == run["compressed_path"] and thread["compressed"] is True
    assert Path(run["compressed_path"]).read_bytes()[:4] == b"\x28\xb5\x2f\xfd"
    assert state_rows(run["codex_home"])[packed]["rollout_path"] + ".zst" == thread["rollout_path"]
    assert thread["cwd"] == run["project"]  # from the state row: the file is not read


def test_a_rollout_goes_in_the_folder_of_its_local_date(run: dict[str, Any]) -> None:
    path = Path(by_id(run["coop"]["threads"])[run["ids"]["D"]]["rollout_path"])
    meta = lines(path)[0]["payload"]

    utc = datetime.strptime(meta["timestamp"][:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    local = utc + timedelta(hours=run["tz_offset_hours"])
    assert local.date() != utc.date()
    assert path.parent.relative_to(Path(run["codex_home"], "sessions")) == Path(
        local.strftime("%Y/%m/%d")
    )
    assert path.name.startswith(local.strftime("rollout-%Y-%m-%dT%H-%M-"))


def test_the_simulator_writes_what_the_real_cli_writes(
    run: dict[str, Any], tmp_path: Path, sim_codex: Any
) -> None:
    real = lines(Path(by_id(run["coop"]["threads"])[run["ids"]["A"]]["rollout_path"]))
    made = sim_codex(tmp_path / "codex", "--client", "exec")
    simulated = lines(Path(made["rollout_path"]))

    assert {kind(e) for e in real} == REAL_KINDS == {kind(e) for e in simulated}
    assert set(real[0]["payload"]) == REAL_META_KEYS
    assert all(list(e) == ["timestamp", "ordinal", "type", "payload", *extra(e)] for e in real)
    assert all(list(e) == ["timestamp", "ordinal", "type", "payload", *extra(e)] for e in simulated)
    real_keys: dict[tuple[str, str | None], set[str]] = {}
    for entry in real:
        real_keys.setdefault(kind(entry), set()).update(entry["payload"])
    for entry in simulated:
        assert set(entry["payload"]) <= real_keys[kind(entry)], kind(entry)
    conn = sqlite3.connect(f"file:{run['codex_home']}/state_5.sqlite?mode=ro", uri=True)
    try:
        assert [row[1] for row in conn.execute("PRAGMA table_info(threads)")] == REAL_COLUMNS
    finally:
        conn.close()
