"""What a chat wrote reaches the terminal printed, never sent: a chat named with an
escape sequence, a screen clear, a C1 control, a bidi override and markup shows as
those characters (`\\x1b]2;PWNED\\x07`, `\\u202e`, `[/]`) in the panes, the invite
dialog and its second confirmation, the inspector (its header, the transcript, a held
notice, the raw JSON), the delivery detail, a toast and the notices; the filter, the
status line and any toast take `[/]` as written, and a field draws a pasted control as
a sign. No segment drawn on any screen holds a character that steers a terminal."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual import events
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Input, OptionList, Static
from textual.widgets._toast import Toast
from tuikit import (
    REFUSE_SETTINGS,
    T0,
    TOAST_BAR,
    ChatSpec,
    Staged,
    drive,
    fixed_nonces,
    held,
    human,
    loaded,
    open_with,
    said,
    screen_text,
    select_row,
    shows,
    stage,
    turn_end,
    until,
)

from coop_engine.engine import Engine
from coop_engine.formats import STEERING, one_line
from coop_engine.models import database
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import ConfirmRefusing, FilterDialog, InviteDialog
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.notices import NotificationsScreen

pytestmark = pytest.mark.tui

WAIT = 20.0
NAME = "\x1b]2;PWNED\x07ev\x1b[2Jil\x9b31m\u202egnp.exe [/] [bold]x"
SAID = "Done \x1b]52;c;cGFzdGU=\x07 and \x1b[2J [/] \u2066here"
PRINTED = one_line(NAME)  # what every screen shows of it


def sent_raw(app: Any) -> list[str]:
    """Every character that steers a terminal in what the screen draws now."""
    strips = app.screen._compositor.render_strips()
    return [
        char for strip in strips for segment in strip for char in STEERING.findall(segment.text)
    ]


def bare(text: str) -> str:
    return "".join(text.replace(TOAST_BAR, "").split())


def toasts(app: Any) -> str:
    """What the toasts on screen say, their bars and wrapping left out."""
    said = []
    for toast in app.screen.query(Toast):
        whole = Region(0, 0, toast.outer_size.width, toast.outer_size.height)
        said += [bare(line.text) for line in toast.render_lines(whole)]
    return "".join(said)


@pytest.fixture
def hostile(workdir: Path) -> Iterator[tuple[Staged, ChatSpec, str]]:
    """A chat whose name, transcript and held notice hold escape sequences, a bidi
    override and markup, invited to a todo: its invitation received and accepted."""
    chat = ChatSpec("office", NAME, 4199, cwd_name="evil")
    chat.session_id = "0badc0de-0000-4000-8000-000000000002"
    chat.transcript = [
        human(chat, T0 - 60, f"Say {SAID}", "u-1"),
        said(chat, T0 - 55, SAID, "u-2"),
        held(chat, T0 - 54, f"Held {SAID}", "u-3"),
        turn_end(chat, T0 - 55, "u-4"),
    ]
    staged = stage(workdir, extra=[chat])
    engine = Engine(database.obj, clock=staged.clock, actor="dad")
    with fixed_nonces(12):
        todo = engine.add_todo("Render the names safely")["id"]
        invited = engine.invite(todo, chat.ref, "office", name=chat.name, cwd=chat.cwd)
    outbox_id = invited["outbox"]
    coop = Engine(database.obj, clock=staged.clock, actor="coop")
    attempt = coop.mark_uncertain(outbox_id, {"host": "office", "offset": 0})
    coop.record_transport(outbox_id, attempt["attempt"], {"ok": True, "written": True})
    coop.record_receipt(outbox_id, {"offset": 10, "shape": "user", "transcript": SAID})
    coop.accept(outbox_id, invited["nonce"], {"final": f"{SAID} {invited['nonce']}", "offset": 9})
    try:
        yield staged, chat, outbox_id
    finally:
        staged.close()


def test_a_chat_named_with_escapes_shows_them_printed_on_every_screen(
    hostile: tuple[Staged, ChatSpec, str],
) -> None:
    staged, chat, outbox_id = hostile

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert shows(app, PRINTED)  # the chats pane and the outbox
        assert sent_raw(app) == []

        await open_with(pilot, "i", InviteDialog)
        await until(pilot, lambda: shows(app, PRINTED), what="the chat in the invite list")
        assert sent_raw(app) == []
        await pilot.press("escape")

        await select_row(pilot, app.sessions_pane, f"office/{chat.ref}")
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Registry entry" in screen_text(app), what="read")
        header = screen_text(app).splitlines()[0]
        assert PRINTED[:30] in header  # the screen's title names the chat
        assert shows(app, one_line(SAID)) and shows(app, f"Held {one_line(SAID)}")
        assert sent_raw(app) == []
        await pilot.press("J")
        await until(pilot, lambda: '"name"' in screen_text(app), what="raw JSON")
        assert sent_raw(app) == []
        await pilot.press("escape")

        await select_row(pilot, app.outbox_pane, outbox_id)
        await open_with(pilot, "enter", DeliveryScreen)
        await until(pilot, lambda: "Text sent" in screen_text(app), what="the detail")
        assert shows(app, PRINTED) and shows(app, one_line(SAID))
        assert sent_raw(app) == []
        await pilot.press("escape")

        def conflict() -> None:
            staged.engine(actor="coop").record_conflict(
                outbox_id, {"reason": "wrong-provenance", "offset": 91}
            )

        await asyncio.to_thread(conflict)
        await until(pilot, lambda: f"chat{bare(PRINTED)}" in toasts(app), WAIT, "the toast")
        assert sent_raw(app) == []
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        await until(pilot, lambda: shows(app, PRINTED), WAIT, "the notice naming the chat")
        assert sent_raw(app) == []

    drive(staged.app(), script)


def test_the_second_confirmation_names_a_refusing_chat_as_written(workdir: Path) -> None:
    refusing = ChatSpec("office", NAME, 4198, cwd_name="evil", argv=["claude", "--settings"])
    refusing.argv.append(REFUSE_SETTINGS)
    staged = stage(workdir, extra=[refusing])

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        dialog = await open_with(pilot, "i", InviteDialog)
        todos = dialog.query_one("#todos", OptionList)
        await until(pilot, lambda: todos.option_count > 0, what="the todos")
        todos.highlighted = todos.get_option_index(str(staged.todos["open"]))
        await pilot.press("enter")
        chats = dialog.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        chats.highlighted = chats.get_option_index(f"office|{refusing.ref}")
        await open_with(pilot, "enter", ConfirmRefusing)
        why = app.screen.query_one("#refusing-why", Static)
        assert str(why.visual).startswith(f"{PRINTED} (")
        assert shows(app, PRINTED) and sent_raw(app) == []

    try:
        drive(staged.app(), script)
    finally:
        staged.close()


def test_the_filter_the_status_line_and_a_widgets_toast_take_markup_as_written(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert shows(app, "[/] \\x1b]2;banner\\x07")  # the status line's banner
        dialog = await open_with(pilot, "f", FilterDialog)
        await pilot.press(*"[/]")
        # A paste keeps what a terminal passes whole (a C1 control, a bidi override): the
        # field draws each as one sign.
        dialog.query_one(Input).post_message(events.Paste("\u202eexe\x9b"))
        await until(pilot, lambda: "[/]�exe�" in screen_text(app), what="the pasted filter")
        assert sent_raw(app) == []
        await pilot.press("escape")
        await open_with(pilot, "f", FilterDialog)
        await pilot.press(*"[/]", "enter")
        await until(pilot, lambda: "matching '[/]'" in screen_text(app), what="the title")
        # Any widget's toast (Textual's own notify asks for markup): as written.
        app.screen.notify("[bold]x[/] \x1b]2;toast\x07", title="[/]")
        await until(
            pilot, lambda: bare("[bold]x[/] \\x1b]2;toast\\x07") in toasts(app), what="toast"
        )
        [toast] = list(app._notifications)
        assert not toast.markup and toast.title == "[/]"
        assert sent_raw(app) == []

    drive(staged.app(banner="[/] \x1b]2;banner\x07"), script)
