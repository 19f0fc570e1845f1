"""The simulated queue door against the real Codex CLI 0.171.0, offline.

queue_driver.py walks the same steps on both: the real binary (inside ``unshare -n``,
about 12 s) and the simulator (``hosts/sim/bin/codex`` and ``codex-holder``). Each test
compares one thing: the queue's schema, the answers' shapes, the errors' codes and
words, ``codex queue``, the lines of a queue-triggered turn, the writer lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from . import real_codex
from .conftest import REPO

pytestmark = pytest.mark.real_claude  # the marker for tests that run real vendor binaries

QUEUE_DRIVER = Path(__file__).with_name("queue_driver.py")
SIM_CODEX = REPO / "hosts" / "sim" / "bin" / "codex"
DRIVER_TIMEOUT = 150.0

Run = dict[str, Any]


@pytest.fixture(scope="session")
def real(codex_binary: Path, tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("queue-real")
    return real_codex.run_driver(codex_binary, root, driver=QUEUE_DRIVER, timeout=DRIVER_TIMEOUT)


@pytest.fixture(scope="session")
def sim(tmp_path_factory: pytest.TempPathFactory) -> Run:
    root = tmp_path_factory.mktemp("queue-sim")
    result = root / "result.json"
    argv = [sys.executable, str(QUEUE_DRIVER), "--sim", "--codex", str(SIM_CODEX)]
    argv += ["--root", str(root), "--repo", str(REPO), "--result", str(result)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=DRIVER_TIMEOUT)
    assert done.returncode == 0, done.stderr[-4000:]
    value: Run = json.loads(result.read_text())
    return value


def shape(value: Any) -> Any:
    """Keys kept, values replaced by their JSON type: what two runs must share."""
    if isinstance(value, dict):
        return {key: shape(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return type(value).__name__


def kinds(lines: list[dict[str, Any]]) -> list[tuple[str, str | None]]:
    typed = ("event_msg", "response_item")
    return [(e["type"], e["payload"].get("type") if e["type"] in typed else None) for e in lines]


def user_items(lines: list[dict[str, Any]]) -> list[tuple[str, list[str], list[str]]]:
    """(client id, payload keys, item keys) of each ``UserMessage`` item_completed line."""
    payloads = [e["payload"] for e in lines if e["payload"].get("item", {}).get("type")]
    return [
        (p["item"]["client_id"], sorted(p), sorted(p["item"]))
        for p in payloads
        if p["item"]["type"] == "UserMessage"
    ]


def completions(lines: list[dict[str, Any]]) -> list[list[str]]:
    """The payload keys of each ``task_complete`` line."""
    return [sorted(e["payload"]) for e in lines if e["payload"].get("type") == "task_complete"]


def row_fields(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(r["id"], r["thread_id"], r["payload_json"], r["queue_order"]) for r in rows]


def test_the_queue_database_has_the_real_schema(real: Run, sim: Run) -> None:
    assert sim["schema"] == real["schema"]
    assert real["schema"]["journal_mode"] == "wal"


def test_queue_answers_and_rows_have_the_real_shapes(real: Run, sim: Run) -> None:
    for key in ("add", "list", "delete", "invitation"):
        assert shape(sim[key]) == shape(real[key]), key
    assert sim["add"] == real["add"] and sim["list"] == real["list"]
    assert (
        sim["delete"]
        == real["delete"]
        == [{"result": {"deleted": True}}, {"result": {"deleted": False}}]
    )
    assert row_fields(sim["row"]) == row_fields(real["row"])
    assert sim["duplicate_rows"] == real["duplicate_rows"] == [0, 1]
    assert set(sim["init"]) == set(real["init"])


def test_refusals_have_the_real_codes_and_words(real: Run, sim: Run) -> None:
    assert sim["errors"] == real["errors"]
    for key in ("no_capability", "resume_held", "turn_start_held"):
        assert sim[key] == real[key], key


def test_codex_queue_prints_refuses_and_picks_client_ids_as_the_real_cli(
    real: Run, sim: Run
) -> None:
    for key in ("cli", "cli_row", "cli_archived", "cli_unknown", "cli_no_message"):
        assert sim[key] == real[key], key
    assert real["cli_row"] == {
        "client_is_uuid": True,
        "client_is_row_id": False,
        "printed_row_id": True,
    }


def test_a_queue_turn_writes_the_real_lines_in_the_real_order(real: Run, sim: Run) -> None:
    assert kinds(sim["turns"]) == kinds(real["turns"])
    for ours, theirs in zip(sim["turns"], real["turns"], strict=True):
        assert shape(ours) == shape(theirs), kinds([theirs])
    assert user_items(sim["turns"]) == user_items(real["turns"])
    assert completions(sim["turns"]) == completions(real["turns"])
    assert sim["turns"][8]["payload"]["last_agent_message"].endswith("COOP_ACCEPT n0nce42")
    assert sim["rows_after"] == real["rows_after"] == []


def test_a_hung_turn_and_its_clean_stop_write_the_real_lines(real: Run, sim: Run) -> None:
    # model_server.py never answers a COOP-STALL prompt: a missing hung turn is a broken
    # driver, not something this machine cannot run.
    assert "hung_turn" in real, "the real driver recorded no hung turn"
    assert kinds(sim["hung_turn"]) == kinds(real["hung_turn"])
    assert kinds(sim["after_stop"]) == kinds(real["after_stop"])
    for ours, theirs in zip(sim["after_stop"], real["after_stop"], strict=True):
        assert shape(ours) == shape(theirs), kinds([theirs])


def test_the_writer_lock_is_held_and_let_go_as_the_real_one(real: Run, sim: Run) -> None:
    for key in ("locks_before", "locks_held", "locks_after"):
        assert sim[key] == real[key], key
    assert real["locks_held"]["flock_held"] == ["<A>.lock"]
