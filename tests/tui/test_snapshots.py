"""Every screen as an SVG snapshot (tests/__snapshots__/test_snapshots/): the fixed
ledger and fleet of tuikit, a fixed clock, 160x48, no coordinator. Update with
`pytest tests/tui/test_snapshots.py --snapshot-update` and look at the report."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import SIZE, Staged, freeze_cursors, loaded, select_row, settle, until

from coop_tui.screens.adoption import AdoptionScreen
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import ConfirmResend, FilterDialog, InviteDialog
from coop_tui.screens.help import HelpScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

pytestmark = pytest.mark.tui

Steps = Callable[[Pilot[None]], Awaitable[None]]


def shoot(snap_compare: Any, staged: Staged, steps: Steps | None = None) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await loaded(pilot)
        if steps is not None:
            await steps(pilot)
        freeze_cursors(pilot.app)
        await settle(pilot)

    assert snap_compare(staged.app(), terminal_size=SIZE, run_before=run_before)


def on_screen(pilot: Pilot[None], kind: type) -> Callable[[], bool]:
    return lambda: isinstance(pilot.app.screen, kind)


def test_main_panes(snap_compare: Any, staged: Staged) -> None:
    shoot(snap_compare, staged)


def test_chats_of_one_mac(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await select_row(pilot, app.hosts_pane, "laptop")
        await pilot.press("enter")

    shoot(snap_compare, staged, steps)


def detail_of(name: str) -> Callable[[Staged], Steps]:
    def steps_for(staged: Staged) -> Steps:
        async def steps(pilot: Pilot[None]) -> None:
            app: Any = pilot.app
            await select_row(pilot, app.outbox_pane, staged.outbox[name])
            await pilot.press("enter")
            await until(pilot, on_screen(pilot, DeliveryScreen), what="detail")
            await until(pilot, lambda: app.screen.detail is not None, what="loaded")

        return steps

    return steps_for


def test_delivery_detail_all_five_facts(snap_compare: Any, staged: Staged) -> None:
    shoot(snap_compare, staged, detail_of("importer_work")(staged))


def test_delivery_detail_expired_with_proof_of_loss(snap_compare: Any, staged: Staged) -> None:
    shoot(snap_compare, staged, detail_of("locked")(staged))


def test_delivery_detail_resend_chain_and_held_notice(snap_compare: Any, staged: Staged) -> None:
    shoot(snap_compare, staged, detail_of("reviewer_again")(staged))


def test_confirm_send_again(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await select_row(pilot, app.outbox_pane, staged.outbox["flaky"])
        await pilot.press("r")
        await until(pilot, on_screen(pilot, ConfirmResend), what="the dialog")

    shoot(snap_compare, staged, steps)


def test_adoption_review(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("a")
        await until(pilot, on_screen(pilot, AdoptionScreen), what="review")

    shoot(snap_compare, staged, steps)


def test_chat_inspector(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await select_row(pilot, app.sessions_pane, f"office/{staged.chats['importer'].ref}")
        await pilot.press("c")
        await until(pilot, on_screen(pilot, InspectorScreen), what="inspector")

    shoot(snap_compare, staged, steps)


def test_notifications(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await pilot.press("exclamation_mark")
        await until(pilot, on_screen(pilot, NotificationsScreen), what="notices")
        await until(pilot, lambda: app.screen.query_one(NoticesTable).row_count, what="rows")

    shoot(snap_compare, staged, steps)


def test_help(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        await until(pilot, on_screen(pilot, HelpScreen), what="help")

    shoot(snap_compare, staged, steps)


def test_invite_dialog(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("i")
        await until(pilot, on_screen(pilot, InviteDialog), what="dialog")

    shoot(snap_compare, staged, steps)


def test_filter_dialog(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("f")
        await until(pilot, on_screen(pilot, FilterDialog), what="dialog")
        await pilot.press(*"expired")

    shoot(snap_compare, staged, steps)
