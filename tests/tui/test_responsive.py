"""The app fits the terminal: dialogs inside 80x24 (scrolling below it), columns that
drop by priority instead of being cut, panes that keep a row, a clean footer. And a Mac
that hangs costs its own timeout: keys still work, the other panes still follow the
ledger, and the Mac's row says why once its timeout has passed."""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any

import pytest
from ssh.sshd_harness import SilentServer
from textual.pilot import Pilot
from textual.widgets._header import HeaderIcon
from tuikit import Staged, drive, loaded, open_with, screen_text, select_row, settle, stage, until

from coop_tui.screens.dialogs import ConfirmResend, FilterDialog, InviteDialog
from coop_tui.screens.help import HelpScreen
from hosts.ssh import SshHost

pytestmark = pytest.mark.tui

# Long enough that the keys and the new row below come first even on a loaded machine:
# the order is the proof, and the timeout's own words say how long it waited.
HANG = 15.0


def survey_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name.startswith("survey"))


def laptop_row(app: Any) -> str:
    """The laptop's line in the Macs pane, as shown."""
    return next(line for line in screen_text(app).splitlines() if "│ laptop " in line)


def test_keys_and_panes_stay_live_while_a_mac_hangs_until_its_timeout(workdir: Path) -> None:
    silent = SilentServer()  # accepts the connection and never says a word
    (workdir / "known_hosts").touch()
    laptop = SshHost(
        "laptop",
        "127.0.0.1",
        port=silent.port,
        timeout=HANG,
        known_hosts=str(workdir / "known_hosts"),
        ssh_config=str(workdir / "no-ssh-config"),
    )
    staged = stage(workdir, hosts={"laptop": laptop})
    importer = staged.chats["importer"]

    def invite() -> str:
        engine = staged.engine()
        todo = engine.add_todo("Answer while the laptop hangs")["id"]
        return str(engine.invite(todo, importer.ref, "office")["outbox"])

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await until(pilot, lambda: "office" in app.surveys, what="the office answered")
        await until(pilot, lambda: app.outbox_pane.row_count == 11, what="the outbox")
        # The office's live chats are in the chats pane already.
        assert app.sessions_pane.rows_by_key[f"office/{importer.ref}"]["pid"] == importer.pid
        # Keys, screens and a new ledger row, all while the laptop is still being
        # waited for: none of them waits on the Mac.
        for key, pane in (("2", "sessions"), ("1", "hosts"), ("3", "outbox")):
            await pilot.press(key)
            await until(pilot, lambda pane=pane: app.focused.id == pane, what=pane)
        await open_with(pilot, "question_mark", HelpScreen)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="closed")
        outbox_id = await asyncio.to_thread(invite)
        await until(pilot, lambda: outbox_id in app.outbox_pane.rows_by_key, what="row")
        # The order is the proof, not a stopwatch: the laptop has not answered yet, and
        # the surveys every half second did not pile up threads behind it.
        assert "laptop" not in app.surveys
        assert "asking…" in laptop_row(app)
        assert survey_threads() <= 2
        await until(pilot, lambda: "laptop" in app.surveys, timeout=HANG + 30, what="laptop")
        reason = f"timed out after {HANG:g}s waiting for ssh from 127.0.0.1:{silent.port}"
        await until(pilot, lambda: reason in laptop_row(app), what="the reason shown")

    try:
        drive(staged.app(survey_interval=0.5), script)
    finally:
        staged.close()
        silent.close()


# --- fitting the terminal ------------------------------------------------------------------


def pane_lines(app: Any, title: str) -> list[str]:
    """The rows a pane shows under its header, as the screen shows them."""
    lines = screen_text(app).splitlines()
    top = next(i for i, line in enumerate(lines) if f"─ {title}" in line)
    bottom = next(i for i in range(top + 1, len(lines)) if lines[i].startswith("╰"))
    return lines[top + 2 : bottom]


def cells_cut_mid_word(app: Any, whole: str) -> list[str]:
    """Shown starts of `whole` that are neither all of it nor end in an ellipsis."""
    head = whole[:8]
    found = re.findall(re.escape(head) + r"\S*", screen_text(app))
    return [cell for cell in found if cell != whole and not cell.endswith("…")]


