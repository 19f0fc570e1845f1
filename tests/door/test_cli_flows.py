"""The door's flows from the command line, as a user runs them, against simulated chats."""

from __future__ import annotations

import json
import time
from typing import Any

from waiting import wait_until

from hosts.sim.launch import SimFleet


def outbox(run_coop: Any, env: dict[str, str]) -> list[dict[str, Any]]:
    result = run_coop("outbox", "--json", env=env)
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, Any]] = json.loads(result.stdout)
    return rows


def tick_until(
    run_coop: Any, env: dict[str, str], check: Any, at: float | None = None
) -> list[dict[str, Any]]:
    """`coop tick` (at `at`, when given) until the outbox's rows satisfy `check`."""
    seen: list[list[dict[str, Any]]] = []

    def ticked() -> list[dict[str, Any]] | None:
        args = ["tick"] + (["--at", str(at)] if at is not None else [])
        result = run_coop(*args, env=env)
        assert result.returncode == 0, result.stderr
        seen[:] = [outbox(run_coop, env)]
        return seen[0] if check(seen[0]) else None

    rows: list[dict[str, Any]] = wait_until(
        ticked, "the outbox's rows", interval=0.2, detail=lambda: seen
    )
    return rows


def test_idle_chat_invited_accepts_and_receives_its_work(run_coop: Any, fleet: SimFleet) -> None:
    chat = fleet.start("--name", "importer-worker")
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    chats = json.loads(run_coop("chats", "--json", env=env).stdout)
    (listed,) = chats
    assert listed["session_id"] == chat.session_id
    assert (listed["status"], listed["socket"], listed["inbound"]) == ("idle", "ok", "accept")
    assert listed["inbound_source"] == "permission-mode-parity"
    assert run_coop("todo", "add", "Fix the flaky importer test", env=env).stdout.strip() == "1"
    invited = run_coop("invite", "1", "--session", chat.ref, "--json", env=env)
    assert invited.returncode == 0, invited.stderr
    rows = tick_until(
        run_coop, env, lambda rows: len(rows) == 2 and all(r["state"] == "delivered" for r in rows)
    )
    invitation, work = rows
    assert invitation["kind"] == "invitation" and work["kind"] == "work"
    assert all(invitation["facts"][f] for f in ("stored", "transport", "received", "accepted"))
    assert work["facts"]["received"] and work["facts"]["accepted"]


def test_bypass_chat_stays_uncertain_expires_on_time_and_is_sent_again_once(
    run_coop: Any, fleet: SimFleet
) -> None:
    chat = fleet.start("--dangerously-skip-permissions", "--dialog-expiry", "60s")
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    run_coop("todo", "add", "Refactor the importer", env=env)
    first = run_coop("invite", "1", "--session", chat.ref, env=env).stdout.strip()
    sent_at = time.time()
    run_coop("tick", "--at", str(sent_at), env=env)
    (row,) = outbox(run_coop, env)
    assert row["state"] == "uncertain" and row["inbound"]["verdict"] == "hold"
    run_coop("tick", "--at", str(sent_at + 60 + 59), env=env)
    assert outbox(run_coop, env)[0]["state"] == "uncertain"
    run_coop("tick", "--at", str(sent_at + 60 + 61), env=env)
    (row,) = outbox(run_coop, env)
    assert (row["state"], row["reason"]) == ("expired", "held-for-approval-then-expired")
    again = run_coop("resend", first, "--by", "dad", env=env)
    assert again.returncode == 0, again.stderr
    refused = run_coop("resend", first, "--by", "dad", env=env)
    assert refused.returncode == 1
    assert refused.stderr.strip() == "coop: This delivery was already sent again"
    run_coop("tick", "--at", str(sent_at + 200), env=env)
    rows = outbox(run_coop, env)
    assert [r["id"] for r in rows] == [first, again.stdout.strip()]
    assert rows[1]["state"] == "uncertain" and rows[0]["resent_as"] == rows[1]["id"]
    # Written is not yet read: the chat logs a frame when it reads it.
    wait_until(lambda: len(chat.frames()) >= 2, "the chat to read the second frame")
    assert len(chat.frames()) == 2


def test_invite_for_a_chat_no_mac_has_live_is_refused_and_creates_nothing(
    run_coop: Any, fleet: SimFleet
) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    run_coop("todo", "add", "Anything", env=env)
    ref = "claude:0badc0de-0000-4000-8000-000000000000"
    invited = run_coop("invite", "1", "--session", ref, env=env)
    assert invited.returncode == 1
    assert invited.stderr.strip() == f"coop: No Mac has a live chat {ref} (asked: office)"
    assert outbox(run_coop, env) == []
    assert json.loads(run_coop("todo", "list", "--json", env=env).stdout)[0]["state"] == "open"


def test_invite_of_an_unknown_todo_is_refused_with_exit_1(run_coop: Any, fleet: SimFleet) -> None:
    env = {"CLAUDE_CONFIG_DIR": str(fleet.config_dir)}
    ref = "claude:0badc0de-0000-4000-8000-000000000000"
    result = run_coop("invite", "9", "--session", ref, env=env)
    assert result.returncode == 1
    assert result.stderr.strip() == "coop: No todo #9"
    bad = run_coop("invite", "1", "--session", "slack:abc", env=env)  # malformed: usage
    assert bad.returncode == 2 and "claude:<session id>" in bad.stderr
