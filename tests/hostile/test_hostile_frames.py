"""Hostile frames and ids: shell metacharacters, newlines and 64 KiB bodies in todos,
and in every id the CLI takes. A body reaches the chat as exactly one line carrying
exactly the text; an id that names nothing is one clear line on stderr; no shell ever
sees any of it.

Also proved in tests/ssh/test_ssh_connect.py: session ids and names full of shell
metacharacters reach a remote Mac unchanged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hostilekit import env_for, no_frames, shown_cleanly
from waiting import wait_until

from hosts.sim.launch import SimFleet

CANARY = Path("/tmp/coop-hostile-canary")
SHELL = f"$(touch {CANARY}); `touch {CANARY}` | rm -rf / ; echo 'x' \"y\" > /dev/null & \\ *"
# A title is one line without controls, a body at most 64 KiB (coop_engine/frame_text.py,
# tested in tests/engine/test_frame_text.py); within that, anything reaches the chat.
TITLE = f"Fix it {SHELL} ✓ \U0001f600 ناصر"
BODY = ("A long body.\t" + SHELL + "\n") * (64_000 // (len(SHELL) + 14))


def outbox(run_coop: Any, env: dict[str, str]) -> list[dict[str, Any]]:
    listed = run_coop("outbox", "--json", env=env)
    shown_cleanly(listed, (0,))
    rows: list[dict[str, Any]] = json.loads(listed.stdout)
    return rows


def test_metacharacters_newlines_and_a_64_kib_body_reach_the_chat_as_one_exact_line(
    sims: SimFleet, run_coop: Any
) -> None:
    CANARY.unlink(missing_ok=True)
    chat = sims.start("--think", "0.02")
    env = env_for(sims.config_dir)
    assert 60_000 < len(BODY) <= 64 * 1024
    shown_cleanly(run_coop("todo", "add", TITLE, "--body", BODY, env=env), (0,))
    shown_cleanly(run_coop("invite", "1", "--session", chat.ref, env=env), (0,))

    def both_delivered() -> bool:
        shown_cleanly(run_coop("tick", env=env), (0,))
        rows = outbox(run_coop, env)
        return len(rows) == 2 and all(row["state"] == "delivered" for row in rows)

    wait_until(both_delivered, "the invitation and the work delivered", interval=0.1)
    lines = chat.frame_log.read_bytes().splitlines()
    assert len(lines) == 2  # the invitation and the work, one line each
    texts = [json.loads(line)["message"]["content"] for line in lines]
    assert all(TITLE in text and BODY in text for text in texts)
    listed = json.loads(run_coop("todo", "list", "--json", env=env).stdout)
    assert listed[0]["title"] == TITLE.strip()
    shown_cleanly(run_coop("outbox", env=env), (0,))
    shown_cleanly(run_coop("events", env=env), (0,))
    assert not CANARY.exists()


@pytest.mark.parametrize(
    "argv",
    [
        ("invite", "1", "--session", f"claude:{SHELL}"),
        ("invite", "1", "--session", "claude:line\nbreak"),
        ("invite", "1", "--session", "claude:" + "a" * 100_000),
        ("invite", "1", "--session", "claude:../../../etc/passwd"),
        ("resend", SHELL, "--by", "dad"),
        ("resend", "x\ny", "--by", "dad"),
        ("chat", "show", SHELL),
        ("chat", "show", "a\nb"),
        ("chat", "show", "../../sessions/1"),
        ("invite", "1", "--session", "claude:x", "--host", SHELL),
    ],
    ids=lambda value: repr(value)[:30] if isinstance(value, str) else None,
)
def test_a_hostile_id_is_a_clear_refusal_or_waits_pending_and_runs_nothing(
    sims: SimFleet, run_coop: Any, argv: tuple[str, ...]
) -> None:
    CANARY.unlink(missing_ok=True)
    chat = sims.start()
    env = env_for(sims.config_dir)
    shown_cleanly(run_coop("todo", "add", "Fix the importer", env=env), (0,))
    shown_cleanly(run_coop(*argv, env=env))
    shown_cleanly(run_coop("tick", env=env), (0,))
    for row in outbox(run_coop, env):
        assert row["state"] == "pending" and row["last_error"]
    no_frames(chat)
    assert not CANARY.exists()
