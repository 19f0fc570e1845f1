"""One vocabulary: a pane's column is named as the CLI's table names the same field (the
upper-cased `--json` field name): HOST, never MAC; NAME is what a chat is called,
SESSION_ID its short id. A reader of `coop chats`, `coop hosts`, `coop outbox`, `coop
notifications` and `coop adopt` meets the same words in the app."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import Staged, drive, loaded, open_with, screen_text, settle, until

from coop_engine.cli.fleet import CHAT_COLUMNS, HOST_COLUMNS
from coop_engine.cli.ledger import ADOPTION_COLUMNS
from coop_engine.cli.listings import LISTINGS
from coop_tui.screens.adoption import AdoptionScreen, TakersTable
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

pytestmark = pytest.mark.tui

# What a CLI table shows that the app shows elsewhere: a chat's socket verdict is the
# inspector's, a Mac's reason for being unreachable is its REACHABLE cell, and the Mac
# that found a taker is in its SEARCHED cell (each Mac's matches).
ELSEWHERE = {"SOCKET", "REASON", "FOUND"}


def header_words(app: Any, title: str) -> list[str]:
    """The words of a pane's header line, as the screen shows them."""
    lines = screen_text(app).splitlines()
    top = next(i for i, line in enumerate(lines) if f"─ {title}" in line)
    return lines[top + 1].strip("│ ").split()


def table_words(table: Any) -> list[str]:
    """Every column's header, shown or dropped for want of width."""
    return [label for _, label, _ in table.COLUMNS]


def missing(cli: list[Any], shown: list[str]) -> set[str]:
    """The CLI table's words the app's table lacks."""
    return {name for name, _ in cli} - ELSEWHERE - set(shown)


def test_the_panes_say_the_clis_words_and_host_never_mac(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        chats, macs = header_words(app, "Chats"), header_words(app, "Macs")
        outbox = header_words(app, "Outbox")
        assert chats[:4] == ["HOST", "VENDOR", "NAME", "SESSION_ID"]
        assert missing(CHAT_COLUMNS, chats) == set()
        assert missing(HOST_COLUMNS, macs) == set() and macs[0] == "HOST"
        outbox_words = LISTINGS["outbox"][1]
        assert missing(outbox_words, outbox) == set()
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        notices = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: notices.row_count, what="the notices")
        assert missing(LISTINGS["notifications"][1], table_words(notices)) == set()
        await pilot.press("escape")
        await open_with(pilot, "a", AdoptionScreen)
        takers = app.screen.query_one(TakersTable)
        await until(pilot, lambda: takers.row_count, what="the takers")
        await settle(pilot)
        assert missing(ADOPTION_COLUMNS, table_words(takers)) == set()
        every = [chats, macs, outbox, table_words(notices), table_words(takers)]
        for words in every:
            assert "MAC" not in words and "HOST" in words, words

    drive(staged.app(), script)
