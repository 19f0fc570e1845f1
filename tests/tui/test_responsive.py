"""A Mac that hangs costs its own timeout: keys still work, the other panes still
follow the ledger, and the Mac's row says why once its timeout has passed."""

from __future__ import annotations

import asyncio
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from ssh.sshd_harness import SilentServer
from textual.pilot import Pilot
from tuikit import drive, screen_text, stage, until

from coop_tui.screens.help import HelpScreen
from hosts.ssh import SshHost

pytestmark = pytest.mark.tui

HANG = 6.0  # long enough that everything below happens inside it, even on a busy machine


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
        started = time.monotonic()
        await until(pilot, lambda: "office" in app.surveys, what="the office answered")
        await until(pilot, lambda: app.outbox_pane.row_count == 11, what="the outbox")
        # The office's live chats are in the chats pane already.
        assert app.sessions_pane.rows_by_key[f"office/{importer.ref}"]["pid"] == importer.pid
        # Keys, screens and a new ledger row, all while the laptop is still being
        # waited for: none of them waits on the Mac.
        for key, pane in (("2", "sessions"), ("1", "hosts"), ("3", "outbox")):
            await pilot.press(key)
            await until(pilot, lambda pane=pane: app.focused.id == pane, what=pane)
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen), what="help")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="closed")
        outbox_id = await asyncio.to_thread(invite)
        await until(pilot, lambda: outbox_id in app.outbox_pane.rows_by_key, what="row")
        # The order is the proof, not a stopwatch: the laptop has not answered yet, and
        # the surveys every half second did not pile up threads behind it.
        assert "laptop" not in app.surveys
        assert "asking…" in laptop_row(app)
        assert survey_threads() <= 2
        await until(pilot, lambda: "laptop" in app.surveys, timeout=HANG + 5, what="laptop")
        assert time.monotonic() - started > HANG - 0.5  # it really did hang that long
        reason = f"timed out after {HANG:g}s waiting for ssh from 127.0.0.1:{silent.port}"
        await until(pilot, lambda: reason in laptop_row(app), what="the reason shown")

    try:
        drive(staged.app(survey_interval=0.5), script)
    finally:
        staged.close()
        silent.close()
