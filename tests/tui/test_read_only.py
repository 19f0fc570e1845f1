"""An app started read-only (`coop tui --read-only`, each page of `coop web
--read-only`) shows everything and changes nothing: the keys that would write say
"read-only: started with --read-only" in one line and open nothing, and below the keys
the engine refuses the command itself, so a dialog that got open anyway adds nothing."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Static
from tuikit import Staged, drive, loaded, shows, until

from coop_engine import frame
from coop_engine.errors import READ_ONLY
from coop_engine.models import Outbox, Todo
from coop_tui.screens.dialogs import AddTodoDialog

pytestmark = pytest.mark.tui


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process started read-only, as the launcher makes it; put back afterwards."""
    monkeypatch.setattr(frame, "_writes_refused", False)
    frame.refuse_writes()


def toasts(app: Any) -> list[str]:
    return [str(notice.message) for notice in app._notifications]


def test_the_add_todo_key_in_a_read_only_app_says_so_in_one_line_and_adds_nothing(
    staged: Staged, read_only: None
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        todos, envelopes = Todo.select().count(), Outbox.select().count()
        for key in ("plus", "i", "r"):  # add, invite, Send again
            await pilot.press(key)
            await pilot.pause()
            assert len(app.screen_stack) == 1, key  # no dialog opened
        await until(pilot, lambda: shows(app, READ_ONLY), what="the read-only line")
        assert toasts(app) == [READ_ONLY] * 3
        assert (Todo.select().count(), Outbox.select().count()) == (todos, envelopes)

    drive(staged.app(), script)


def test_a_dialog_open_in_a_read_only_app_is_refused_by_the_engine_and_adds_nothing(
    staged: Staged, read_only: None
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        before = Todo.select().count()
        dialog = AddTodoDialog()
        await app.push_screen(dialog)  # past the key's courtesy: the engine decides
        await pilot.pause()
        dialog.query_one("#todo-title", Input).value = "Written from a read-only app"
        dialog.query_one("#todo-project", Input).value = "office"
        dialog.query_one("#todo-title", Input).focus()
        await pilot.press("enter")
        refusal = dialog.query_one("#todo-refusal", Static)
        await until(pilot, lambda: str(refusal.visual) == READ_ONLY, what="the engine's line")
        assert app.screen is dialog and Todo.select().count() == before

    drive(staged.app(), script)
