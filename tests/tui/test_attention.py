"""What needs Dad reaches Dad: the header says whether deliveries move (the coordinator
running, stopped or absent, from the claim's heartbeat), counts the envelopes by state
and the unread notices; each event that needs a decision raises one toast, a routine
one none; the notices name their chat, Mac and todo, and `enter` opens the envelope."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import Staged, _cursor, _receipt, drive, flat, loaded, open_with, screen_text, until

from coop_engine.loop.claim import RUNNING, STOPPED, ledger_claim
from coop_engine.models import Obligation, database
from coop_engine.queries import latest_event
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

pytestmark = pytest.mark.tui

WAIT = 20.0


def header(app: Any) -> str:
    return flat(screen_text(app).splitlines()[0])


def toasts(app: Any) -> list[tuple[str, str]]:
    return [(notice.title, notice.message) for notice in app._notifications]


def watching(staged: Staged) -> Any:
    app = staged.app()
    app.CLAIM_CHECK_SECONDS = 0.2
    return app


def test_the_header_says_no_coordinator_and_counts_what_may_need_dad(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await until(pilot, lambda: "no coordinator" in header(app), WAIT, "the coordinator")
        line = header(app)
        assert "no coordinator (watch only)" in line
        assert "3 expired · 1 held · 2 pending" in line
        assert "4 unread notices (!)" in line

    drive(watching(staged), script)


def test_the_header_follows_the_heartbeat_from_running_to_stopped(staged: Staged) -> None:
    claim = ledger_claim(database.obj)  # another coordinator's claim, in this process
    claim.take("office", "serve")
    claim.beat(time.time())
    named = f"coop serve (pid {os.getpid()})"

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        running = f"coordinator running: {named}, last pass"
        await until(pilot, lambda: running in header(app), WAIT, running)
        assert app.coordinator_state == RUNNING and " s ago" in header(app)
        claim.release()
        stopped = f"coordinator stopped: {named}, last seen"
        await until(pilot, lambda: stopped in header(app), WAIT, stopped)
        assert app.coordinator_state == STOPPED
        assert "s ago: deliveries are not moving" in header(app)
        assert running not in header(app)

    try:
        drive(watching(staged), script)
    finally:
        claim.release()


def test_an_expiry_raises_one_toast_with_its_reason_in_words_and_moves_the_counts(
    staged: Staged,
) -> None:
    held = staged.outbox["reviewer_again"]
    todo = staged.todos["reviewer"]

    def expire() -> None:
        staged.engine(actor="coop").expire(
            held,
            {"reason": "held-for-approval-then-expired", "message_id": held, "observed_at": 0},
        )

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert toasts(app) == []  # what was already in the ledger raises nothing
        await asyncio.to_thread(expire)
        await until(pilot, lambda: toasts(app), WAIT, "the expiry's toast")
        [(title, message)] = toasts(app)
        assert title == "Delivery expired"
        # Named as the panes name it: its name beside its short id.
        short = staged.chats["reviewer"].session_id[:8]
        assert message.startswith(f"chat reviewer ({short}) on office todo #{todo} ")
        assert "the receiver held it for approval and the dialog expired" in message
        await until(pilot, lambda: "4 expired · 2 pending" in header(app), WAIT, "the counts")
        assert "held" not in header(app)
        assert "5 unread notices (!)" in header(app)

    drive(watching(staged), script)


def test_routine_events_raise_no_toast_and_a_hold_seen_raises_one(staged: Staged) -> None:
    builder = staged.chats["builder"]
    work = staged.outbox["builder_work"]

    def send() -> None:
        coop = staged.engine(actor="coop")
        at = staged.clock.advance(1)
        cursor = _cursor(builder, "accept", "permission-mode-parity", at, 4502)
        attempt = coop.mark_uncertain(work, cursor)
        coop.record_transport(
            work, attempt["attempt"], {"ok": True, "written": True, "stage": "done", "bytes": 3}
        )
        # A CLI take is routine too.
        staged.engine().take_cli(staged.todos["open"], f"claude:{uuid.uuid4()}", "office")

    def hold() -> None:
        evidence = {"offset": 9000, "preview": "Coop sends you work", "cause": "parity"}
        staged.engine(actor="coop").record_held(work, evidence)

    def receive() -> None:
        _receipt(staged.engine(actor="coop"), staged.clock, builder, work, "user")

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        rows = app.outbox_pane.rows_by_key
        await asyncio.to_thread(send)
        await until(pilot, lambda: rows[work]["state"] == "uncertain", WAIT, "sent")
        await until(pilot, lambda: "1 pending" in header(app), WAIT, "the counts after the take")
        assert toasts(app) == []  # a send and a take need no decision
        await asyncio.to_thread(hold)
        await until(pilot, lambda: toasts(app), WAIT, "the hold's toast")
        [(title, message)] = toasts(app)
        assert title == "Delivery held"
        short = staged.chats["builder"].session_id[:8]
        assert message.startswith(f"chat builder ({short}) on office todo #")
        assert "answer its dialog" in message
        await asyncio.to_thread(receive)
        await until(pilot, lambda: rows[work]["facts"]["received"], WAIT, "received")
        assert len(toasts(app)) == 1  # a receipt is routine

    drive(watching(staged), script)


def test_a_conflict_a_refused_adoption_and_overdue_obligations_each_raise_one_toast(
    staged: Staged,
) -> None:
    docs_work = staged.outbox["docs_work"]
    taker = staged.chats["taker"]

    def decisions() -> None:
        coop = staged.engine(actor="coop")
        coop.record_conflict(docs_work, {"reason": "wrong-provenance", "offset": 77})
        from coop_engine.models import Session

        session = Session.get(Session.native_id == taker.session_id)
        search = {"searched": [{"host": "laptop", "matches": 2}], "found": None}
        coop.record_adoption_search(
            session.id, {**search, "result": "refused: two chats match"}, refused=True
        )
        # One obligation falls due; the others stay ahead.
        first = Obligation.select().where(Obligation.state == "open").order_by(Obligation.id)
        later = staged.clock.now + 30 * 86400
        Obligation.update(due_at=later).where(Obligation.id != first.get().id).execute()
        staged.clock.advance(4 * 3600)
        coop.sweep_obligations()

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await asyncio.to_thread(decisions)
        wanted = ["Delivery conflict", "Adoption refused", "Obligation overdue"]
        await until(pilot, lambda: len(toasts(app)) >= len(wanted), WAIT, "the toasts")
        newest = await asyncio.to_thread(latest_event)
        await until(pilot, lambda: app.last_event == newest, WAIT, "every event read")
        assert [title for title, _ in toasts(app)] == wanted
        conflict = toasts(app)[0][1]
        short = staged.chats["docs"].session_id[:8]
        assert conflict.startswith(f"chat docs ({short}) on laptop todo #{staged.todos['docs']} ")
        assert "wrong-provenance" in conflict
        assert "adoption refused: two chats match" in toasts(app)[1][1]
        assert toasts(app)[2][1].startswith("chat ")
        assert "no outcome reported yet" in toasts(app)[2][1]

    drive(watching(staged), script)


def test_notices_name_their_chat_mac_and_todo_and_enter_opens_the_envelope(
    staged: Staged,
) -> None:
    locked = staged.outbox["locked"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await until(pilot, lambda: "4 unread notices" in header(app), WAIT, "the badge")
        await open_with(pilot, "exclamation_mark", NotificationsScreen, WAIT)
        table = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: table.row_count > 0, WAIT, "the notices")
        rows = table.rows_by_key
        key = next(k for k, row in rows.items() if row.get("outbox") == locked)
        assert (rows[key]["chat"], rows[key]["mac"]) == ("locked", "office")
        assert rows[key]["todo"] == staged.todos["locked"]
        line = next(line for line in screen_text(app).splitlines() if locked in line)
        assert "locked" in line.split(locked)[0] and f"#{staged.todos['locked']}" in line
        table.move_cursor(row=table.get_row_index(key))
        await open_with(pilot, "enter", DeliveryScreen, WAIT)
        assert app.screen.outbox_id == locked
        await pilot.press("escape")
        await pilot.press("escape")
        await until(pilot, lambda: len(app.screen_stack) == 1, WAIT, "the panes")
        assert "unread" not in header(app)  # opening the notices read them

    drive(watching(staged), script)
