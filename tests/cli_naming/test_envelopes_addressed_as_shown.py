"""`coop resend` and `coop withdraw` take an envelope as `coop outbox` shows it: its
short id or any start of at least four characters. A start several envelopes share is
refused (exit 2) in one line naming them by short id, kind, todo and chat; nothing is
recorded."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from clock import Clock

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import Ambiguous, NotFound
from hosts.sim.launch import SimFleet

from .namingkit import CLAUDE_A, CLAUDE_C, ledger_now, rows, table, usage_line

TWIN_IDS = (
    "abcd0001-0000-4000-8000-000000000001",
    "abcd0002-0000-4000-8000-000000000002",
    "abcd0002-9999-4000-8000-000000000003",
)


def expired(engine: Engine, outbox_id: str) -> None:
    """An envelope sent and proven lost (its receiver's policy refused it)."""
    cursor = {"host": "office", "native_session": "x", "offset": 0, "inbound": None}
    attempt = int(engine.mark_uncertain(outbox_id, cursor)["attempt"])
    engine.record_transport(outbox_id, attempt, {"ok": True, "written": True})
    evidence = {"reason": "refused-by-receiver-policy", "message_id": outbox_id}
    engine.expire(outbox_id, {**evidence, "sent_at": 0.0, "observed_at": 0.0})


@contextmanager
def minting(coop_home: Path, ids: Iterator[str]) -> Iterator[Engine]:
    """An engine on the test's ledger whose new ids are `ids`, in turn."""
    ledger = open_ledger(coop_home)
    try:
        yield Engine(ledger, clock=Clock(), new_id=lambda: next(ids))
    finally:
        ledger.close()


@pytest.fixture
def twins(coop_home: Path) -> Iterator[Engine]:
    """Three invitations whose ids share their first four characters (two share eight)."""
    with minting(coop_home, iter(TWIN_IDS)) as engine:
        for todo, (chat, name) in enumerate(
            [(CLAUDE_A, "reviewer-7"), (CLAUDE_C, "importer"), (CLAUDE_C, "importer")], start=1
        ):
            engine.add_todo(f"Todo {todo}")
            engine.invite(todo, f"claude:{chat}", "office", name=name)
        yield engine


def test_every_short_id_coop_outbox_prints_is_accepted_back(
    run_coop: Any, fleet: SimFleet, env: dict[str, str], engine: Engine
) -> None:
    fleet.start("--session-id", CLAUDE_A, "--name", "reviewer-7")
    fleet.start("--session-id", CLAUDE_C, "--name", "importer")
    for todo, chat in enumerate(("reviewer-7", "importer", "reviewer-7"), start=1):
        run_coop("todo", "add", f"Todo {todo}", env=env)
        assert run_coop("invite", str(todo), "--session", chat, env=env).returncode == 0
    first, second, third = table(run_coop("outbox", env=env))
    assert (first["SESSION"], first["SESSION_NAME"]) == ("claude:abcd1111", "reviewer-7")
    assert (second["SESSION"], second["SESSION_NAME"]) == ("claude:5b7cf1d2", "importer")
    # The chat's short id names it again for another invitation.
    run_coop("todo", "add", "Todo 4", env=env)
    again = run_coop("invite", "4", "--session", second["SESSION"], env=env)
    assert again.returncode == 0, again.stderr
    # The envelope's short id names it to resend and to withdraw.
    by_short = {row["short_id"]: row for row in rows(run_coop("outbox", "--json", env=env))}
    expired(engine, by_short[first["ID"]]["id"])
    resent = run_coop("resend", first["ID"], "--by", "dad", env=env)
    assert resent.returncode == 0, resent.stderr
    assert resent.stderr.splitlines()[-1] == (
        "coop: sent again to reviewer-7 (claude:abcd1111) on office"
    )
    listed = {row["ID"]: row for row in table(run_coop("outbox", env=env))}
    new_short = listed[first["ID"]]["RESENT_AS"]
    assert resent.stdout.strip().startswith(new_short)
    for short in (new_short, third["ID"]):
        withdrawn = run_coop("withdraw", short, "--by", "dad", env=env)
        assert withdrawn.returncode == 0, withdrawn.stderr
        assert withdrawn.stdout.strip().startswith(short)


def test_a_start_several_envelopes_share_is_refused_naming_them_and_records_nothing(
    run_coop: Any, twins: Engine, coop_home: Path
) -> None:
    before = ledger_now(coop_home)
    for command in ("resend", "withdraw"):
        line = usage_line(run_coop(command, "abcd", "--by", "dad"))
        assert line == (
            "coop: 'abcd' names 3 envelopes: abcd0001 (invitation, todo #1, reviewer-7), "
            "abcd0002-0 (invitation, todo #2, importer), abcd0002-9 (invitation, todo #3, "
            "importer); give more of the id"
        )
        line = usage_line(run_coop(command, "ABCD0002", "--by", "dad"))
        assert "names 2 envelopes: abcd0002-0 " in line
    assert ledger_now(coop_home) == before
    done = run_coop("withdraw", "abcd0002-9", "--by", "dad")
    assert (done.returncode, done.stdout.strip()) == (0, f"{TWIN_IDS[2]} withdrawn")


def test_the_read_model_lists_a_few_candidates_and_counts_the_rest(coop_home: Path) -> None:
    ids = (f"beef{n:04x}-0000-4000-8000-000000000000" for n in itertools.count())
    with minting(coop_home, ids) as engine:
        for todo in range(1, 8):
            engine.add_todo(f"Todo {todo}")
            engine.invite(todo, f"claude:{CLAUDE_A}", "office", name="reviewer-7")
        with pytest.raises(Ambiguous) as refused:
            queries.resolve_outbox_id("beef")
        line = str(refused.value)
        assert line.startswith("'beef' names 7 envelopes: beef0000 (invitation, todo #1, ")
        assert line.endswith(" and 2 more; give more of the id")
        assert queries.resolve_outbox_id("BEEF0003") == "beef0003-0000-4000-8000-000000000000"
        with pytest.raises(NotFound, match="^No outbox envelope dead$"):
            queries.resolve_outbox_id("dead")
