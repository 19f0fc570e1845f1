"""A process started with --read-only (`coop tui --read-only`, each app of `coop web
--read-only`) changes nothing: every engine command it runs is refused in the command
frame, in one line, before any transaction, and nothing is recorded, not even the
command's key."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from coop_engine import frame
from coop_engine.errors import READ_ONLY, ReadOnly
from coop_engine.models import Outbox

from .support import CHAT, HOST, Steps, counts


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> Callable[[], None]:
    """Start read-only from here on; the process's flag is put back after the test."""
    monkeypatch.setattr(frame, "_writes_refused", False)
    return frame.refuse_writes


def test_every_write_a_read_only_process_asks_for_is_refused_and_nothing_is_recorded(
    steps: Steps, read_only: Callable[[], None]
) -> None:
    engine = steps.engine
    pending = steps.invitation()["outbox"]
    lost = steps.delivered_invitation(todo=steps.todo("Lost one"))["outbox"]
    Outbox.update(state="expired").where(Outbox.id == lost).execute()
    taker = steps.cli_taker(todo=steps.todo("Taken in the CLI"))
    todo = steps.todo("Still open")
    read_only()
    assert frame.writes_refused()
    before = counts()
    writes: dict[str, Callable[[], Any]] = {
        "add": lambda: engine.add_todo("A new todo"),
        "invite": lambda: engine.invite(todo, CHAT, HOST),
        "Send again": lambda: engine.resend(lost, "dad"),
        "withdraw": lambda: engine.withdraw(pending, "dad"),
        "dismiss": lambda: engine.dismiss_adoption(int(taker["session"]), "dad"),
        "chief": lambda: engine.set_chief(CHAT, "dad", HOST),
        "outcome": lambda: engine.report_outcome(todo, "done", "dad"),
        "status": lambda: engine.record_status(int(taker["session"]), "busy"),
        "bookmark": lambda: engine.advance_cursor(pending, 4096),
    }
    for what, write in writes.items():
        with pytest.raises(ReadOnly) as refused:
            write()
        assert str(refused.value) == READ_ONLY == "read-only: started with --read-only", what
    assert counts() == before
    assert Outbox.get_by_id(pending).state == "pending"
    assert Outbox.get_by_id(lost).resent_as is None


def test_a_process_not_started_read_only_writes(
    steps: Steps, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(frame, "_writes_refused", False)
    assert not frame.writes_refused()
    assert steps.engine.add_todo("Written")["id"] >= 1
