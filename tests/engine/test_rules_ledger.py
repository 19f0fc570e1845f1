"""DESIGN.md sections 3 and 4, the ledger itself: idempotent commands, the event history,
and a SQLite file that is private, durable and safe to open twice."""

from __future__ import annotations

import stat
from collections.abc import Callable
from typing import Any

import pytest

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import Conflict, KeyReused
from coop_engine.models import Dispatch, Event, Obligation, Outbox, Session, Todo

from .support import (
    CHAT,
    HOST,
    OTHER_CHAT,
    SENT,
    Steps,
    counts,
    cursor,
    peer_entry,
    verdict,
)

# --- idempotency ----------------------------------------------------------------------

# Each case: build what the command acts on, then the command itself with a fixed key.
Case = tuple[Callable[[Steps], Any], Callable[[Engine, Any], dict[str, Any]]]
REPLAYS: dict[str, Case] = {
    "add_todo": (lambda s: None, lambda e, _: e.add_todo("Fix it", key="todo:1")),
    "invite": (lambda s: s.todo(), lambda e, todo: e.invite(todo, CHAT, HOST, key="invite:1")),
    "mark_uncertain": (
        lambda s: s.invitation()["outbox"],
        lambda e, outbox: e.mark_uncertain(outbox, cursor(), key="send:1"),
    ),
    "record_transport": (
        lambda s: s.engine.mark_uncertain(s.invitation()["outbox"], cursor())["outbox"],
        lambda e, outbox: e.record_transport(outbox, 1, SENT),
    ),
    "record_receipt": (
        lambda s: s.engine.mark_uncertain(s.invitation()["outbox"], cursor())["outbox"],
        lambda e, outbox: e.record_receipt(outbox, peer_entry(outbox)),
    ),
    "expire": (
        lambda s: s.engine.mark_uncertain(s.invitation()["outbox"], cursor())["outbox"],
        lambda e, outbox: e.expire(outbox, verdict(outbox)),
    ),
    "resend": (
        lambda s: _expired(s),
        lambda e, outbox: e.resend(outbox, by="dad", key="resend:press-1"),
    ),
    "accept": (
        lambda s: s.delivered_invitation(),
        lambda e, inv: e.accept(inv["outbox"], inv["nonce"], {"final": "ok"}),
    ),
    "take_cli": (lambda s: s.todo(), lambda e, todo: e.take_cli(todo, CHAT, HOST, key="take:1")),
    "adopt_take": (
        lambda s: s.cli_taker()["session"],
        lambda e, session: e.adopt_take(session, {"host": HOST}),
    ),
    "report_outcome": (
        lambda s: s.accepted()["todo"],
        lambda e, todo: e.report_outcome(todo, "done", by="dad", key="report:1"),
    ),
}


def _expired(steps: Steps) -> str:
    outbox_id = steps.invitation()["outbox"]
    steps.expire(outbox_id)
    return outbox_id


@pytest.mark.parametrize("name", REPLAYS)
def test_a_replayed_command_key_returns_the_first_result_and_writes_nothing(steps, name):
    build, command = REPLAYS[name]
    subject = build(steps)
    first = command(steps.engine, subject)
    before = counts()
    assert command(steps.engine, subject) == first
    assert counts() == before


def test_the_same_key_with_other_arguments_is_refused(engine):
    engine.add_todo("Fix the importer", key="todo:1")
    before = counts()
    with pytest.raises(KeyReused):
        engine.add_todo("Something else", key="todo:1")
    assert counts() == before


def test_a_key_is_bound_to_its_command_name(steps):
    steps.engine.add_todo("Fix the importer", key="shared:1")
    with pytest.raises(KeyReused):
        steps.engine.take_cli(1, None, HOST, key="shared:1")
    assert Todo.get_by_id(1).state == "open"


def test_a_refused_command_records_no_key_so_a_later_valid_one_runs(steps):
    invitation = steps.delivered_invitation()
    with pytest.raises(Conflict, match="nonce"):
        steps.engine.accept(invitation["outbox"], "wrong", {})
    assert steps.engine.accept(invitation["outbox"], invitation["nonce"], {})["accepted"]


