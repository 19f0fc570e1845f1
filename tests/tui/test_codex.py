"""Codex envelopes in the app: the outbox says where each stands in Codex's queue, the
delivery detail gives the facts in Codex's words, and Withdraw (`w`) is offered only
where it can work. Real processes throughout: the Codex simulator's threads, its
`codex app-server`, and holders that take queued items as Codex does."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from codexkit import WAIT, CodexMac
from textual.pilot import Pilot
from textual.widgets._footer import FooterKey
from tuikit import Staged, drive, loaded, open_with, screen_text, select_row, settle, shows, until

from coop_engine import queries
from coop_engine.loop import withdrawal
from coop_engine.loop.withdrawal import TAKEN
from coop_engine.models import Event, Outbox
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import ConfirmWithdraw

pytestmark = pytest.mark.tui

BOLD = "[bold red]x[/]"
LINK = "[link=https://example.com]y[/link]"

World = tuple[Staged, CodexMac]


def toasts(app: Any) -> list[str]:
    return [notice.message for notice in app._notifications]


def footer_keys(app: Any) -> set[str]:
    """The keys the footer of the screen on top shows now."""
    return {key.key for key in app.screen.query(FooterKey)}


def asked_by(outbox_id: str) -> list[str]:
    """Who asked Codex to withdraw the envelope, each ask in order (the ledger's events)."""
    asks = Event.select().where(
        (Event.subject == f"outbox:{outbox_id}") & (Event.command == "ask_withdrawal")
    )
    return [event.who for event in asks.order_by(Event.id)]


def outbox_line(app: Any, outbox_id: str) -> str:
    """The envelope's line in the outbox pane, as shown."""
    return next(line for line in screen_text(app).splitlines() if f"│ {outbox_id[:8]}" in line)


async def open_detail(pilot: Pilot[None], outbox_id: str) -> None:
    """The envelope's delivery detail, loaded, with its footer drawn."""
    app: Any = pilot.app
    await select_row(pilot, app.outbox_pane, outbox_id)
    await open_with(pilot, "enter", DeliveryScreen)
    await until(pilot, lambda: app.screen.detail is not None, what="the detail loaded")
    await until(pilot, lambda: "r" in footer_keys(app), what="the detail's footer")
    await settle(pilot)


def test_an_invitation_no_one_holds_is_queued_in_codex_and_w_withdraws_it_for_good(
    studio: World,
) -> None:
    staged, mac = studio
    thread = mac.thread()
    outbox_id = str(mac.invite(staged, thread, "Ship the Codex door")["outbox"])
    mac.tick_until(staged, outbox_id, lambda row: row["queued"] is True)
    queued_id = Outbox.get_by_id(outbox_id).transport["queued_id"]
    withdrawn = f"Withdrawn from Codex's queue: {outbox_id[:8]} expired (withdrawn-from-queue)"

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        line = outbox_line(app, outbox_id)
        assert f"codex:{thread[:8]}" in line and "uncertain" in line
        assert "queued in Codex" in line
        await open_detail(pilot, outbox_id)
        assert shows(app, f"added to Codex's queue (id {queued_id}, via app-server)")
        assert shows(app, "queued in Codex: waits until the thread is opened")
        assert shows(app, "queued (from codex queue): waits until the thread is opened")
        assert "w" in footer_keys(app)
        await open_with(pilot, "w", ConfirmWithdraw)
        assert shows(app, f"Withdraw {outbox_id[:8]}?")
        assert shows(app, "Last seen queued in Codex: waits until the thread is opened")
        await pilot.press("y")
        await until(pilot, lambda: withdrawn in toasts(app), timeout=WAIT, what="the toast")
        await until(pilot, lambda: shows(app, "Proof of loss"), what="the detail again")
        assert shows(app, "withdrawn from Codex's queue by dad: Codex confirmed it will never run")
        assert shows(app, f"Codex answered deleted: true for queued message {queued_id}")
        await until(pilot, lambda: "w" not in footer_keys(app), what="Withdraw gone")
        assert "r" in footer_keys(app)  # Send again may follow, once
        await pilot.press("escape")
        await until(pilot, lambda: "withdrawn-from-queue" in outbox_line(app, outbox_id))

    drive(staged.app(survey_interval=60.0), script)
    row = Outbox.get_by_id(outbox_id)
    assert (row.state, row.expiry["reason"], row.expiry["deleted"]) == (
        "expired",
        "withdrawn-from-queue",
        True,
    )
    assert asked_by(outbox_id) == ["dad"]
    assert mac.taken(thread, outbox_id)  # Codex's queue holds it no more


def test_a_delivered_codex_envelope_shows_its_receipt_and_answer_and_offers_no_withdraw(
    studio: World,
) -> None:
    staged, mac = studio
    thread = mac.thread()
    mac.holder(thread)
    invited = mac.invite(staged, thread, "Answer from an open thread")
    outbox_id = str(invited["outbox"])
    mac.tick_until(staged, outbox_id, lambda row: row["facts"]["accepted"])
    detail = queries.delivery_detail(outbox_id)
    receipt, acceptance = detail["receipt"], detail["acceptance"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert "queued in Codex" not in outbox_line(app, outbox_id)
        await open_detail(pilot, outbox_id)
        where = f"at byte {receipt['offset']} of {receipt['rollout']}"
        assert shows(app, f"UserMessage with this client id {where}")
        final = f"I will take it. COOP_ACCEPT {invited['nonce']}"
        assert shows(app, f"final of turn {acceptance['turn_id']}: {final}")
        open_thread = "picked up within about 10 s (the thread is open)"
        assert shows(app, f"queued (from codex queue): {open_thread}")
        assert "w" not in footer_keys(app)
        await pilot.press("w")  # neither shown nor run
        await settle(pilot)
        assert isinstance(app.screen, DeliveryScreen)

    drive(staged.app(survey_interval=60.0), script)
    assert Outbox.get_by_id(outbox_id).state == "delivered"
    assert asked_by(outbox_id) == []


def test_codex_refusing_a_withdrawal_it_already_took_is_said_and_changes_nothing(
    studio: World,
) -> None:
    staged, mac = studio
    thread, outbox_id = mac.taken_by_a_hung_turn(staged)

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        # The ledger has not looked again: sent, not received, last seen in the queue.
        await open_detail(pilot, outbox_id)
        assert "w" in footer_keys(app)
        await open_with(pilot, "w", ConfirmWithdraw)
        await pilot.press("y")
        await until(pilot, lambda: TAKEN in toasts(app), timeout=WAIT, what="Codex's refusal")
        await until(pilot, lambda: shows(app, TAKEN), what="the refusal shown")
        assert Outbox.get_by_id(outbox_id).state == "uncertain"
        # The next pass reads the receipt Codex wrote: Withdraw is no longer offered.
        await asyncio.to_thread(
            mac.tick_until, staged, outbox_id, lambda row: row["state"] == "delivered"
        )
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DeliveryScreen), what="back")
        await until(pilot, lambda: "delivered" in outbox_line(app, outbox_id), what="received")
        await open_detail(pilot, outbox_id)
        assert shows(app, "UserMessage with this client id at byte")
        assert "w" not in footer_keys(app)

    drive(staged.app(survey_interval=60.0), script)
    row = Outbox.get_by_id(outbox_id)
    assert (row.state, row.expiry) == ("delivered", None)
    assert asked_by(outbox_id) == ["dad"]


