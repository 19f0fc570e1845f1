"""The app's add dialog and invite dialog refuse what the door refuses
(coop_engine/frame_text.py), in the door's one line, in the dialog: a title pasted with a
C1 control, BEL and a bidi override, or longer than 200 characters, is not added, its
text is kept (drawn with a visible sign for each control) for editing, and nothing is
recorded; edited, it is added. A todo an older ledger kept with an escape in its title
is refused when picked for an invitation, and no envelope is made."""

from __future__ import annotations

from typing import Any

import pytest
from textual import events
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static
from tuikit import Staged, drive, loaded, open_with, screen_text, until

from coop_engine.errors import BadInput
from coop_engine.formats import STEERING
from coop_engine.frame_text import title as door_title
from coop_engine.models import Outbox, Todo
from coop_tui.screens.dialogs import AddTodoDialog, InviteDialog

pytestmark = pytest.mark.tui

PASTED = "Fix \x9b2J the \u202eimporter\x07 test"
PICTURED = "Fix �2J the �importer␇ test"  # one visible sign a control, in the field


def door_says(title: str) -> str:
    try:
        door_title(title)
    except BadInput as refusal:
        return str(refusal)
    raise AssertionError(f"the door takes {title!r}")


def sent_raw(app: Any) -> list[str]:
    """Every character that steers a terminal in what the screen draws now."""
    strips = app.screen._compositor.render_strips()
    return [c for strip in strips for segment in strip for c in STEERING.findall(segment.text)]


def refusal(app: Any) -> str:
    shown = app.screen.query_one("#todo-refusal", Static)
    return str(shown.visual) if shown.display else ""


async def paste(pilot: Pilot[None], text: str) -> None:
    """A bracketed paste into the focused field, as a terminal delivers one."""
    focused = pilot.app.focused
    assert focused is not None
    focused.post_message(events.Paste(text))
    await pilot.pause()


def test_a_pasted_title_holding_controls_is_refused_in_the_doors_words_and_kept(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        before = Todo.select().count()
        dialog = await open_with(pilot, "plus", AddTodoDialog)
        field = dialog.query_one("#todo-title", Input)
        await paste(pilot, PASTED)
        assert field.value == PASTED
        await until(pilot, lambda: PICTURED in screen_text(app), what="the pasted title")
        assert sent_raw(app) == []
        await pilot.press("enter")
        said = door_says(PASTED)
        assert said == "A todo title cannot hold U+009B (CSI) (character 5)"
        await until(pilot, lambda: refusal(app) == said, what="the door's refusal")
        assert said in screen_text(app)
        assert app.screen is dialog and app.focused is field and field.value == PASTED
        assert Todo.select().count() == before and sent_raw(app) == []

        field.value = "Fix 2J the importer test"  # edited: the signs deleted
        await until(pilot, lambda: refusal(app) == "", what="the refusal gone once edited")
        await pilot.press("enter")  # on to the project
        await pilot.press("enter")
        await until(pilot, lambda: app.screen is not dialog, what="the dialog closed")
        assert Todo.select().where(Todo.title == "Fix 2J the importer test").count() == 1

    drive(staged.app(), script)


def test_two_enters_typed_before_the_focus_moves_add_the_todo(staged: Staged) -> None:
    """A fast typist (or a browser through `coop web`) sends title, enter, enter at once:
    both enters reach the title field before the focus moves to the project, and the
    second must add the todo rather than offer the project again."""

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        dialog = await open_with(pilot, "plus", AddTodoDialog)
        title = dialog.query_one("#todo-title", Input)
        title.value = "Typed in one breath"
        for _ in range(2):  # queued together: neither is handled before both are sent
            title.post_message(Input.Submitted(title, title.value))
        await until(pilot, lambda: app.screen is not dialog, what="the dialog closed")
        assert Todo.select().where(Todo.title == "Typed in one breath").count() == 1

    drive(staged.app(), script)


def test_a_title_longer_than_the_door_allows_is_refused_and_nothing_recorded(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        before = Todo.select().count()
        dialog = await open_with(pilot, "plus", AddTodoDialog)
        await paste(pilot, "x" * 201)
        await pilot.press("tab")  # a project given: the title's enter would add
        await pilot.press(*"office", "enter")
        said = "A todo title is at most 200 characters, not 201"
        await until(pilot, lambda: refusal(app) == said, what="the door's refusal")
        assert app.screen is dialog and dialog.query_one("#todo-title", Input).value == "x" * 201
        assert Todo.select().count() == before

    drive(staged.app(), script)


def test_the_invite_dialog_refuses_a_todo_an_older_ledger_kept_with_an_escape(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        # Written past the door, as a ledger from before its check may hold it.
        old = Todo.create(title="Ship \x1b]2;PWNED\x07 it", body="", created_at=0.0)
        envelopes = Outbox.select().count()
        dialog = await open_with(pilot, "i", InviteDialog)
        todos = dialog.query_one("#todos", OptionList)
        await until(pilot, lambda: todos.option_count > 0, what="the todos")
        assert "Ship \\x1b]2;PWNED\\x07 it" in screen_text(app) and sent_raw(app) == []
        todos.highlighted = todos.get_option_index(str(old.id))
        await pilot.press("enter")
        said = "A todo title cannot hold U+001B (ESC) (character 6)"
        why = dialog.query_one("#invite-refusal", Static)
        await until(pilot, lambda: why.display and str(why.visual) == said, what="the refusal")
        assert app.focused is todos and dialog.todo is None
        await pilot.press("enter")  # again: still refused, and no chat is offered
        assert app.focused is todos and Outbox.select().count() == envelopes

        todos.highlighted = todos.get_option_index(str(staged.todos["open"]))
        await pilot.press("enter")  # a todo the door takes: on to the chats
        await until(pilot, lambda: app.focused is dialog.query_one("#chats"), what="chats")
        assert not why.display

    drive(staged.app(), script)