# --- the event history ----------------------------------------------------------------


def _last_state(subject: str) -> str | None:
    moved = (
        Event.select()
        .where((Event.subject == subject) & Event.to_state.is_null(False))
        .order_by(Event.id.desc())
        .first()
    )
    return None if moved is None else moved.to_state


def test_every_transition_writes_an_event(steps, clock):
    """Each entity's history ends in the state the entity is in, after a day that takes
    every command through its transitions."""
    todo = steps.todo()
    declined = steps.delivered_invitation(todo, CHAT)
    steps.engine.decline(declined["outbox"], declined["nonce"], {})
    first = steps.invitation(todo, CHAT)
    rival = steps.invitation(todo, OTHER_CHAT)  # withdrawn when the todo is taken
    steps.expire(first["outbox"])
    again = steps.engine.resend(first["outbox"], by="dad")["outbox"]
    steps.deliver(again)
    steps.engine.accept(again, first["nonce"], {})
    steps.engine.report_outcome(todo, "done", by="worker")

    stale = steps.invitation()  # left behind by an older generation
    Session.update(generation=Session.generation + 1).where(
        Session.id == stale["session"]
    ).execute()
    steps.engine.cancel_stale()
    refused = steps.invitation(chat=OTHER_CHAT)
    steps.send(refused["outbox"], {"ok": False, "written": False, "error": "no live match"})

    taker = steps.cli_taker(chat="codex:thread-1")
    steps.engine.adopt_take(taker["session"], {"host": HOST})
    clock.advance(4 * 3600)
    steps.engine.sweep_obligations()

    assert rival["outbox"] != again
    histories = [
        *((f"outbox:{r.id}", r.state) for r in Outbox.select()),
        *((f"dispatch:{r.id}", r.state) for r in Dispatch.select()),
        *((f"todo:{r.id}", r.state) for r in Todo.select()),
        *((f"session:{r.id}", r.mode) for r in Session.select()),
        *((f"obligation:{r.id}", r.state) for r in Obligation.select() if r.state != "open"),
    ]
    # (subject, its state, the state its history ends in)
    silent = [(s, state, _last_state(s)) for s, state in histories if _last_state(s) != state]
    assert not silent, "\n".join(map(str, silent))


def test_an_event_says_who_decided(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.expire(outbox_id)
    steps.engine.resend(outbox_id, by="chief")
    resend = Event.get(Event.command == "resend", Event.subject == f"outbox:{outbox_id}")
    assert (resend.who, resend.from_state, resend.to_state) == ("chief", "expired", "expired")


# --- the SQLite file ------------------------------------------------------------------


@pytest.mark.sqlite_only
def test_ledger_file_is_private_0600_in_a_0700_home(ledger, coop_home):
    assert stat.S_IMODE(coop_home.stat().st_mode) == 0o700
    assert stat.S_IMODE((coop_home / "coop.db").stat().st_mode) == 0o600
    for side in ("coop.db-wal", "coop.db-shm"):
        path = coop_home / side
        if path.exists():
            assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0


@pytest.mark.sqlite_only
def test_ledger_runs_in_wal_mode(ledger):
    assert ledger.execute_sql("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.sqlite_only
def test_ledger_commits_with_synchronous_full(ledger):
    # 2 is FULL: the intent-before-I/O commit survives a power cut.
    assert ledger.execute_sql("PRAGMA synchronous").fetchone()[0] == 2


def test_opening_the_ledger_twice_keeps_schema_and_rows(ledger, coop_home, clock):
    Engine(ledger, clock=clock).add_todo("Survive a restart")
    ledger.close()
    again = open_ledger(coop_home)
    try:
        assert [t.title for t in Todo.select()] == ["Survive a restart"]
        assert Engine(again, clock=clock).add_todo("And another")["id"] == 2
    finally:
        again.close()