def test_a_refusal_holding_markup_is_shown_as_the_characters_it_holds(
    studio: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex really refuses (it took the envelope); only the words are changed, to ones
    holding Rich markup, which the toast must show as written (STYLE.md: never markup)."""
    staged, mac = studio
    _, outbox_id = mac.taken_by_a_hung_turn(staged)
    said = f"Codex took it {BOLD} {LINK}"
    monkeypatch.setattr(withdrawal, "TAKEN", said)

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_detail(pilot, outbox_id)
        await open_with(pilot, "w", ConfirmWithdraw)
        await pilot.press("y")
        await until(pilot, lambda: said in toasts(app), timeout=WAIT, what="the refusal")
        await until(pilot, lambda: shows(app, said), what="shown as written")

    drive(staged.app(survey_interval=60.0), script)


def test_w_cancels_an_envelope_never_sent(staged: Staged) -> None:
    pending = staged.outbox["builder_work"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_detail(pilot, pending)
        assert "w" in footer_keys(app)
        await open_with(pilot, "w", ConfirmWithdraw)
        assert shows(app, "It was never sent: it is cancelled")
        await pilot.press("y")
        said = f"Withdrawn: {pending[:8]} cancelled, never sent"
        await until(pilot, lambda: said in toasts(app), what="the toast")
        await until(pilot, lambda: "w" not in footer_keys(app), what="Withdraw gone")

    drive(staged.app(), script)
    assert Outbox.get_by_id(pending).state == "cancelled"


def test_a_claude_envelope_in_flight_offers_no_withdraw(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_detail(pilot, staged.outbox["reviewer_again"])
        assert "w" not in footer_keys(app)

    drive(staged.app(), script)
