"""The invite dialog guides: the todos focused, `enter` moves on, each chat's predicted
verdict shown, a refusing chat confirmed a second time with why; `+` adds a todo."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import OptionList
from tuikit import Staged, drive, flat, loaded, open_with, screen_text, settle, until

from coop_engine.models import Outbox, Todo
from coop_tui.screens.dialogs import AddTodoDialog, ConfirmRefusing, InviteDialog

pytestmark = pytest.mark.tui


async def open_invite(pilot: Pilot[None]) -> Any:
    app: Any = pilot.app
    await loaded(pilot)
    await open_with(pilot, "i", InviteDialog)
    dialog = app.screen
    todos = dialog.query_one("#todos", OptionList)
    await until(pilot, lambda: todos.option_count > 0, what="the todos")
    await settle(pilot)
    return dialog


def test_the_todos_are_focused_and_enter_moves_to_the_chats_with_their_verdicts(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        dialog = await open_invite(pilot)
        todos = dialog.query_one("#todos", OptionList)
        assert app.focused is todos
        assert todos.highlighted == 0
        await pilot.press("enter")
        chats = dialog.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        shown = flat(screen_text(app))
        assert "locked" in shown and "refuses (--settings)" in shown
        assert "reviewer" in shown and "holds (bypass, no setting)" in shown
        assert "accepts" in shown

    drive(staged.app(), script)


def test_a_refusing_chat_needs_a_second_confirmation_that_says_why(staged: Staged) -> None:
    locked = staged.chats["locked"]
    todo = staged.todos["open"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        dialog = await open_invite(pilot)
        todos = dialog.query_one("#todos", OptionList)
        todos.highlighted = todos.get_option_index(str(todo))
        await pilot.press("enter")
        chats = dialog.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        chats.highlighted = chats.get_option_index(f"office|{locked.ref}")
        before = Outbox.select().count()
        await open_with(pilot, "enter", ConfirmRefusing)
        shown = flat(screen_text(app))
        assert "This invitation will not arrive" in shown
        assert "crossSessionInbound" in shown and "refused-by-receiver-policy" in shown
        await open_with(pilot, "n", InviteDialog)
        assert Outbox.select().count() == before
        await open_with(pilot, "enter", ConfirmRefusing)
        await pilot.press("y")
        await until(
            pilot,
            lambda: (
                Outbox.select().where(Outbox.payload.contains(f"#{todo}:")).count() > 0
                or Outbox.select().count() > before
            ),
            what="the invitation",
        )

    drive(staged.app(), script)


def test_plus_adds_a_todo_from_the_invite_dialog_and_picks_it(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        dialog = await open_invite(pilot)
        await open_with(pilot, "plus", AddTodoDialog)
        await pilot.press(*"Ship [bold]it[/bold]")
        await pilot.press("enter")  # on to the project
        await open_with(pilot, "enter", InviteDialog)
        added = Todo.get(Todo.title == "Ship [bold]it[/bold]")
        todos = dialog.query_one("#todos", OptionList)
        await until(
            pilot,
            lambda: (
                todos.highlighted is not None
                and todos.get_option_at_index(todos.highlighted).id == str(added.id)
            ),
            what="the new todo picked",
        )
        assert "Ship [bold]it[/bold]" in screen_text(app)

    drive(staged.app(), script)
