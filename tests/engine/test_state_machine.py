"""Hypothesis drives the Engine through random delivery histories; the ledger's
invariants hold after every step, and every command's answer matches its rule.

Each operation has two rules: one aimed at an envelope in the state the operation
wants (so histories get deep: sent, expired, sent again, accepted), and one at any
envelope at all (so refusals are exercised). Both go through the same oracle.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import HealthCheck, event, settings
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    invariant,
    multiple,
    precondition,
    rule,
    run_state_machine_as_test,
)

from coop_engine.db import is_sqlite, open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import CoopError, KeyReused
from coop_engine.models import TABLES, Binding, HostQueue, Outbox, Todo

from .support import CHAT, HOST, OTHER_CHAT, START, FakeClock, counts, cursor, peer_entry, verdict

Result = dict[str, Any]
REASONS = (
    "refused-by-receiver-policy",
    "held-for-approval-then-expired",
    "receiver-idle-without-entry",
)
TRANSPORT: dict[str, dict[str, Any]] = {
    "ok": {"ok": True, "written": True},
    "refused": {"ok": False, "written": False, "error": "Native receiver changed before send"},
    "failed": {"ok": False, "written": True, "error": "Broken pipe"},
}
DECIDERS = st.sampled_from(["dad", "chief", "dad", "chief", "worker"])


def ids(state: str, kind: str | None = None) -> list[str]:
    """Envelope ids in creation order: Hypothesis draws by position, so the order must
    not depend on random ids (the machine's engine mints them in sequence)."""
    query = Outbox.select(Outbox.id).where(Outbox.state == state)
    if kind:
        query = query.where(Outbox.kind == kind)
    return [row.id for row in query.order_by(Outbox.id)]


def sequential_ids() -> Callable[[], str]:
    """UUID-shaped envelope ids that sort in the order they were made."""
    made = iter(range(1, 1 << 62))
    return lambda: str(uuid.UUID(int=next(made)))


def just_attempted() -> list[str]:
    """Uncertain envelopes whose latest attempt awaits the host's answer."""
    intent = Outbox.select(Outbox.id).join(HostQueue).where(HostQueue.state == "intent")
    waiting = {row.id for row in intent}
    return [envelope for envelope in ids("uncertain") if envelope in waiting]


class LedgerMachine(RuleBasedStateMachine):
    todos = Bundle("todos")
    envelopes = Bundle("envelopes")
    # None: a SQLite file per history; otherwise a PostgreSQL database, emptied per history.
    database_url: str | None = None

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="coop-sm-"))
        self.db = open_ledger(self.dir / "home", url=self.database_url)
        if is_sqlite(self.db):
            # Durability is test_kill's subject; here fsyncs would only slow the search.
            self.db.execute_sql("PRAGMA synchronous = OFF")
        else:
            for model in TABLES:
                model.truncate_table(restart_identity=True, cascade=True)
        self.clock = FakeClock(START)
        self.engine = Engine(self.db, clock=self.clock, new_id=sequential_ids())
        self.delivered: set[str] = set()
        self.first: dict[str, tuple[Any, Result]] = {}  # derived key -> (args, result)
        self.replays: list[tuple[Callable[[], Result], Result]] = []
        self.presses = 0

    def teardown(self) -> None:
        self.db.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def press(self, prefix: str) -> str:
        """A fresh key for a new decision (a new todo, an invitation, a send, a press)."""
        self.presses += 1
        return f"{prefix}:{self.presses}"

    # --- the oracle -------------------------------------------------------------------

    def run(self, name: str, call: Callable[[], Result], allowed: bool) -> Result | None:
        """Run a command its rule `allowed`, or see it refused with nothing written."""
        if allowed:
            result = call()
            self.replays.append((call, result))
            event(f"{name}: done")
            return result
        before = counts()
        try:
            call()
        except CoopError:
            assert counts() == before, f"refused {name} wrote to the ledger"
            event(f"{name}: refused")
            return None
        raise AssertionError(f"{name} was allowed against its rule")

    def keyed(
        self, name: str, key: str, args: Any, call: Callable[[], Result], allowed: bool
    ) -> Result | None:
        """A command whose key the engine derives (`receipt:<id>`, `expire:<id>`, ...):
        once it has succeeded, the same arguments replay it and other ones are refused."""
        if key not in self.first:
            result = self.run(name, call, allowed)
            if result is not None:
                self.first[key] = (args, result)
            return result
        first_args, first_result = self.first[key]
        if first_args == args:
            assert call() == first_result
            event(f"{name}: replayed")
            return None
        try:
            call()
        except KeyReused:
            return None
        raise AssertionError(f"{key} with other arguments was not refused")

    # --- operations -------------------------------------------------------------------

    def mark_uncertain(self, envelope: str) -> None:
        key = self.press(f"send:{envelope}")
        pending = Outbox.get_by_id(envelope).state == "pending"
        call = lambda: self.engine.mark_uncertain(envelope, cursor(), key=key)  # noqa: E731
        self.run("mark_uncertain", call, pending)

    def receipt(self, envelope: str) -> None:
        uncertain = Outbox.get_by_id(envelope).state == "uncertain"
        evidence = peer_entry(envelope)
        call = lambda: self.engine.record_receipt(envelope, evidence)  # noqa: E731
        if self.keyed("receipt", f"receipt:{envelope}", evidence, call, uncertain):
            self.delivered.add(envelope)

    def expire(self, envelope: str, reason: str) -> None:
        evidence = verdict(envelope, reason)
        call = lambda: self.engine.expire(envelope, evidence)  # noqa: E731
        if reason not in REASONS:
            self.run("expire without a reason", call, False)
            return
        uncertain = Outbox.get_by_id(envelope).state == "uncertain"
        self.keyed("expire", f"expire:{envelope}", evidence, call, uncertain)

    def resend(self, envelope: str, by: str) -> Any:
        key = self.press(f"resend:{envelope}")
        call = lambda: self.engine.resend(envelope, by=by, key=key)  # noqa: E731
        result = self.run(f"resend by {by}", call, self.resendable(envelope, by))
        return multiple() if result is None else result["outbox"]

    @staticmethod
    def resendable(envelope: str, by: str) -> bool:
        """Seed 001's `_resend`: expired, not yet sent again, by Dad or the chief, and an
        invitation still invited or work still bound."""
        row = Outbox.get_by_id(envelope)
        if by not in ("dad", "chief") or row.state != "expired" or row.resent_as:
            return False
        dispatch = row.dispatch
        assert dispatch is not None  # every envelope here is an invitation or work
        if row.kind == "invitation":
            return bool(dispatch.state == "invited")
        bound = Binding.select().where((Binding.dispatch == dispatch) & (Binding.state == "active"))
        return row.kind == "work" and bound.exists()

    def accept(self, envelope: str, right_nonce: bool) -> Any:
        row = Outbox.get_by_id(envelope)
        dispatch = row.dispatch
        assert dispatch is not None
        nonce = dispatch.nonce if right_nonce and dispatch.nonce else "wrong-nonce"
        late = dispatch.state == "cancelled" and dispatch.todo.state in ("taken", "done")
        allowed = (
            row.kind == "invitation"
            and row.state == "delivered"
            and right_nonce
            and (dispatch.state == "invited" or late)
        )
        answer = {"final": f"COOP_ACCEPT {nonce}"}
        call = lambda: self.engine.accept(envelope, nonce, answer)  # noqa: E731
        result = self.keyed("accept", f"accept:{envelope}", nonce, call, allowed)
        if result is None:
            return multiple()
        assert result["accepted"] is not late
        if not result["accepted"]:
            event("accept: too late")
            return multiple()
        return result["work"]

    # --- rules: todos and invitations -------------------------------------------------

    @rule(target=todos)
    def add_todo(self) -> int:
        key = self.press("todo")
        result = self.run("add_todo", lambda: self.engine.add_todo("Fix it", key=key), True)
        assert result is not None
        return int(result["id"])

    @rule(target=envelopes, todo=todos, chat=st.sampled_from([CHAT, OTHER_CHAT]))
    def invite(self, todo: int, chat: str) -> Any:
        key = self.press("invite")
        offerable = Todo.get_by_id(todo).state in ("open", "invited")
        call = lambda: self.engine.invite(todo, chat, HOST, key=key)  # noqa: E731
        result = self.run("invite", call, offerable)
        return multiple() if result is None else result["outbox"]

    # --- rules aimed at the right state -----------------------------------------------

    @precondition(lambda self: bool(ids("pending")))
    @rule(data=st.data(), outcome=st.sampled_from(["ok", "ok", "refused", "failed", "crash"]))
    def coordinator_sends_a_pending_envelope(self, data: st.DataObject, outcome: str) -> None:
        """Intent, then the host's answer; "crash" stops between the two."""
        envelope = data.draw(st.sampled_from(ids("pending")))
        self.mark_uncertain(envelope)
        if outcome != "crash":
            self.host_answers(envelope, outcome)

    @precondition(lambda self: bool(just_attempted()))
    @rule(data=st.data(), outcome=st.sampled_from(["ok", "refused", "failed"]))
    def host_answers_a_send_after_a_restart(self, data: st.DataObject, outcome: str) -> None:
        self.host_answers(data.draw(st.sampled_from(just_attempted())), outcome)

    def host_answers(self, envelope: str, outcome: str) -> None:
        attempt = HostQueue.get((HostQueue.outbox == envelope) & (HostQueue.state == "intent"))
        n, result = attempt.attempt, TRANSPORT[outcome]
        call = lambda: self.engine.record_transport(envelope, n, result)  # noqa: E731
        self.keyed(f"transport {outcome}", f"transport:{envelope}:{n}", result, call, True)

    @precondition(lambda self: bool(ids("uncertain")))
    @rule(data=st.data())
    def receiver_records_an_uncertain_envelope(self, data: st.DataObject) -> None:
        self.receipt(data.draw(st.sampled_from(ids("uncertain"))))

    @precondition(lambda self: bool(ids("uncertain")))
    @rule(data=st.data(), reason=st.sampled_from(REASONS))
    def verdict_proves_an_uncertain_envelope_lost(self, data: st.DataObject, reason: str) -> None:
        self.expire(data.draw(st.sampled_from(ids("uncertain"))), reason)

    @precondition(lambda self: bool(ids("expired")))
    @rule(target=envelopes, data=st.data(), by=DECIDERS)
    def send_an_expired_envelope_again(self, data: st.DataObject, by: str) -> Any:
        return self.resend(data.draw(st.sampled_from(ids("expired"))), by)

    @precondition(lambda self: bool(ids("delivered", "invitation")))
    @rule(target=envelopes, data=st.data(), right_nonce=st.booleans())
    def chat_accepts_a_delivered_invitation(self, data: st.DataObject, right_nonce: bool) -> Any:
        return self.accept(data.draw(st.sampled_from(ids("delivered", "invitation"))), right_nonce)

    # --- rules aimed at any envelope --------------------------------------------------

    @rule(envelope=envelopes)
    def send_any_envelope(self, envelope: str) -> None:
        self.mark_uncertain(envelope)

    @rule(envelope=envelopes)
    def receipt_for_any_envelope(self, envelope: str) -> None:
        self.receipt(envelope)

    @rule(envelope=envelopes, reason=st.sampled_from([*REASONS, "timeout"]))
    def expire_any_envelope(self, envelope: str, reason: str) -> None:
        self.expire(envelope, reason)

    @rule(target=envelopes, envelope=envelopes, by=DECIDERS)
    def send_any_envelope_again(self, envelope: str, by: str) -> Any:
        return self.resend(envelope, by)

    @rule(target=envelopes, envelope=envelopes, right_nonce=st.booleans())
    def accept_any_envelope(self, envelope: str, right_nonce: bool) -> Any:
        return self.accept(envelope, right_nonce)

    # --- replays and time -------------------------------------------------------------

    @precondition(lambda self: bool(self.replays))
    @rule(data=st.data())
    def replay_a_previous_command_key(self, data: st.DataObject) -> None:
        call, first = data.draw(st.sampled_from(self.replays))
        before = counts()
        assert call() == first
        assert counts() == before

    @rule(seconds=st.sampled_from([1.0, 60.0, 360.0, 7200.0]))
    def time_passes(self, seconds: float) -> None:
        self.clock.advance(seconds)

    # --- invariants -------------------------------------------------------------------

    @invariant()
    def at_most_one_resend_per_row(self) -> None:
        resent = [r.resent_from for r in Outbox.select().where(Outbox.resent_from.is_null(False))]
        assert len(resent) == len(set(resent))
        for row in Outbox.select().where(Outbox.resent_as.is_null(False)):
            assert Outbox.get_by_id(row.resent_as).resent_from == row.id

    @invariant()
    def only_expired_rows_are_resent(self) -> None:
        for row in Outbox.select().where(Outbox.resent_as.is_null(False)):
            assert row.state == "expired", (row.id, row.state)

    @invariant()
    def nothing_leaves_delivered(self) -> None:
        for envelope in self.delivered:
            assert Outbox.get_by_id(envelope).state == "delivered"

    @invariant()
    def every_uncertain_row_has_a_host_queue_row(self) -> None:
        for row in Outbox.select().where(Outbox.state == "uncertain"):
            attempts = HostQueue.select().where(HostQueue.outbox == row.id)
            assert attempts.where(HostQueue.state != "refused").exists(), row.id


SETTINGS = settings(
    max_examples=60,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


def test_ledger_state_machine(database_url: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(LedgerMachine, "database_url", database_url)
    run_state_machine_as_test(LedgerMachine, settings=SETTINGS)
