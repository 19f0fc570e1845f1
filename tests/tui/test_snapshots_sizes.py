"""The main screen and the dialogs at 80x24 (the smallest terminal the app fits) and
160x48, as SVG snapshots (tests/__snapshots__/test_snapshots_sizes/). Update with
`pytest tests/tui/test_snapshots_sizes.py --snapshot-update` and look at the report."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList
from tuikit import Staged, freeze_cursors, loaded, open_with, select_row, settle, until

from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import (
    AddTodoDialog,
    ConfirmRefusing,
    ConfirmResend,
    ConfirmWithdraw,
    FilterDialog,
    InviteDialog,
)
from coop_tui.screens.help import HelpScreen

pytestmark = pytest.mark.tui

Steps = Callable[[Pilot[None]], Awaitable[None]]
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 48), id="160x48")]


def shoot(
    snap_compare: Any, staged: Staged, size: tuple[int, int], steps: Steps | None = None
) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await loaded(pilot)
        if steps is not None:
            await steps(pilot)
        freeze_cursors(pilot.app)
        await settle(pilot)

    assert snap_compare(staged.app(), terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES)
def test_main_panes(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    shoot(snap_compare, staged, size)


@pytest.mark.parametrize("size", SIZES)
def test_confirm_send_again(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await select_row(pilot, app.outbox_pane, staged.outbox["flaky"])
        await open_with(pilot, "r", ConfirmResend)

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_invite_dialog(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("i")
        await until(pilot, lambda: isinstance(pilot.app.screen, InviteDialog), what="dialog")

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_confirm_withdraw(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await select_row(pilot, app.outbox_pane, staged.outbox["builder_work"])
        await open_with(pilot, "enter", DeliveryScreen)
        await until(pilot, lambda: app.screen.detail is not None, what="the detail loaded")
        await settle(pilot)
        await open_with(pilot, "w", ConfirmWithdraw)

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_confirm_refusing(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await open_with(pilot, "i", InviteDialog)
        todos = app.screen.query_one("#todos", OptionList)
        await until(pilot, lambda: todos.option_count > 0, what="the todos")
        await settle(pilot)
        todos.highlighted = todos.get_option_index(str(staged.todos["open"]))
        await pilot.press("enter")
        chats = app.screen.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        chats.highlighted = chats.get_option_index(f"office|{staged.chats['locked'].ref}")
        await open_with(pilot, "enter", ConfirmRefusing)

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_add_todo_dialog(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("plus")
        await until(pilot, lambda: isinstance(pilot.app.screen, AddTodoDialog), what="dialog")

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_filter_dialog(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("f")
        await until(pilot, lambda: isinstance(pilot.app.screen, FilterDialog), what="dialog")
        await pilot.press(*"expired office")

    shoot(snap_compare, staged, size, steps)


@pytest.mark.parametrize("size", SIZES)
def test_help(snap_compare: Any, staged: Staged, size: tuple[int, int]) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen), what="help")

    shoot(snap_compare, staged, size, steps)


def test_outbox_maximised_at_80x24(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        await pilot.press("3", "z")

    shoot(snap_compare, staged, (80, 24), steps)


def test_a_filter_matching_nothing_at_80x24(snap_compare: Any, staged: Staged) -> None:
    async def steps(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await open_with(pilot, "f", FilterDialog)
        await pilot.press("ctrl+u", *"nothing-has-this", "enter")
        await until(pilot, lambda: app.outbox_pane.row_count == 0, what="the empty window")

    shoot(snap_compare, staged, (80, 24), steps)
