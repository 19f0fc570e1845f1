"""``thread_list`` over real rollout files (Codex Desktop 0.104, ../shared/fixtures/real).

The files are copied at test time into a temporary ``CODEX_HOME`` laid out the way Codex
lays it out (``sessions/YYYY/MM/DD/`` and ``archived_sessions/``); they are never part
of the project.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from hosts.mac.codex import find_thread, thread_list


def install(home: Path, rollout: Path, archived: bool = False) -> Path:
    """Copy a fixture under its real file name (the ``codex_<repo>_`` prefix removed)."""
    name = rollout.name[rollout.name.index("rollout-") :]
    day = name[len("rollout-") : len("rollout-") + 10].replace("-", "/")
    folder = home / "archived_sessions" if archived else home / "sessions" / day
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(rollout, folder / name))


def test_real_rollouts_are_listed_with_their_session_meta(
    tmp_path: Path, fixture_rollouts: list[Path]
) -> None:
    home = tmp_path / "codex"
    placed = [install(home, path, archived=i == 0) for i, path in enumerate(fixture_rollouts)]

    listing = thread_list(home)

    assert listing["skipped"] == []
    assert len(listing["threads"]) == len(fixture_rollouts)
    threads = {thread["id"]: thread for thread in listing["threads"]}
    for path in placed:
        meta = json.loads(path.read_text().splitlines()[0])["payload"]
        thread = threads[meta["id"]]
        assert meta["id"] in path.name
        assert thread["rollout_path"] == str(path)
        assert (thread["originator"], thread["source"]) == ("Codex Desktop", "vscode")
        assert thread["cli_version"] == meta["cli_version"] == "0.104.0-alpha.1"
        assert thread["cwd"] == meta["cwd"]
        assert thread["archived"] is (path.parent.name == "archived_sessions")
        assert thread["sources"] == ["rollout"] and thread["notes"] == []
    archived_id = json.loads(placed[0].read_text().splitlines()[0])["payload"]["id"]
    assert find_thread(home, archived_id)["archived"] is True


def test_a_real_rollout_cut_mid_first_line_is_reported_not_raised(
    tmp_path: Path, fixture_rollouts: list[Path]
) -> None:
    home = tmp_path / "codex"
    path = install(home, fixture_rollouts[0])
    path.write_bytes(path.read_bytes()[:200])

    listing = thread_list(home)

    assert [t["rollout_path"] for t in listing["threads"]] == [str(path)]
    assert listing["skipped"] == [
        {"file": str(path), "reason": "line 1: incomplete (torn or still being written)"}
    ]
