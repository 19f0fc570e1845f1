"""DESIGN.md section 12: the `coop` CLI contract, through the real program in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from .support import CHAT, Steps

REPO = Path(__file__).resolve().parents[2]

LISTINGS = {
    "todo list": ("todo", "list", "--json"),
    "outbox": ("outbox", "--json"),
    "sessions": ("sessions", "--json"),
    "events": ("events", "--json", "--limit", "5"),
    "notifications": ("notifications", "--json"),
    "obligations": ("obligations", "--json"),
}
SESSION_FIELDS = {
    "id",
    "vendor",
    "host",
    "native_id",
    "mode",
    "surface",
    "status",
    "generation",
    "name",
}


def one_json_array(stdout: str) -> list:
    """The whole of stdout is exactly one JSON array of objects."""
    rows = json.loads(stdout)
    assert isinstance(rows, list)
    assert all(isinstance(r, dict) for r in rows)
    return rows


def assert_refused(done) -> None:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def expired(steps: Steps) -> str:
    """An invitation the receiver's policy proved lost: Send again may follow."""
    outbox_id = steps.invitation(chat=CHAT)["outbox"]
    steps.expire(outbox_id)
    return outbox_id


def test_todo_add_json_prints_the_new_id_sequential_from_1(run_coop):
    for expected in (1, 2, 3):
        done = run_coop("todo", "add", f"Todo {expected}", "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == {"id": expected}


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_listing_prints_one_json_array(steps, expired, run_coop, listing):
    steps.accepted()
    done = run_coop(*LISTINGS[listing])
    assert done.returncode == 0, done.stderr
    assert one_json_array(done.stdout)


@pytest.mark.parametrize("listing", LISTINGS)
def test_a_listing_of_an_empty_ledger_is_an_empty_array(run_coop, listing):
    done = run_coop(*LISTINGS[listing])
    assert done.returncode == 0, done.stderr
    assert one_json_array(done.stdout) == []


def test_todo_list_json_shows_each_todo(run_coop):
    run_coop("todo", "add", "Fix the importer")
    rows = one_json_array(run_coop("todo", "list", "--json").stdout)
    assert [(r["id"], r["title"], r["state"]) for r in rows] == [(1, "Fix the importer", "open")]


def test_sessions_json_carries_the_contract_fields(steps, run_coop):
    steps.cli_taker(chat=CHAT, host="laptop")
    rows = one_json_array(run_coop("sessions", "--json").stdout)
    assert len(rows) == 1 and SESSION_FIELDS <= set(rows[0])
    assert (rows[0]["mode"], rows[0]["surface"], rows[0]["status"]) == (
        "observed",
        "compatibility",
        "unknown",
    )


def test_events_limit_caps_the_history(steps, run_coop):
    steps.accepted()
    rows = one_json_array(run_coop("events", "--json", "--limit", "3").stdout)
    assert len(rows) == 3


def test_resend_prints_the_new_id(expired, run_coop):
    done = run_coop("resend", expired, "--by", "dad")
    assert done.returncode == 0, done.stderr
    new_id = done.stdout.strip()
    outbox = {r["id"]: r for r in one_json_array(run_coop("outbox", "--json").stdout)}
    assert outbox[new_id]["resent_from"] == expired
    assert outbox[expired]["resent_as"] == new_id


@pytest.mark.parametrize(
    "argv",
    [
        ("resend", "00000000-0000-4000-8000-000000000000", "--by", "dad"),
        ("todo", "report", "1", "--outcome", "done", "--by", "dad"),
        ("todo", "add", "   "),
    ],
    ids=["unknown-envelope", "no-accepted-work", "empty-title"],
)
def test_a_refusal_exits_1_with_one_line_on_stderr_and_no_traceback(run_coop, argv):
    run_coop("todo", "add", "Fix the importer")
    assert_refused(run_coop(*argv))


def test_send_again_of_a_pending_row_is_refused_in_one_line(steps, run_coop):
    pending = steps.invitation()["outbox"]
    done = run_coop("resend", pending, "--by", "dad")
    assert_refused(done)
    assert "expired" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("todo",),
        ("todo", "add"),
        ("no-such-command",),
        ("resend", "some-id"),
        ("resend", "some-id", "--by", "worker"),
        ("events", "--limit", "0"),
        ("todo", "report", "one", "--outcome", "x", "--by", "dad"),
    ],
)
def test_a_usage_error_exits_2(run_coop, argv):
    done = run_coop(*argv)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr


def test_home_flag_is_the_same_as_coop_home(run_coop, coop_home):
    assert run_coop("todo", "add", "Through --home").returncode == 0
    done = run_coop("todo", "list", "--json", home=None, env={"COOP_HOME": str(coop_home)})
    assert [r["title"] for r in one_json_array(done.stdout)] == ["Through --home"]
    done = run_coop(
        "todo", "add", "Through COOP_HOME", "--json", home=None, env={"COOP_HOME": str(coop_home)}
    )
    assert json.loads(done.stdout) == {"id": 2}


@pytest.mark.parametrize("argv", [(), ("tui",)])
def test_coop_without_a_terminal_prints_the_usage_exits_2_and_creates_nothing(
    tmp_path, coop_home, argv
):
    home = tmp_path / "user"
    home.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", *argv],
        capture_output=True,
        input="",  # stdin and stdout are pipes, not a terminal
        text=True,
        cwd=REPO,
        env={**os.environ, "HOME": str(home)},
        timeout=30,
    )
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "\x1b" not in done.stdout + done.stderr
    assert "needs a terminal" in done.stderr
    if not argv:
        assert done.stderr.startswith("usage: coop")
    assert list(home.iterdir()) == []
    assert not coop_home.exists()
