"""``hosts.mac.codex.thread_list`` and ``find_thread`` over simulated Codex homes.

Homes are written by ``python -m hosts.sim codex``; damage (torn lines, bad ids,
unreadable files) is then made by hand, the way a crash or a sync tool would leave it.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hosts.mac.codex import find_thread, is_thread_id, thread_list
from hosts.mac.codex_home import default_codex_home

from .conftest import SimCodex

KEYS = {
    "id",
    "name",
    "cwd",
    "originator",
    "source",
    "cli_version",
    "rollout_path",
    "archived",
    "updated_at",
    "sources",
    "compressed",
    "duplicates",
    "notes",
}


def by_id(listing: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {thread["id"]: thread for thread in listing["threads"]}


def reasons(listing: dict[str, Any]) -> list[str]:
    return [entry["reason"] for entry in listing["skipped"]]


def test_named_and_unnamed_threads_are_listed_with_their_session_meta(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    named = sim_codex(home, "--name", "fix the importer", "--cwd", "/srv/app")
    plain = sim_codex(home, "--client", "exec", "--cwd", "/srv/other", "--turns", "3")

    listing = thread_list(home)

    assert listing["codex_home"] == str(home) and listing["skipped"] == []
    assert json.loads(json.dumps(listing)) == listing
    threads = by_id(listing)
    assert set(threads) == {named["thread_id"], plain["thread_id"]}
    assert all(set(t) == KEYS for t in threads.values())
    first = threads[named["thread_id"]]
    assert first["name"] == "fix the importer"
    assert (first["cwd"], first["originator"], first["source"]) == ("/srv/app", "codex-tui", "cli")
    assert first["cli_version"] == "0.171.0"
    assert first["rollout_path"] == named["rollout_path"]
    assert first["sources"] == ["index", "rollout", "state"]
    assert first["archived"] is False and first["compressed"] is False
    second = threads[plain["thread_id"]]
    assert second["name"] is None and second["sources"] == ["rollout", "state"]
    assert (second["originator"], second["source"]) == ("codex_exec", "exec")
    # Newest first: UUIDv7 ids sort by creation time.
    assert [t["id"] for t in listing["threads"]] == [plain["thread_id"], named["thread_id"]]


def test_the_last_index_line_for_an_id_wins(tmp_path: Path, sim_codex: SimCodex) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--name", "first name", "--now", "1790000000")
    sim_codex(home, "--thread-id", made["thread_id"], "--name", "second", "--now", "1790000100")

    thread = by_id(thread_list(home))[made["thread_id"]]

    assert len((home / "session_index.jsonl").read_text().splitlines()) == 2
    assert thread["name"] == "second"
    assert thread["updated_at"] == pytest.approx(1790000100, abs=0.01)


def test_an_archived_thread_is_listed_archived_and_not_adoptable(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    kept = sim_codex(home)
    gone = sim_codex(home, "--name", "old work")
    moved = sim_codex(home, "--archive", gone["thread_id"])

    threads = by_id(thread_list(home))

    assert Path(moved["rollout_path"]).parent == home / "archived_sessions"
    assert threads[gone["thread_id"]]["archived"] is True
    assert threads[gone["thread_id"]]["rollout_path"] == moved["rollout_path"]
    assert threads[gone["thread_id"]]["name"] == "old work"
    assert find_thread(home, gone["thread_id"])["archived"] is True
    assert find_thread(home, kept["thread_id"]) == {
        "matches": 1,
        "archived": False,
        "thread": threads[kept["thread_id"]],
    }


def test_a_compressed_rollout_is_listed_by_its_file_name_with_a_note(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--cwd", "/srv/app")
    packed = sim_codex(home, "--compress", made["thread_id"])

    thread = by_id(thread_list(home))[made["thread_id"]]

    assert thread["rollout_path"] == packed["rollout_path"] == made["rollout_path"] + ".zst"
    assert thread["compressed"] is True
    assert any("compressed" in note for note in thread["notes"])
    # The state row still names the .jsonl (as the real CLI leaves it) and fills in meta.
    assert thread["cwd"] == "/srv/app" and thread["sources"] == ["rollout", "state"]
    assert find_thread(home, made["thread_id"])["matches"] == 1


def test_a_compressed_rollout_without_a_state_row_has_only_its_id(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--no-state")
    sim_codex(home, "--compress", made["thread_id"])

    listing = thread_list(home)

    thread = by_id(listing)[made["thread_id"]]
    assert (thread["cwd"], thread["originator"], thread["source"]) == (None, None, None)
    assert thread["sources"] == ["rollout"] and listing["skipped"] == []


def test_the_wal_database_is_read_in_place_while_another_connection_writes(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home)
    state_only = "01a2294a-0000-7000-8000-00000000000a"
    writer = sqlite3.connect(home / "state_5.sqlite", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")  # keep the new row in the -wal file
        writer.execute(
            "INSERT INTO threads (id, rollout_path, created_at, updated_at, source,"
            " model_provider, cwd, title, sandbox_policy, approval_mode, originator)"
            " VALUES (?, '/gone.jsonl', 1, 1, 'cli', 'openai', '/w', 't', '{}', 'never', 'x')",
            (state_only,),
        )
        writer.execute("BEGIN IMMEDIATE")  # and hold the write lock while Coop reads
        writer.execute("UPDATE threads SET name = 'uncommitted' WHERE id = ?", (made["thread_id"],))
        main_before = (home / "state_5.sqlite").read_bytes()

        listing = thread_list(home)

        threads = by_id(listing)
        assert threads[state_only]["sources"] == ["state"]
        assert threads[state_only]["rollout_path"] == "/gone.jsonl"
        assert threads[made["thread_id"]]["name"] is None
        assert listing["skipped"] == []
        assert (home / "state_5.sqlite").read_bytes() == main_before
        # Why in place: the main file alone does not hold the committed row yet.
        copy = tmp_path / "copy.sqlite"
        shutil.copyfile(home / "state_5.sqlite", copy)
        alone = sqlite3.connect(copy)
        try:
            ids = {row[0] for row in alone.execute("SELECT id FROM threads")}
        finally:
            alone.close()
        assert state_only not in ids
        writer.execute("COMMIT")
    finally:
        writer.close()


def test_reading_does_not_wait_for_a_writer_that_keeps_writing(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home)
    stop = threading.Event()

    def keep_writing() -> None:
        conn = sqlite3.connect(home / "state_5.sqlite", isolation_level=None, timeout=5)
        try:
            n = 0
            while not stop.is_set():
                n += 1
                conn.execute(
                    "UPDATE threads SET tokens_used = ? WHERE id = ?", (n, made["thread_id"])
                )
        finally:
            conn.close()

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        results = [thread_list(home) for _ in range(20)]
    finally:
        stop.set()
        writer.join()
    assert all(r["skipped"] == [] and len(r["threads"]) == 1 for r in results)


def test_an_index_grown_without_end_is_read_only_at_its_end(
    tmp_path: Path, sim_codex: SimCodex, monkeypatch: pytest.MonkeyPatch
) -> None:
    """session_index.jsonl gains a line at every naming and is never cut: only its last
    MAX_INDEX_READ bytes are read, the line the window starts inside is not reported."""
    from hosts.mac import codex_records

    monkeypatch.setattr(codex_records, "MAX_INDEX_READ", 4096)
    home = tmp_path / "codex"
    late = sim_codex(home, "--name", "first")
    index_file = home / "session_index.jsonl"
    index_file.write_text("not json: skipped if it were read\n" + index_file.read_text())
    with index_file.open("a") as index:
        for number in range(100):  # about 10 KB of renamings
            index.write(json.dumps({"id": late["thread_id"], "thread_name": f"n{number}"}) + "\n")
        index.write(json.dumps({"id": late["thread_id"], "thread_name": "newest"}) + "\n")

    listing = thread_list(home)

    assert by_id(listing)[late["thread_id"]]["name"] == "newest"
    assert listing["skipped"] == []  # the first line, before the window, was never read


def test_torn_and_invalid_index_lines_are_skipped_with_a_reason(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--name", "kept")
    with (home / "session_index.jsonl").open("a") as index:
        index.write("not json at all\n")
        index.write(json.dumps(["a", "list"]) + "\n")
        index.write('{"id": "' + made["thread_id"] + '", "thread_name": "to')  # torn, no newline

    listing = thread_list(home)

    assert by_id(listing)[made["thread_id"]]["name"] == "kept"
    assert len(listing["skipped"]) == 3
    assert all(e["file"] == str(home / "session_index.jsonl") for e in listing["skipped"])
    assert any("line 2" in r and "not JSON" in r for r in reasons(listing))
    assert any("line 4" in r for r in reasons(listing))


def test_ids_that_are_not_lowercase_uuid7_are_skipped_everywhere(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    good = sim_codex(home)
    bad_ids = [
        "01A2294A-BBC2-7952-B6B4-3F3B8BF15401",  # uppercase
        "3f2b8c1e-4d5a-4b6c-8d7e-9f0a1b2c3d4e",  # UUIDv4
        "not-a-uuid",
    ]
    for bad in bad_ids:
        sim_codex(home, "--thread-id", bad)
    with (home / "session_index.jsonl").open("a") as index:
        index.write(json.dumps({"id": "nope", "thread_name": "x", "updated_at": 0}) + "\n")

    listing = thread_list(home)

    assert set(by_id(listing)) == {good["thread_id"]}
    skipped = reasons(listing)
    for bad in bad_ids:
        assert any(f"file name id {bad!r}" in r for r in skipped)
        assert any(f"threads row id {bad!r}" in r for r in skipped)
    assert any("id 'nope'" in r for r in skipped)
    assert not is_thread_id(bad_ids[0]) and is_thread_id(good["thread_id"])


def test_a_torn_first_line_keeps_the_thread_by_its_file_name(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--no-state")
    path = Path(made["rollout_path"])
    path.write_bytes(path.read_bytes()[:40])  # Codex killed while writing session_meta

    listing = thread_list(home)

    thread = by_id(listing)[made["thread_id"]]
    assert thread["cwd"] is None and thread["sources"] == ["rollout"]
    assert listing["skipped"] == [
        {"file": str(path), "reason": "line 1: incomplete (torn or still being written)"}
    ]


def test_unreadable_files_and_databases_are_skipped_not_raised(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--no-state")
    dangling = Path(made["rollout_path"]).with_name(
        "rollout-2026-01-01T00-00-00-01a2294a-0000-7000-8000-0000000000ff.jsonl"
    )
    dangling.symlink_to(tmp_path / "nowhere")
    (home / "state_5.sqlite").write_bytes(b"this is not a database" * 100)
    (home / "sessions" / "notes.jsonl").write_text("{}\n")

    listing = thread_list(home)

    assert set(by_id(listing)) == {made["thread_id"], "01a2294a-0000-7000-8000-0000000000ff"}
    skipped = {e.get("file") or e.get("source"): e["reason"] for e in listing["skipped"]}
    assert skipped[str(dangling)].startswith("line 1: cannot read")
    assert skipped["state_5.sqlite"].startswith("cannot read the threads table")
    assert "not a rollout" in skipped[str(home / "sessions" / "notes.jsonl")]


@pytest.mark.parametrize(
    ("tz", "now", "folder", "stamp"),
    [
        # 2026-02-28 23:59:59 in UTC-5 is already March 1st in UTC.
        ("<-05>+5", "1772341199", "2026/02/28", "2026-02-28T23-59-59"),
        ("<-05>+5", "1772341201", "2026/03/01", "2026-03-01T00-00-01"),
        # 2026-11-29 12:30 UTC is 2026-11-30 02:30 at UTC+14.
        ("<+14>-14", "1795955400", "2026/11/30", "2026-11-30T02-30-00"),
    ],
)
def test_rollouts_go_in_local_date_folders(
    tmp_path: Path, sim_codex: SimCodex, tz: str, now: str, folder: str, stamp: str
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--now", now, env={"TZ": tz})

    path = Path(made["rollout_path"])
    thread = by_id(thread_list(home))[made["thread_id"]]

    assert path.parent == home / "sessions" / folder
    assert path.name == f"rollout-{stamp}-{made['thread_id']}.jsonl"
    assert thread["rollout_path"] == str(path)
    meta = json.loads(path.read_text().splitlines()[0])
    utc = datetime.fromtimestamp(int(now), UTC)
    assert meta["timestamp"].startswith(utc.strftime("%Y-%m-%dT%H:%M:%S"))


def test_state_only_and_index_only_threads(tmp_path: Path, sim_codex: SimCodex) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home, "--name", "both")
    Path(made["rollout_path"]).unlink()  # a row whose rollout is gone
    orphan = "01a2294a-0000-7000-8000-0000000000aa"
    with (home / "session_index.jsonl").open("a") as index:
        index.write(json.dumps({"id": orphan, "thread_name": "ghost", "updated_at": 5}) + "\n")

    threads = by_id(thread_list(home))

    assert threads[made["thread_id"]]["sources"] == ["index", "state"]
    assert threads[made["thread_id"]]["rollout_path"] == made["rollout_path"]
    assert threads[orphan]["sources"] == ["index"] and threads[orphan]["notes"]
    assert find_thread(home, made["thread_id"])["matches"] == 1
    assert find_thread(home, orphan)["matches"] == 0


def test_duplicate_rollouts_are_matches_but_a_compression_twin_is_not(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    copied = sim_codex(home)
    twin = sim_codex(home)
    source = Path(copied["rollout_path"])
    (home / "archived_sessions").mkdir()
    shutil.copy(source, home / "archived_sessions" / source.name)  # a sync tool's copy
    plain = Path(twin["rollout_path"])
    shutil.copy(plain, plain.with_name(plain.name + ".zst"))  # compression in progress

    found = find_thread(home, copied["thread_id"])
    pair = find_thread(home, twin["thread_id"])

    assert found["matches"] == 2 and found["archived"] is False
    assert found["thread"]["duplicates"] == [str(home / "archived_sessions" / source.name)]
    assert pair["matches"] == 1 and pair["thread"]["rollout_path"] == str(plain)


def test_the_rollout_folder_wins_when_the_state_row_disagrees(
    tmp_path: Path, sim_codex: SimCodex
) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home)
    conn = sqlite3.connect(home / "state_5.sqlite")
    with conn:
        conn.execute("UPDATE threads SET archived = 1 WHERE id = ?", (made["thread_id"],))
    conn.close()

    thread = by_id(thread_list(home))[made["thread_id"]]

    assert thread["archived"] is False
    assert any("archived=True" in note for note in thread["notes"])


def test_only_the_newest_state_database_is_read(tmp_path: Path, sim_codex: SimCodex) -> None:
    home = tmp_path / "codex"
    made = sim_codex(home)
    stale = sqlite3.connect(home / "state_4.sqlite")
    with stale:
        stale.execute("CREATE TABLE threads (id TEXT PRIMARY KEY, name TEXT)")
        stale.execute("INSERT INTO threads VALUES ('01a2294a-0000-7000-8000-0000000000bb', 'x')")
    stale.close()

    assert set(by_id(thread_list(home))) == {made["thread_id"]}


def test_index_times_in_rfc3339_with_nanoseconds_and_offsets(tmp_path: Path) -> None:
    home = tmp_path / "codex"
    home.mkdir()
    lines = [
        {
            "id": "01a2294a-0000-7000-8000-000000000001",
            "updated_at": "2026-11-29T21:45:41.318275788Z",
        },
        {"id": "01a2294a-0000-7000-8000-000000000002", "updated_at": "2026-11-29T23:45:41+02:00"},
        {"id": "01a2294a-0000-7000-8000-000000000003", "updated_at": "yesterday"},
    ]
    (home / "session_index.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))

    threads = by_id(thread_list(home))

    expected = datetime(2026, 11, 29, 21, 45, 41, tzinfo=UTC).timestamp()
    assert threads[lines[0]["id"]]["updated_at"] == pytest.approx(expected + 0.318, abs=0.001)
    assert threads[lines[1]["id"]]["updated_at"] == pytest.approx(expected)
    assert threads[lines[2]["id"]]["updated_at"] is None
    assert all(t["name"] is None for t in threads.values())


def test_a_missing_home_is_an_empty_list(tmp_path: Path) -> None:
    listing = thread_list(tmp_path / "absent")
    assert listing == {"codex_home": str(tmp_path / "absent"), "threads": [], "skipped": []}
    assert find_thread(tmp_path / "absent", "01a2294a-0000-7000-8000-000000000001")["matches"] == 0
    assert find_thread(tmp_path, "not-an-id") == {"matches": 0, "archived": False, "thread": None}


def test_default_codex_home_follows_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "elsewhere"))
    assert default_codex_home() == tmp_path / "elsewhere"
    monkeypatch.delenv("CODEX_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert default_codex_home() == tmp_path / ".codex"