@pytest.mark.parametrize("size", [(80, 24), (60, 15), (100, 30)])
def test_columns_drop_by_priority_and_nothing_is_cut_mid_word(
    staged: Staged, size: tuple[int, int]
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await settle(pilot)
        for pane in (app.hosts_pane, app.sessions_pane, app.outbox_pane):
            dropped = {key for key, _, _ in pane.COLUMNS if key not in pane.columns}
            assert set(pane.DROP_FIRST[: len(dropped)]) == dropped  # the first to drop
        shown = {str(key.value) for key in app.sessions_pane.columns}
        if size[0] <= 80:
            assert not shown & {"join", "generation", "pid", "mode"}
        assert {"host", "name", "native", "inbound"} <= shown
        for whole in ("accept permission-mode-parity", "refused-by-receiver-policy"):
            assert cells_cut_mid_word(app, whole) == [], whole
        # The chats pane shows rows, not a bare border; at 80x24 more than two of them.
        chats = [
            line for line in pane_lines(app, "Chats") if "│ laptop" in line or "│ office" in line
        ]
        assert len(chats) >= (3 if size[1] >= 24 else 1)

    drive(staged.app(), script, size=size)


def test_every_column_is_back_at_160_columns(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        for pane in (app.hosts_pane, app.sessions_pane, app.outbox_pane):
            assert [str(key.value) for key in pane.columns] == [k for k, _, _ in pane.COLUMNS]

    drive(staged.app(), script)


@pytest.mark.parametrize("width", [60, 72, 80, 100, 120])
def test_the_footer_leaves_no_stray_character(staged: Staged, width: int) -> None:
    async def script(pilot: Pilot[None]) -> None:
        await loaded(pilot)
        footer = screen_text(pilot.app).splitlines()[-1]
        assert footer.rstrip().endswith("▏^p palette"), footer

    drive(staged.app(), script, size=(width, 24))


def inside_the_screen(app: Any) -> None:
    """The dialog and every widget in it lie inside the terminal."""
    screen = app.screen.region
    dialog = app.screen.query_one("#dialog")
    assert screen.contains_region(dialog.region), (dialog.region, screen)


@pytest.mark.parametrize("size", [(80, 24), (60, 15)])
def test_every_dialog_fits_the_terminal_and_scrolls_below_it(
    staged: Staged, size: tuple[int, int]
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, staged.outbox["flaky"])
        await open_with(pilot, "r", ConfirmResend)
        loading = "Loading the proof"
        await until(pilot, lambda: loading not in screen_text(app), what="the proof")
        await settle(pilot)
        inside_the_screen(app)
        dialog = app.screen.query_one("#dialog")
        cancel = app.screen.query_one("#no")
        if size == (80, 24):
            assert dialog.region.contains_region(cancel.region)  # Cancel whole
            assert "Cancel (n)" in screen_text(app)
        else:
            assert dialog.max_scroll_y > 0  # too short: the dialog scrolls
            dialog.scroll_end(animate=False)
            await settle(pilot)
            assert "Cancel (n)" in screen_text(app)
        # Wrapped at words: no line of the dialog ends inside one.
        assert "made once." in screen_text(app) or size != (80, 24)
        await pilot.press("n")
        for key, kind in (("f", FilterDialog), ("i", InviteDialog)):
            await until(pilot, lambda: not isinstance(app.screen, ConfirmResend), what="closed")
            await pilot.press(key)
            await until(pilot, lambda kind=kind: isinstance(app.screen, kind), what=key)
            await settle(pilot)
            inside_the_screen(app)
            await pilot.press("escape")
        await open_with(pilot, "question_mark", HelpScreen)
        help_region = app.screen.query_one("#help").region
        assert app.screen.region.contains_region(help_region)

    drive(staged.app(), script, size=size)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_header_says_it_in_fewer_words_before_anything_is_cut(
    staged: Staged, size: tuple[int, int]
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        app.CLAIM_CHECK_SECONDS = 0.2
        await loaded(pilot)
        counts = "3 expired · 1 held · 2 pending"
        await until(pilot, lambda: "watch only" in header_line(app), what="the coordinator")
        await until(pilot, lambda: counts in header_line(app), what="the counts")
        await until(pilot, lambda: "unread" in header_line(app), what="the badge")
        line = header_line(app)
        assert "…" not in line
        icon = app.screen.query_one(HeaderIcon)
        if size[0] == 80:
            # The icon and the title go first, then the badge's words.
            assert "no coordinator (watch only) · 3 expired" in line, line
            assert "4 unread (!)" in line and "Coop —" not in line, line
            assert not icon.display
        else:
            assert "Coop — no coordinator (watch only) · 3 expired" in line
            assert "4 unread notices (!)" in line and icon.display
        # Narrower, narrower still, then wide again: the header follows the terminal.
        # From here nothing but a resize tells the header anything new.
        app._coordinator_told = lambda truth: None
        app._attention_read = lambda counts, unread: None
        await pilot.resize_terminal(60, 15)
        short = "watch only · 3 expired · 1 held · 2 pending · 4 unread (!)"
        await until(pilot, lambda: short in header_line(app), what="the narrow header")
        await pilot.resize_terminal(51, 15)
        shortest = "watch only · 3 expired · 1 held · 2 pending · 4 (!)"
        await until(pilot, lambda: shortest in header_line(app), what="the narrowest header")
        await pilot.resize_terminal(160, 48)
        long = "Coop — no coordinator (watch only)"
        await until(pilot, lambda: long in header_line(app), what="the wide header")
        assert icon.display

    drive(staged.app(), script, size=size)


def header_line(app: Any) -> str:
    return " ".join(screen_text(app).splitlines()[0].split())


def test_a_confirmation_shows_its_own_keys_in_its_footer(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, staged.outbox["flaky"])
        await open_with(pilot, "r", ConfirmResend)
        await settle(pilot)
        footer = " ".join(screen_text(app).splitlines()[-1].split())
        assert "y Send again" in footer and "Cancel" in footer, footer
        assert "Notices" not in footer and "Adoption" not in footer, footer

    drive(staged.app(), script, size=(80, 24))


async def fitted(
    pilot: Pilot[None], key: str, screen: type[Any], kind: type[Any], rows: int = 1
) -> tuple[Any, set[str]]:
    """The table of the screen `key` opens, once it has `rows` rows and is fitted, and
    the columns it dropped (asserted to be the first of its DROP_FIRST)."""
    await loaded(pilot)
    await open_with(pilot, key, screen)
    table = pilot.app.screen.query_one(kind)
    await until(pilot, lambda: table.row_count >= rows, what=f"{rows} rows")
    await settle(pilot)
    dropped = {name for name, _, _ in table.COLUMNS if name not in table.columns}
    assert set(table.DROP_FIRST[: len(dropped)]) == dropped  # the first to drop
    return table, dropped


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_adoption_review_drops_columns_before_the_answer_is_cut(
    staged: Staged, size: tuple[int, int]
) -> None:
    from coop_tui.screens.adoption import AdoptionScreen, TakersTable

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        table, dropped = await fitted(pilot, "a", AdoptionScreen, TakersTable, rows=2)
        answer = "refused: another enrollment names this chat on office"
        assert answer in screen_text(app)
        if size[0] == 80:
            assert {"hold", "searched"} <= dropped
        else:
            assert "hold" not in dropped and "2026-05-06 09:07Z" in screen_text(app)

    drive(staged.app(), script, size=size)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_the_notices_drop_columns_before_a_value_is_cut(
    staged: Staged, size: tuple[int, int]
) -> None:
    from coop_engine import queries
    from coop_tui.screens.notices import NoticesTable, NotificationsScreen

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        table, dropped = await fitted(pilot, "exclamation_mark", NotificationsScreen, NoticesTable)
        assert bool(dropped) == (size[0] == 80)
        shown = [c for c in table.COLUMNS if c[0] in table.columns and c[0] != table.FLEX]
        text = screen_text(app)
        newest = [table.rows_by_key[str(n["id"])] for n in queries.notifications(limit=3)]
        for row in newest:
            for _, _, cell in shown:
                assert str(cell(row)) in text  # whole, never cut mid-value

    drive(staged.app(), script, size=size)
