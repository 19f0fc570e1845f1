"""A toast names the chat a decision is about; the name is the chat's, so it is shown as
the characters it holds: markup never styles it, a link tag never links, an escape
sequence is printed, never sent (STYLE.md: one escaper for untrusted text)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.geometry import Region
from textual.pilot import Pilot
from textual.strip import Strip
from textual.widgets._toast import Toast
from tuikit import TOAST_BAR, Staged, drive, loaded, until

from coop_engine.models import Outbox, Session

pytestmark = pytest.mark.tui

WAIT = 20.0
BOLD = "[bold red]x[/]"
LINK = "[link=file:///etc]y[/link]"
ESCAPE = "\x1b[31m"
HOSTILE = f"{BOLD} {LINK} {ESCAPE}red"


def toasts(app: Any) -> list[tuple[str, str]]:
    return [(notice.title, notice.message) for notice in app._notifications]


def drawn_toasts(app: Any) -> list[list[Strip]]:
    """Each toast on screen as the lines it draws itself (nothing of the panes under it)."""
    return [
        toast.render_lines(Region(0, 0, toast.size.width, toast.size.height))
        for toast in app.screen.query(Toast)
    ]


def toast_text(lines: list[Strip]) -> str:
    """A toast's words, its bar and the wrapping left out."""
    return "".join("".join(line.text for line in lines).replace(TOAST_BAR, "").split())


def test_a_conflict_toast_shows_a_hostile_chat_name_as_literal_text(staged: Staged) -> None:
    docs_work = staged.outbox["docs_work"]

    def conflict() -> None:
        session_id = Outbox.get_by_id(docs_work).session_id
        Session.update(name=HOSTILE).where(Session.id == session_id).execute()
        staged.engine(actor="coop").record_conflict(
            docs_work, {"reason": "wrong-provenance", "offset": 91}
        )

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert toasts(app) == []
        await asyncio.to_thread(conflict)
        await until(pilot, lambda: toasts(app), WAIT, "the conflict's toast")
        [(title, message)] = toasts(app)
        assert title == "Delivery conflict"
        # The escape arrives as its printed form; nothing else of the name is changed.
        printed = f"{BOLD} {LINK} \\x1b[31mred"
        short = staged.chats["docs"].session_id[:8]
        assert message.startswith(
            f"chat {printed} ({short}) on laptop todo #{staged.todos['docs']} "
        )
        assert "\x1b" not in message
        bare = "".join(printed.split())
        await until(
            pilot,
            lambda: any(bare in toast_text(lines) for lines in drawn_toasts(app)),
            WAIT,
            "the name drawn as written",
        )
        [lines] = drawn_toasts(app)
        segments = [segment for line in lines for segment in line]
        assert not any("\x1b" in segment.text for segment in segments)
        for segment in segments:
            style = segment.style
            if style is None:
                continue
            assert not style.link, f"a link in the toast: {segment!r}"
            assert "@click" not in (style.meta or {}), f"a clickable toast: {segment!r}"
        # Markup would have styled the `x` alone: every word of the message is in one style.
        words = [s for s in segments if s.text.strip() not in ("", TOAST_BAR, title)]
        assert any(BOLD in s.text for s in words) and any("\\x1b[31m" in s.text for s in words)
        looks = {(s.style.color, s.style.bgcolor, s.style.bold, s.style.underline) for s in words}
        assert len(looks) == 1, looks
        [(_, _, bold, underline)] = looks
        assert not bold and not underline

    drive(staged.app(), script)
