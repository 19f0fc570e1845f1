"""Adoption review keeps what each search found: after a pass adopts one CLI taker and
refuses another, both rows stay, with where each Mac was asked and what it answered,
until Dad dismisses one with `d` (the dismissal recorded, the search record kept)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import Staged, drive, loaded, open_with, screen_text, select_row, until

from coop_engine.errors import ENROLLMENT_CLASH
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.models import Event, Session
from coop_engine.takes import ADOPTION_RETRY_SECONDS
from coop_tui.screens.adoption import AdoptionScreen, TakersTable

pytestmark = pytest.mark.tui

WAIT = 20.0


def test_adopted_and_refused_rows_stay_until_d_dismisses_one(staged: Staged) -> None:
    taker = staged.chats["taker"]  # live on the laptop it declared: adopted
    importer = staged.chats["importer"]  # enrolled on the office already: refused
    results: list[dict[str, Any]] = []
    ids: dict[str, int] = {}

    def adoption_pass() -> None:
        # A take naming the importer's chat, declared on the laptop: found on the office,
        # where another enrollment names it.
        staged.engine().take_cli(staged.todos["open"], importer.ref, "laptop")
        staged.clock.advance(ADOPTION_RETRY_SECONDS + 1)  # the taker is due again
        coop = staged.engine(actor="coop")
        results.extend(AdoptionPass(coop, staged.fleet.hosts, "office", log=print).run())

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await asyncio.to_thread(adoption_pass)
        by_chat = {result["session"]: result["result"] for result in results}
        assert by_chat[taker.ref] == "adopted at generation 2 on laptop"
        assert by_chat[importer.ref].startswith("refused: ")
        adopted = Session.get(Session.native_id == taker.session_id)
        refused = Session.get(
            (Session.native_id == importer.session_id) & (Session.host == "laptop")
        )
        assert adopted.mode == "managed" and refused.mode == "observed"
        ids.update(adopted=adopted.id, refused=refused.id)

        await open_with(pilot, "a", AdoptionScreen, WAIT)
        table = app.screen.query_one(TakersTable)
        keys = str(adopted.id), str(refused.id)
        await until(pilot, lambda: all(key in table.rows_by_key for key in keys), WAIT, "both rows")
        rows = table.rows_by_key
        # Where each Mac was asked, what it answered, and when, as stored and as shown.
        assert rows[keys[0]]["adoption"]["searched"] == [{"host": "laptop", "matches": 1}]
        assert rows[keys[0]]["adoption"]["result"] == "adopted at generation 2 on laptop"
        assert rows[keys[1]]["adoption"]["searched"] == [
            {"host": "laptop", "matches": 0},
            {"host": "office", "matches": 1},
        ]
        clash = ENROLLMENT_CLASH.format(host="office", id="")
        assert rows[keys[1]]["adoption"]["result"].startswith(f"refused: {clash}")
        assert all(rows[key]["searched_at"] for key in keys)
        assert rows[keys[1]]["refused_until"] and not rows[keys[0]]["refused_until"]
        lines = screen_text(app).splitlines()
        adopted_line = next(line for line in lines if taker.session_id[:8] in line)
        refused_line = next(line for line in lines if importer.session_id[:8] in line)
        assert "laptop: 1 match" in adopted_line and "adopted at generation 2" in adopted_line
        assert "laptop: none; office: 1 match" in refused_line
        assert "refused: Another enrollment" in refused_line
        for key in keys:  # when each was asked: the WHEN column (the table scrolls to it)
            at = rows[key]["searched_at"]
            assert table.get_cell(key, "tried").plain == f"{at[:10]} {at[11:16]}Z"

        await select_row(pilot, table, keys[0])
        await pilot.press("d")
        await until(
            pilot, lambda: keys[0] not in table.rows_by_key, WAIT, "the adopted row dismissed"
        )
        assert keys[1] in table.rows_by_key
        assert refused.native_id[:8] in screen_text(app)

    drive(staged.app(), script)
    dismissal = Event.get(
        (Event.command == "dismiss_adoption") & (Event.subject == f"session:{ids['adopted']}")
    )
    assert dismissal.who == "dad"
    kept = Session.get_by_id(ids["adopted"]).adoption
    assert kept["dismissed_at"] and kept["searched"] == [{"host": "laptop", "matches": 1}]
    assert not (Session.get_by_id(ids["refused"]).adoption or {}).get("dismissed_at")
