"""The toast an adoption raises (adopt by `enter` in the adoption review) says which chat
and what the search found, in words that come from outside Coop: the chat's reference
(a chat exports its own PIPPA_COOP_SESSION) and the Mac's name. It shows them as the
characters they hold: markup never styles them and a link tag never links."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets._toast import Toast
from tuikit import (
    TOAST_BAR,
    ChatSpec,
    MacFolder,
    Staged,
    StillPlatform,
    drive,
    loaded,
    open_with,
    select_row,
    stage,
    until,
)

from coop_engine.models import Session
from coop_tui.screens.adoption import AdoptionScreen, TakersTable
from hosts.mac.local import LocalHost

pytestmark = pytest.mark.tui

WAIT = 20.0
BOLD = "[bold red]x[/]"
LINK = "[link=file:///etc]y[/link]"
MARKUP_MAC = f"{BOLD} {LINK}"  # a Mac's name, as fleet.toml may spell it
MARKUP_REF = "codex:[b]x[/b]"  # a chat's own reference: 14 characters, all shown
TAKER = ChatSpec("markup-mac", "markup", 6301, session_id="6c1f2e3d-4b5a-4c6d-8e7f-9a0b1c2d3e4f")


@pytest.fixture
def markup_fleet(workdir: Path) -> Iterator[Staged]:
    """The staged fleet plus a Mac whose name is markup, where the taker's chat lives."""
    folder = MacFolder("markup-mac")
    folder.write(TAKER)
    managed = Path("managed") / "markup-mac"
    managed.mkdir(parents=True)
    host = LocalHost(
        MARKUP_MAC,
        config_dir=folder.config_dir,
        platform=StillPlatform({TAKER.pid: TAKER.argv}),
        managed_dir=managed,
    )
    staged = stage(workdir, hosts={MARKUP_MAC: host})
    try:
        yield staged
    finally:
        staged.close()
        folder.close()


def toasts(app: Any) -> list[tuple[str, str]]:
    return [(notice.title, notice.message) for notice in app._notifications]


def drawn_toasts(app: Any) -> list[list[Strip]]:
    """Each toast on screen as the lines it draws itself, its padding included (nothing
    of the panes under it)."""
    return [
        toast.render_lines(Region(0, 0, toast.size.width, toast.outer_size.height))
        for toast in app.screen.query(Toast)
    ]


def bare(text: str) -> str:
    """A toast's words, its bar and the wrapping left out."""
    return "".join(text.replace(TOAST_BAR, "").split())


def assert_drawn_as_written(lines: list[Strip], title: str, *literal: str) -> None:
    segments = [segment for line in lines for segment in line]
    drawn = bare("".join(segment.text for segment in segments))
    for text in literal:
        assert bare(text) in drawn, (text, drawn)
    for segment in segments:
        style = segment.style
        if style is None:
            continue
        assert not style.link, f"a link in the toast: {segment!r}"
        assert "@click" not in (style.meta or {}), f"a clickable toast: {segment!r}"
    # Markup would have styled the `x` alone: every word of the message is in one style.
    words = [s.style for s in segments if s.text.strip() not in ("", TOAST_BAR, title)]
    looks = {(w.color, w.bgcolor, w.bold, w.underline) for w in words if w is not None}
    assert len(looks) == 1, looks
    [(_, _, bold, underline)] = looks
    assert not bold and not underline


async def adopt_by_enter(pilot: Pilot[None], session_id: int) -> tuple[str, str]:
    """Open the adoption review, select the taker, press enter; the toast it raised."""
    app: Any = pilot.app
    await open_with(pilot, "a", AdoptionScreen, WAIT)
    table = app.screen.query_one(TakersTable)
    key = str(session_id)
    await until(pilot, lambda: key in table.rows_by_key, WAIT, "the taker's row")
    await select_row(pilot, table, key)
    await pilot.press("enter")
    await until(pilot, lambda: toasts(app), WAIT, "the adoption's toast")
    [toast] = toasts(app)
    return toast


def test_the_adoption_toast_shows_a_markup_mac_name_as_literal_text(
    markup_fleet: Staged,
) -> None:
    taken: dict[str, int] = {}

    def take() -> None:
        todo = markup_fleet.todos["open"]
        taken["session"] = markup_fleet.engine().take_cli(todo, TAKER.ref, MARKUP_MAC)["session"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert toasts(app) == []
        await asyncio.to_thread(take)
        in_panes = lambda: taken["session"] in app.chats.by_session  # noqa: E731
        await until(pilot, in_panes, WAIT, "the take in the chats pane")
        title, message = await adopt_by_enter(pilot, taken["session"])
        assert title == "Adoption"
        # The take recorded no name: the taker is called what its Mac's registry calls it.
        called = f"{TAKER.name} ({TAKER.session_id[:8]})"
        assert message == f"{called}: adopted at generation 2 on {MARKUP_MAC}"
        assert Session.get_by_id(taken["session"]).mode == "managed"
        await until(
            pilot,
            lambda: any(bare(MARKUP_MAC) in bare(strip_text(t)) for t in drawn_toasts(app)),
            WAIT,
            "the Mac's name drawn as written",
        )
        [lines] = drawn_toasts(app)
        assert_drawn_as_written(lines, title, BOLD, LINK)

    drive(markup_fleet.app(), script)


def test_the_adoption_toast_shows_a_markup_chat_reference_as_literal_text(
    staged: Staged,
) -> None:
    taken: dict[str, int] = {}

    def take() -> None:
        todo = staged.todos["open"]
        taken["session"] = staged.engine().take_cli(todo, MARKUP_REF, "office")["session"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await asyncio.to_thread(take)
        title, message = await adopt_by_enter(pilot, taken["session"])
        assert (title, message) == ("Adoption", f"{MARKUP_REF}: not found")
        await until(
            pilot,
            lambda: any(bare(MARKUP_REF) in bare(strip_text(t)) for t in drawn_toasts(app)),
            WAIT,
            "the chat's reference drawn as written",
        )
        [lines] = drawn_toasts(app)
        assert_drawn_as_written(lines, title, MARKUP_REF)

    drive(staged.app(), script)


def strip_text(lines: list[Strip]) -> str:
    return "".join(line.text for line in lines)
