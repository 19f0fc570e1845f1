"""Codex threads in the app as Claude chats are: one row each, called by its name beside
a short id of its own (two threads made the same minute share their first eight
characters), `open` or `saved`, its route through Codex's queue; in the invite dialog
beside the Claude chats; and in the chat inspector, its record and its rollout's tail,
on this Mac and on another. Real processes: the Codex simulator's threads, its `codex
app-server`, and a holder that keeps a thread open as Codex Desktop does."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from codexkit import MAC, WAIT, CodexMac
from textual.pilot import Pilot
from textual.widgets import OptionList
from tuikit import (
    Staged,
    drive,
    flat,
    loaded,
    open_with,
    screen_text,
    select_row,
    settle,
    shows,
    stage,
    until,
)

from coop_engine.models import Outbox, Session
from coop_tui.screens.dialogs import InviteDialog
from coop_tui.screens.inspector import InspectorScreen
from hosts.pipe import PipeHost
from hosts.sim.launch import codex_thread

pytestmark = pytest.mark.tui

# Two threads of the same minute: their ids share `019c8a4d-` (UUIDv7, time first).
SHIP = "019c8a4d-1f45-7010-8b5d-7fad920aa6f9"
DOCS = "019c8a4d-2a70-7f33-98ea-f30553347322"
SHIP_SHORT, DOCS_SHORT = "019c8a4d-1", "019c8a4d-2"
World = tuple[Staged, CodexMac]


def toasts(app: Any) -> list[str]:
    return [notice.message for notice in app._notifications]


def codex_rows(app: Any) -> list[dict[str, Any]]:
    return [row for row in app.sessions_pane.rows_by_key.values() if row["vendor"] == "codex"]


def chats_line(app: Any, text: str) -> str:
    """The chats pane's line that shows `text`."""
    return next(line for line in screen_text(app).splitlines() if f" {text} " in line)


async def chats_surveyed(pilot: Pilot[None], count: int) -> None:
    app: Any = pilot.app
    await loaded(pilot)
    await until(pilot, lambda: len(codex_rows(app)) == count, WAIT, f"{count} Codex threads")
    await settle(pilot)


def two_threads(mac: CodexMac) -> None:
    """`ship it`, held open by a holder, and `release notes`, saved."""
    mac.thread("--thread-id", SHIP, "--name", "ship it")
    mac.thread("--thread-id", DOCS, "--name", "release notes")
    mac.holder(SHIP)


def test_each_codex_thread_is_one_row_named_with_its_own_short_id_open_or_saved(
    studio: World,
) -> None:
    staged, mac = studio
    two_threads(mac)
    # One of them is enrolled already: it is still one row, the ledger's, now live.
    outbox_id = str(mac.invite(staged, SHIP, "Ship the Codex door")["outbox"])

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await chats_surveyed(pilot, 2)
        rows = {row["native_id"]: row for row in codex_rows(app)}
        assert set(rows) == {SHIP, DOCS}
        assert rows[SHIP]["id"] is not None and rows[SHIP]["mode"] == "managed"
        assert (rows[SHIP]["short"], rows[DOCS]["short"]) == (SHIP_SHORT, DOCS_SHORT)
        assert (rows[SHIP]["status"], rows[DOCS]["status"]) == ("open", "saved")
        ship, docs = chats_line(app, SHIP_SHORT), chats_line(app, DOCS_SHORT)
        assert "│ studio" in ship and "ship it" in ship and " open " in ship
        assert "release notes" in docs and " saved " in docs and " live " in docs
        assert "queued in Codex" in ship and "queued in Codex" in docs
        assert "unknown" not in ship
        # The outbox calls the envelope's thread by the same name and short id.
        envelope = next(line for line in screen_text(app).splitlines() if outbox_id[:8] in line)
        assert f"ship it codex:{SHIP_SHORT} studio" in " ".join(envelope.split())

    drive(staged.app(survey_interval=60.0), script)


