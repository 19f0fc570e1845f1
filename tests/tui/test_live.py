"""The panes follow the ledger whoever writes it, and a laptop's chats are read through
the same helper protocol as over ssh."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import T0, Staged, drive, loaded, open_with, screen_text, select_row, stage, until

from coop_engine.models import Outbox, Session, database
from coop_engine.queries import OUTBOX_WINDOW as WINDOW
from coop_tui.app import CoopApp
from coop_tui.screens.inspector import InspectorScreen
from hosts.pipe import PipeHost
from hosts.sim.launch import SimChat, SimFleet

pytestmark = pytest.mark.tui

REPO = Path(__file__).resolve().parents[2]


# A generous bound on a hang only: with the poll out of the way, what brings the change
# is the watch on the ledger file, however long the machine takes.
WAIT = 30.0


def watched_only(staged: Staged) -> CoopApp:
    """The staged app with its fallback poll of the ledger put off for an hour: a change
    it shows came through the watch on the ledger file."""
    app = staged.app()
    app.LEDGER_POLL_SECONDS = 3600.0
    return app


def coop(home: Path, *args: str) -> str:
    """The real CLI in another process, as a script or another terminal would run it."""
    result = subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", "--home", str(home), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        check=True,
    )
    return result.stdout.strip()


INVITE = (
    "import sys; from coop_engine.db import open_ledger; from coop_engine.engine import Engine;"
    " from pathlib import Path; e = Engine(open_ledger(Path(sys.argv[1])), actor='dad');"
    " print(e.invite(int(sys.argv[2]), sys.argv[3], 'office')['outbox'])"
)


def invite_elsewhere(home: Path, todo: str, ref: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", INVITE, str(home), todo, ref],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=30,
        check=True,
    )
    return done.stdout.strip()


def test_the_outbox_shows_an_invitation_made_by_another_process_when_the_file_changes(
    staged: Staged,
) -> None:
    importer = staged.chats["importer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        todo = await asyncio.to_thread(
            coop, staged.home, "todo", "add", "Write the migration guide"
        )
        # Another process writes the invitation (the staged chats' processes are played
        # by the test's platform, so `coop invite` would find none of them live).
        outbox_id = await asyncio.to_thread(invite_elsewhere, staged.home, todo, importer.ref)
        await until(
            pilot, lambda: outbox_id in app.outbox_pane.rows_by_key, WAIT, "the new invitation"
        )
        assert app.outbox_pane.rows_by_key[outbox_id]["todo"] == int(todo)
        assert "Outbox · 12 envelopes" in screen_text(app)

    drive(watched_only(staged), script)


def test_a_row_changed_by_another_thread_is_patched_in_place_when_the_file_changes(
    staged: Staged,
) -> None:
    held = staged.outbox["reviewer_again"]

    def expire() -> None:
        staged.engine(actor="coop").expire(
            held,
            {"reason": "held-for-approval-then-expired", "message_id": held, "observed_at": 0},
        )

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert app.outbox_pane.rows_by_key[held]["state"] == "uncertain"
        await asyncio.to_thread(expire)
        await until(
            pilot,
            lambda: app.outbox_pane.rows_by_key[held]["state"] == "expired",
            WAIT,
            "the row expired",
        )
        line = next(line for line in screen_text(app).splitlines() if held[:8] in line)
        assert "expired" in line and "held-for-approval-then-expired" in line

    drive(watched_only(staged), script)


@pytest.fixture
def laptop_over_pipe(workdir: Path) -> Iterator[tuple[Staged, SimChat]]:
    """The staged office, and a laptop whose Claude folder holds one live simulated
    chat, asked through a PipeHost (the helper protocol ssh uses)."""
    sockets = Path(tempfile.mkdtemp(prefix="ct", dir="/tmp"))  # AF_UNIX paths stay short
    config = workdir / "pipe-laptop" / "claude"
    config.mkdir(parents=True)
    chats = SimFleet(config, socket_dir=sockets)
    laptop = PipeHost("laptop", env={**os.environ, "CLAUDE_CONFIG_DIR": str(config)})
    try:
        chat = chats.start("--name", "notes", "--history", "--think", "0.05")
        staged = stage(workdir, hosts={"laptop": laptop})
        try:
            yield staged, chat
        finally:
            staged.close()
    finally:
        laptop.close()
        chats.stop_all()
        shutil.rmtree(sockets, ignore_errors=True)


def test_inspecting_a_laptop_chat_reads_it_through_the_helper(
    laptop_over_pipe: tuple[Staged, SimChat],
) -> None:
    staged, chat = laptop_over_pipe

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        key = f"laptop/{chat.ref}"
        await until(pilot, lambda: key in app.sessions_pane.rows_by_key, what="the live chat")
        assert app.sessions_pane.rows_by_key[key]["pid"] == chat.pid
        await select_row(pilot, app.sessions_pane, key)
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Registry entry" in screen_text(app), what="read")
        assert f"pid {chat.pid}" in screen_text(app)
        await pilot.press("J")
        await until(pilot, lambda: '"sessionId"' in screen_text(app), what="raw JSON")
        shown = screen_text(app)
        assert f'"sessionId": "{chat.session_id}"' in shown
        assert f'"pid": {chat.pid}' in shown
        assert "Socket: ok" in shown
        # A long path wraps to its own lines at the screen's edge: read them joined.
        joined = "".join(line.strip() for line in shown.splitlines())
        assert "Transcript:" in shown and str(chat.transcript) in joined
        assert "Have a look around this project" in shown

    drive(staged.app(), script)


def test_a_new_envelope_joins_a_full_window_at_the_top_and_the_oldest_leaves(
    staged: Staged,
) -> None:
    """The pane shows the newest 300 of a longer history; one more envelope costs one
    row: it appears first, the oldest shown leaves, the cursor keeps its envelope."""
    importer = staged.chats["importer"]
    older = [str(uuid.UUID(int=(1 << 64) + n)) for n in range(WINDOW + 50)]
    session = Session.get(Session.native_id == importer.session_id)
    with database.obj.atomic():
        Outbox.insert_many(
            {
                "id": outbox_id,
                "session": session.id,
                "generation": 1,
                "kind": "work",
                "payload": {"text": "history"},
                "state": "delivered",
                "created_at": T0 - 86400 + n,
                "updated_at": T0 - 86400 + n,
            }
            for n, outbox_id in enumerate(older)
        ).execute()
    total = WINDOW + 50 + 11

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        pane = app.outbox_pane
        assert pane.row_count == WINDOW
        assert f"Outbox · {total} envelopes, newest {WINDOW} shown" in screen_text(app)
        selected = pane.selected_key()
        oldest_shown = pane.coordinate_to_cell_key((WINDOW - 1, 0)).row_key.value
        staged.clock.advance(60)
        outbox_id = await asyncio.to_thread(
            lambda: staged.engine().invite(staged.todos["open"], importer.ref, "office")["outbox"]
        )
        await until(pilot, lambda: outbox_id in pane.rows_by_key, what="the new row")
        assert pane.coordinate_to_cell_key((0, 0)).row_key.value == outbox_id
        assert pane.row_count == WINDOW and oldest_shown not in pane.rows_by_key
        assert pane.selected_key() == selected
        assert f"Outbox · {total + 1} envelopes, newest {WINDOW} shown" in screen_text(app)

    drive(staged.app(), script)
