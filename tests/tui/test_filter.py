"""The outbox filter: any case, every column the outbox shows (reasons and chat names
included), every word must match, and an empty result says so."""

from __future__ import annotations

from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input
from tuikit import Staged, drive, loaded, open_with, screen_text, until

from coop_engine import queries
from coop_engine.models import Outbox, Session
from coop_tui.screens.dialogs import FilterDialog

pytestmark = pytest.mark.tui


def matched(text: str) -> set[str]:
    window = queries.outbox_window(text=text)
    assert window.total == len(window.rows)  # the staged outbox is smaller than the window
    return {row["id"] for row in window.rows}


def ids(condition: Any) -> set[str]:
    return {row.id for row in Outbox.select(Outbox.id).join(Session).where(condition)}


def test_a_filter_word_matches_in_any_case(staged: Staged) -> None:
    expired = ids(Outbox.state == "expired")
    assert len(expired) == 3
    assert matched("expired") == matched("EXPIRED") == matched("Expired") == expired


def test_a_filter_word_matches_a_reason_the_outbox_shows(staged: Staged) -> None:
    assert matched("idle-without") == {staged.outbox["flaky"]}
    assert matched("REFUSED-BY") == {staged.outbox["locked"]}
    # A conflict or a last error is the reason column too.
    gone = ids(Outbox.last_error.is_null(False))
    assert gone and matched("no live chat") >= gone


def test_a_filter_word_matches_a_chat_name_and_a_mac(staged: Staged) -> None:
    assert matched("reviewer") == ids(Session.name == "reviewer")
    assert matched("laptop") == ids(Session.host == "laptop")


def test_filter_words_combine_every_one_must_match(staged: Staged) -> None:
    both = matched("expired office")
    assert both == ids((Outbox.state == "expired") & (Session.host == "office"))
    assert matched("delivered laptop") == ids(
        (Outbox.state == "delivered") & (Session.host == "laptop")
    )
    assert matched("expired laptop") == set()
    assert matched("  expired   ") == matched("expired")


def test_a_todo_by_number_and_an_id_by_its_start(staged: Staged) -> None:
    locked = staged.outbox["locked"]
    assert matched(locked[:6].upper()) == {locked}
    todo = Outbox.get_by_id(staged.outbox["docs_work"]).dispatch.todo_id
    assert {row["todo"] for row in queries.outbox_window(text=f"#{todo}").rows} == {todo}


def test_wildcards_in_a_filter_word_are_literal(staged: Staged) -> None:
    for word in ("%", "_", "50%", "\\", 'reason": "'):
        assert matched(word) == set(), word


def test_a_filter_matching_nothing_says_no_envelope_matches(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "f", FilterDialog)
        app.screen.query_one(Input).value = ""
        await pilot.press(*"nothing-has-this", "enter")
        await until(pilot, lambda: app.outbox_pane.row_count == 0, what="an empty window")
        await until(
            pilot, lambda: "no envelope matches" in screen_text(app), what="the empty words"
        )
        await pilot.press("escape")
        await until(pilot, lambda: app.outbox_pane.row_count == 11, what="every envelope")
        assert "no envelope matches" not in screen_text(app)

    drive(staged.app(), script)


def test_the_filter_applies_as_it_is_typed_and_escape_puts_the_old_one_back(
    staged: Staged,
) -> None:
    expired = ids(Outbox.state == "expired")

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "f", FilterDialog)
        app.screen.query_one(Input).value = ""
        await pilot.press(*"EXPIRED")  # no enter: the outbox follows the typing
        await until(pilot, lambda: set(app.outbox_pane.rows_by_key) == expired, what="live filter")
        assert isinstance(app.screen, FilterDialog)  # still typing
        await pilot.press("escape")  # cancel: the filter before the dialog (none)
        await until(pilot, lambda: app.outbox_pane.row_count == 11, what="every envelope")
        assert app.text_filter is None

    drive(staged.app(), script)
