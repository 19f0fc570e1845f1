"""A chat is called what people call it: its name (else its folder) beside its short id,
in the chats pane, the outbox, the delivery detail, the notices and the dialogs; the
outbox filter finds it by name; a notice is shown whole; and a chat's Codeman session
(its tmux pane's `codeman-<id8>`) is named, a docker or ssh worker's as living in
another registry."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import (
    ChatSpec,
    Staged,
    drive,
    loaded,
    open_with,
    screen_text,
    select_row,
    settle,
    shows,
    stage,
    until,
)

from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import FilterDialog
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

pytestmark = pytest.mark.tui

# A reason as long as a real one can be: it must be read whole, never cut.
LONG = (
    "wrong-provenance: the transcript holds an entry with this envelope's id whose origin"
    " names another sender (cwkOther) and no msg_id, written by a chat that was resumed"
    " from a conversation of a different folder; Coop does not take it for the receipt,"
    " and asks Dad to look at the chat before anything is sent again"
)


def line_with(app: Any, text: str) -> str:
    return next(line for line in screen_text(app).splitlines() if text in line)


def test_the_outbox_the_detail_and_the_notices_call_a_chat_by_name_and_short_id(
    staged: Staged,
) -> None:
    importer, flaky = staged.chats["importer"], staged.chats["flaky"]
    invitation = staged.outbox["importer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        envelope = line_with(app, f"│ {invitation[:8]}").split()
        # SESSION_NAME, SESSION and HOST, as `coop outbox` names them.
        at = envelope.index("importer")
        assert envelope[at : at + 3] == ["importer", f"claude:{importer.session_id[:8]}", "office"]
        await select_row(pilot, app.outbox_pane, invitation)
        await open_with(pilot, "enter", DeliveryScreen)
        await until(pilot, lambda: app.screen.detail is not None, what="the detail")
        called = f"importer ({importer.session_id[:8]})"
        await until(pilot, lambda: shows(app, f"{called} on office"), what="the title")
        assert shows(app, f"invited {called} on office")  # History names it too
        await pilot.press("escape")
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        table = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: table.row_count == 4, what="four notices")
        await settle(pilot)
        notice = line_with(app, f"Envelope {staged.outbox['flaky']}").split()
        at = notice.index("flaky")  # SESSION_NAME, SESSION, HOST
        assert notice[at : at + 3] == ["flaky", f"claude:{flaky.session_id[:8]}", "office"]

    drive(staged.app(), script)


@pytest.fixture
def unnamed(workdir: Path) -> Iterator[Staged]:
    """The staged fleet and one more office chat with no name: only its folder."""
    staged = stage(workdir, extra=[ChatSpec("office", "", 4150, cwd_name="tidy-folder")])
    try:
        yield staged
    finally:
        staged.close()


def test_a_chat_without_a_name_is_called_by_its_folder_and_the_filter_finds_names(
    unnamed: Staged,
) -> None:
    chat = unnamed.chats[""]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        row = app.sessions_pane.rows_by_key[f"office/{chat.ref}"]
        assert row["label"] == "tidy-folder"
        assert "tidy-folder" in line_with(app, chat.session_id[:8])
        await open_with(pilot, "f", FilterDialog)
        await pilot.press(*"reviewer")
        await pilot.press("enter")
        pane = app.outbox_pane
        await until(pilot, lambda: pane.row_count == 2, what="the reviewer's two envelopes")
        assert {r["session_name"] for r in pane.rows_by_key.values()} == {"reviewer"}

    drive(unnamed.app(), script)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_a_notice_is_shown_whole_wrapped_never_cut(staged: Staged, size: tuple[int, int]) -> None:
    docs_work = staged.outbox["docs_work"]

    def conflict() -> None:
        staged.engine(actor="coop").record_conflict(docs_work, {"reason": LONG, "offset": 91})

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await asyncio.to_thread(conflict)
        await until(pilot, lambda: app.counts and app.unread == 5, what="the new notice")
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        table = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: table.row_count == 5, what="five notices")
        app.clear_notifications()  # the conflict's toast would cover the table at 80x24
        await settle(pilot)
        text = f"Envelope {docs_work}: {LONG}"
        assert shows(app, text)  # every word of it, over as many lines as it needs
        newest = table.rows[table.coordinate_to_cell_key((0, 0)).row_key]
        assert newest.height > 1
        assert "…" not in screen_text(app)

    drive(staged.app(), script, size=size)


# --- Codeman --------------------------------------------------------------------------------

WORKER = "codeman-cfb1b544:@96.%96"
DOCKER = "codeman-dkr-0a1b2c3d:@1.%1"


@pytest.fixture
def codeman_fleet(workdir: Path) -> Iterator[Staged]:
    """Three more office chats: a Codeman worker, a docker worker's pane, and a chat of a
    Claude Code older than 2.1.226 (its entry has no tmux field)."""
    extra = [
        ChatSpec("office", "worker", 4160, tmux=WORKER),
        ChatSpec("office", "boxed", 4161, tmux=DOCKER),
        ChatSpec("office", "elder", 4162, version="2.1.200"),
    ]
    staged = stage(workdir, extra=extra)
    try:
        yield staged
    finally:
        staged.close()


async def inspect(pilot: Pilot[None], chat: ChatSpec) -> str:
    app: Any = pilot.app
    await select_row(pilot, app.sessions_pane, f"office/{chat.ref}")
    await open_with(pilot, "c", InspectorScreen)
    await until(pilot, lambda: "Registry entry" in screen_text(app), what="the entry")
    shown = " ".join(screen_text(app).split())
    await pilot.press("escape")
    await until(pilot, lambda: not isinstance(app.screen, InspectorScreen), what="back")
    return shown


def test_a_chats_codeman_session_is_named_and_a_docker_workers_is_in_another_registry(
    codeman_fleet: Staged,
) -> None:
    chats = codeman_fleet.chats

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert "codeman-cfb1b544" in line_with(app, chats["worker"].session_id[:8])
        boxed = line_with(app, chats["boxed"].session_id[:8])
        assert "codeman-dkr-0a1b2c3d (another registry)" in boxed
        shown = await inspect(pilot, chats["worker"])
        assert "Codeman codeman-cfb1b544 (Codeman session cfb1b544, in this Mac's registry)" in (
            shown
        )
        shown = await inspect(pilot, chats["boxed"])
        assert "a docker worker, whose Codeman session lives in another registry" in shown
        shown = await inspect(pilot, chats["elder"])
        assert "Codeman not known: Claude Code 2.1.200 writes no tmux field" in shown
        shown = await inspect(pilot, chats["importer"])
        assert "Codeman none: no tmux pane recorded" in shown

    drive(codeman_fleet.app(), script)