def test_the_invite_dialog_lists_codex_threads_and_invites_one_as_coop_invite_does(
    studio: World,
) -> None:
    staged, mac = studio
    two_threads(mac)
    todo = staged.todos["open"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await chats_surveyed(pilot, 2)
        dialog = await open_with(pilot, "i", InviteDialog)
        todos = dialog.query_one("#todos", OptionList)
        await until(pilot, lambda: todos.option_count > 0, what="the todos")
        todos.highlighted = todos.get_option_index(str(todo))
        await pilot.press("enter")
        chats = dialog.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        shown = flat(screen_text(app))
        # Beside the Claude chats, each thread with its route through Codex's queue.
        assert "importer" in shown and "accepts" in shown
        saved = "saved queued in Codex: waits until"
        assert f"studio release notes codex:{DOCS_SHORT} {saved}" in shown
        assert f"studio ship it codex:{SHIP_SHORT} open queued in Codex: picked up" in shown
        chats.highlighted = chats.get_option_index(f"{MAC}|codex:{DOCS}")
        await pilot.press("enter")
        said = f"Invited release notes (codex:{DOCS_SHORT}) on {MAC} to #{todo}"
        await until(pilot, lambda: any(said in t for t in toasts(app)), WAIT, "the toast")
        row = await until_row(pilot, todo)
        assert (row["session"], row["host"], row["kind"]) == (f"codex:{DOCS}", MAC, "invitation")

    drive(staged.app(survey_interval=60.0), script)
    session = Session.get((Session.vendor == "codex") & (Session.native_id == DOCS))
    # What `coop invite --session codex:ID` records: the thread's name and folder.
    assert (session.host, session.name, session.cwd, session.mode) == (
        MAC,
        "release notes",
        "/srv/app",
        "managed",
    )
    assert Outbox.get(Outbox.session == session.id).state == "pending"


async def until_row(pilot: Pilot[None], todo: int) -> dict[str, Any]:
    app: Any = pilot.app

    def invited() -> Any:
        rows = app.outbox_pane.rows_by_key.values()
        return next((r for r in rows if r["todo"] == todo), None)

    await until(pilot, invited, WAIT, "the invitation row")
    found: dict[str, Any] = invited()
    return found


def test_the_inspector_shows_a_threads_record_and_rollout_tail_its_receipt_marked(
    studio: World,
) -> None:
    staged, mac = studio
    two_threads(mac)
    invited = mac.invite(staged, SHIP, "Answer from an open thread")
    outbox_id = str(invited["outbox"])
    mac.tick_until(staged, outbox_id, lambda row: row["facts"]["accepted"])

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await chats_surveyed(pilot, 2)
        key = next(
            k for k, row in app.sessions_pane.rows_by_key.items() if row["short"] == SHIP_SHORT
        )
        await select_row(pilot, app.sessions_pane, key)
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Codex thread" in screen_text(app), WAIT, "the record")
        shown = screen_text(app)
        assert f"ship it (codex:{SHIP_SHORT}) on {MAC}" in shown  # the sub-title
        assert "open: some process holds it" in shown
        assert SHIP in shown and "/srv/app" in shown and "0.171.0" in shown
        assert "Route: queued in Codex: picked up within about 10 s" in shown
        path = app.screen.found["entry"]["rollout_path"]
        assert SHIP in path and shows(app, f"Rollout: {path}")
        lines = shown.splitlines()
        receipt = [line for line in lines if f"client_id {outbox_id}" in line]
        assert receipt and receipt[0].lstrip().startswith("◆"), receipt
        finals = [line for line in lines if "task_complete FINAL" in line]
        assert any(f"COOP_ACCEPT {invited['nonce']}" in line for line in finals), finals
        assert all(line.lstrip().startswith("■") for line in finals)
        await pilot.press("J")  # the record as the Mac's thread list gives it
        await until(pilot, lambda: '"rollout_path"' in screen_text(app), what="raw JSON")
        assert f'"id": "{SHIP}"' in screen_text(app)

    drive(staged.app(survey_interval=60.0), script)


@pytest.fixture
def laptop_codex(workdir: Path) -> Iterator[Staged]:
    """The staged office, and a laptop with a saved Codex thread, asked through the
    helper (a PipeHost: the protocol ssh uses) with its own CODEX_HOME."""
    home = (workdir / "pipe-laptop" / "codex").absolute()
    config = workdir / "pipe-laptop" / "claude"
    (config / "sessions").mkdir(parents=True)
    codex_thread(home, "--thread-id", DOCS, "--name", "release notes", "--cwd", "/srv/docs")
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(config), "CODEX_HOME": str(home)}
    laptop = PipeHost("laptop", env=env)
    try:
        staged = stage(workdir, hosts={"laptop": laptop})
        try:
            yield staged
        finally:
            staged.close()
    finally:
        laptop.close()


def test_the_inspector_reads_a_codex_thread_on_another_mac_through_the_helper(
    laptop_codex: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await chats_surveyed(pilot, 1)
        await select_row(pilot, app.sessions_pane, f"laptop/codex:{DOCS}")
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Codex thread" in screen_text(app), WAIT, "the record")
        shown = screen_text(app)
        assert "saved: nobody holds it open" in shown and "/srv/docs" in shown
        assert "Route: queued in Codex: waits until the thread is opened" in shown
        assert "session_meta" in shown and "codex-tui 0.171.0 in /srv/docs" in shown
        assert "■" in shown and "task_complete FINAL" in shown

    drive(laptop_codex.app(survey_interval=60.0), script)
