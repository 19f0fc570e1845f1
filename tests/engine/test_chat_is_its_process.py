"""A chat is its process, not its conversation (coop_engine/identity.py and
Engine.record_process): its sessionId drifts on /clear and resume (seed 002), and the
enrollment stays one chat, managed, at the same generation, with its history."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from coop_engine.engine import Engine
from coop_engine.errors import Conflict
from coop_engine.identity import CHANGED, RESUMED, SEEN, conversations_since, match, settling
from coop_engine.models import Notification, Outbox, Session
from coop_engine.queries import session as session_row

from .support import CHAT, OTHER_CHAT, Steps, events_for, row

A = CHAT.split(":", 1)[1]
B = "7d0c4e2a-9b13-4f6e-8a25-3c1b0e9d8f47"
C = "2f9e8d7c-6b5a-4493-8281-706f5e4d3c2b"
PANE = "work:@3.%7"


def entry(session_id: str, pid: int = 4242, birth: str = "1111", **extra: Any) -> dict[str, Any]:
    return {"pid": pid, "sessionId": session_id, "procStart": birth, "status": "idle", **extra}


def enrolled(native_id: str = A, pid: int | None = 4242, birth: str | None = "1111", **more: Any):
    fields = {"native_id": native_id, "pid": pid, "birth": birth, "tmux": PANE, "name": None}
    return SimpleNamespace(**{"conversations": None, **fields, **more})


# --- the rule: which live entry is the chat ---------------------------------------------------


def test_the_same_process_in_another_conversation_is_the_same_chat_changed() -> None:
    found = match(enrolled(), [entry(C, pid=9), entry(B, tmux=PANE)])
    assert found is not None and found.how == CHANGED and found.process.native_id == B


def test_nothing_changed_is_no_change() -> None:
    found = match(enrolled(), [entry(A, tmux=PANE)])
    assert found is not None and found.how is None


def test_a_new_name_is_seen_and_is_no_change_of_chat() -> None:
    found = match(enrolled(), [entry(A, tmux=PANE, name="reviewer-7")])
    assert found is not None and found.how == SEEN and found.process.name == "reviewer-7"


def test_a_chat_first_read_is_seen_by_its_conversation() -> None:
    found = match(enrolled(pid=None, birth=None), [entry(A)])
    assert found is not None and found.how == SEEN and found.process.pid == 4242


def test_a_reused_pid_is_another_process() -> None:
    # Same pid, another start: not the chat; it is in another conversation, so no match.
    assert match(enrolled(), [entry(B, birth="2222", tmux=PANE)]) is None


def test_a_new_process_in_the_current_conversation_is_resumed() -> None:
    found = match(enrolled(), [entry(A, pid=5151, birth="3333")])
    assert found is not None and found.how == RESUMED


def test_a_new_process_in_the_pane_on_an_earlier_conversation_is_resumed() -> None:
    chat = enrolled(native_id=B, conversations=[{"id": A}])
    found = match(chat, [entry(A, pid=5151, birth="3333", tmux=PANE)])
    assert found is not None and found.how == RESUMED and found.process.native_id == A


def test_an_earlier_conversation_in_another_pane_is_not_the_chat() -> None:
    chat = enrolled(native_id=B, conversations=[{"id": A}])
    assert match(chat, [entry(A, pid=5151, birth="3333", tmux="other:@1.%1")]) is None


def test_an_entry_without_a_start_time_identifies_no_process() -> None:
    assert match(enrolled(pid=None, birth=None), [{"pid": 4242, "sessionId": A}]) is None


def test_a_chat_starting_in_the_pane_under_a_fresh_id_is_waited_for() -> None:
    # `claude --continue` names a fresh id, with no status, for 0.2 to 0.4 s.
    starting = {"pid": 5151, "sessionId": C, "procStart": "3333", "tmux": PANE}
    assert match(enrolled(), [starting]) is None
    assert settling(enrolled(), [starting])
    assert not settling(enrolled(), [{**starting, "status": "idle"}])
    assert not settling(enrolled(tmux=None), [{**starting, "tmux": None}])


def test_conversations_since_the_one_an_envelope_went_into() -> None:
    chat = enrolled(native_id=C, conversations=[{"id": A}, {"id": B}])
    assert conversations_since(chat, A) == [A, B, C]
    assert conversations_since(chat, B) == [B, C]
    assert conversations_since(chat, None) == [C]


# --- the command -------------------------------------------------------------------------------


def seen(native_id: str, pid: int = 4242) -> dict[str, Any]:
    return {"pid": pid, "birth": "1111", "tmux": PANE, "native_id": native_id}


def test_a_drift_keeps_one_managed_chat_at_its_generation_with_its_history(
    engine: Engine, steps: Steps
) -> None:
    invitation = steps.invitation()
    session_id = invitation["session"]
    engine.record_process(session_id, seen(A), SEEN)
    notices = Notification.select().count()
    engine.record_process(session_id, seen(B), CHANGED)
    session = Session.get_by_id(session_id)
    assert (session.native_id, session.mode, session.generation) == (B, "managed", 1)
    listed = session_row(session)
    assert listed["previous_ids"] == [A] and listed["pid"] == 4242
    assert Session.select().count() == 1
    said = [e.evidence.get("said") for e in events_for(f"session:{session_id}")]
    assert f"conversation changed from {A} to {B}" in said
    assert Notification.select().count() == notices  # the event, and no notice


def test_an_envelope_read_in_the_old_conversation_reads_the_new_one_from_its_start(
    engine: Engine, steps: Steps
) -> None:
    invitation = steps.invitation()
    sent = invitation["outbox"]
    cursor = {"host": "office", "native_session": A, "offset": 900, "inbound": None}
    engine.mark_uncertain(sent, cursor)
    result = engine.record_process(invitation["session"], seen(B), CHANGED)
    assert result["moved"] == [sent]
    moved = row(sent)
    assert (moved.observed_in, moved.observed_offset) == (B, 0)
    assert moved.cursor["native_session"] == A and moved.cursor["offset"] == 900  # evidence
    assert moved.state == "uncertain"


def test_an_envelope_of_another_chat_is_not_moved(engine: Engine, steps: Steps) -> None:
    mine, theirs = steps.invitation(), steps.invitation(chat=OTHER_CHAT)
    for invitation in (mine, theirs):
        engine.mark_uncertain(invitation["outbox"], {"host": "office", "native_session": A})
    engine.record_process(mine["session"], seen(B), CHANGED)
    assert Outbox.get_by_id(theirs["outbox"]).observed_in is None


def test_an_invitation_with_the_chats_entry_pins_its_process_at_once(
    engine: Engine, steps: Steps
) -> None:
    todo = steps.todo()
    invited = engine.invite(todo, CHAT, "office", entry=entry(A, tmux=PANE))
    session = Session.get_by_id(invited["session"])
    assert (session.pid, session.birth, session.tmux) == (4242, "1111", PANE)


def test_a_new_conversation_another_enrollment_has_is_refused_and_nothing_changes(
    engine: Engine, steps: Steps
) -> None:
    mine = steps.invitation()
    steps.invitation(chat=f"claude:{B}")
    with pytest.raises(Conflict):
        engine.record_process(mine["session"], seen(B), CHANGED)
    assert Session.get_by_id(mine["session"]).native_id == A
