"""Everything a chat wrote is shown as the characters it wrote, never read as markup."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import (
    T0,
    ChatSpec,
    Staged,
    drive,
    fixed_nonces,
    human,
    loaded,
    open_with,
    peer,
    said,
    screen_text,
    select_row,
    stage,
    turn_end,
    until,
)

from coop_engine.engine import Engine
from coop_engine.models import database
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import InviteDialog
from coop_tui.screens.inspector import InspectorScreen

pytestmark = pytest.mark.tui

BOLD = "[bold red]x[/]"
LINK = "[link=https://example.com]y[/link]"


@pytest.fixture
def hostile(workdir: Path) -> Iterator[tuple[Staged, ChatSpec, str]]:
    """A chat whose name, registry entry and transcript hold markup, and an accepted
    invitation whose final quotes it."""
    chat = ChatSpec("office", f"{BOLD} {LINK}", 4199, cwd_name=f"evil-{LINK}")
    chat.session_id = "0badc0de-0000-4000-8000-000000000001"
    chat.transcript = [
        human(chat, T0 - 60, f"Say {BOLD} and {LINK}", "u-1"),
        said(chat, T0 - 55, f"Here: {BOLD} {LINK}", "u-2"),
        turn_end(chat, T0 - 55, "u-3"),
    ]
    staged = stage(workdir, extra=[chat])
    engine = Engine(database.obj, clock=staged.clock, actor="dad")
    with fixed_nonces(11):
        todo = engine.add_todo(f"Render {BOLD} safely")["id"]
        invited = engine.invite(todo, chat.ref, "office", name=chat.name, cwd=chat.cwd)
    outbox_id = invited["outbox"]
    coop = Engine(database.obj, clock=staged.clock, actor="coop")
    attempt = coop.mark_uncertain(outbox_id, {"host": "office", "offset": 0})
    coop.record_transport(outbox_id, attempt["attempt"], {"ok": True, "written": True})
    coop.record_receipt(outbox_id, {"offset": 10, "shape": "user", "transcript": f"t-{LINK}"})
    final = f"Sure {BOLD} {LINK} COOP_ACCEPT {invited['nonce']}"
    coop.accept(outbox_id, invited["nonce"], {"final": final, "offset": 99})
    chat.transcript += [
        peer(chat, T0, outbox_id, f"Render {BOLD} safely"),
        said(chat, T0 + 1, final, "u-4"),
        turn_end(chat, T0 + 1, "u-5"),
    ]
    staged.folders[0].write(chat)
    try:
        yield staged, chat, outbox_id
    finally:
        staged.close()


def test_markup_written_by_a_chat_shows_literally_in_panes_inspector_and_detail(
    hostile: tuple[Staged, ChatSpec, str],
) -> None:
    staged, chat, outbox_id = hostile

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        key = f"office/{chat.ref}"
        row = next(line for line in screen_text(app).splitlines() if "0badc0de" in line)
        assert f"{BOLD} {LINK}" in row

        await open_with(pilot, "i", InviteDialog)
        await until(pilot, lambda: f"{BOLD} {LINK}  0badc0de" in screen_text(app), what="chat")
        await pilot.press("escape")

        await select_row(pilot, app.sessions_pane, key)
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Registry entry" in screen_text(app), what="read")
        assert f"{BOLD} {LINK}" in screen_text(app)  # the labelled name, literal
        await pilot.press("J")
        await until(pilot, lambda: '"name"' in screen_text(app), what="raw JSON")
        shown = screen_text(app)
        assert f'"name": "{BOLD} {LINK}"' in shown
        assert f'"cwd": "/Users/dad/src/evil-{LINK}"' in shown
        assert f"Say {BOLD} and {LINK}" in shown
        assert f"Here: {BOLD} {LINK}" in shown
        assert f"FINAL  Sure {BOLD} {LINK} COOP_ACCEPT" in shown
        await pilot.press("escape")

        await select_row(pilot, app.outbox_pane, outbox_id)
        await open_with(pilot, "enter", DeliveryScreen)
        await until(pilot, lambda: app.screen.detail is not None, what="loaded")
        await until(pilot, lambda: "Text sent" in screen_text(app), what="shown")
        shown = screen_text(app)
        assert f"Sure {BOLD} {LINK} COOP_ACCEPT" in shown
        assert f"Render {BOLD} safely" in shown
        assert f"of t-{LINK}" in shown

    drive(staged.app(), script)
