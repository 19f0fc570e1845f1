"""`s` sorts by value: an age, a todo, a pid, a count or a time sorts as the number or
moment it is (`45s` before `3m`, `#7` before `#10`, pid 999 before 4101), never as its
text; an empty value (`-`) comes last."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from tuikit import ChatSpec, Staged, drive, loaded, screen_text, stage

from coop_tui.widgets.cells import parse_iso

pytestmark = pytest.mark.tui


@pytest.fixture
def numbered(workdir: Path) -> Iterator[Staged]:
    """The staged fleet with a chat of a three-digit pid, invited to todo #10 half a
    minute ago."""
    staged = stage(workdir, extra=[ChatSpec("office", "tiny", 999)])
    tiny = staged.chats["tiny"]
    staged.engine().invite(staged.todos["open"], tiny.ref, "office", name="tiny", cwd=tiny.cwd)
    staged.clock.advance(30)  # its invitation is `30s` old, younger than the `1m` ones
    try:
        yield staged
    finally:
        staged.close()


async def sort_by(pilot: Pilot[None], pane: Any, column: str) -> None:
    """Press `s` until the pane is sorted by `column`, smallest first."""
    pane.focus()
    for _ in range(2 * len(pane.COLUMNS) + 1):
        if pane.sorted_by == (column, False):
            return
        await pilot.press("s")
    raise AssertionError(f"s never sorted by {column}: {pane.sorted_by}")


def shown(pane: Any, field: str) -> list[Any]:
    """The field of each row, in the order the pane shows the rows."""
    return [pane.rows_by_key[str(row.key.value)].get(field) for row in pane.ordered_rows]


def by_value(values: list[Any]) -> list[Any]:
    """Smallest first, the empty ones last."""
    return sorted(v for v in values if v is not None) + [v for v in values if v is None]


def test_s_sorts_todos_ages_and_pids_as_numbers_not_as_text(numbered: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        outbox, chats = app.outbox_pane, app.sessions_pane

        await sort_by(pilot, outbox, "todo")
        todos = shown(outbox, "todo")
        assert todos == by_value(todos) and 10 in todos
        assert sorted(f"#{t}" for t in todos if t) != [f"#{t}" for t in todos if t]  # not text
        assert "sorted by TODO ↑ (s)" in screen_text(app)

        await sort_by(pilot, outbox, "age")
        now = app.clock()
        ages = [now - parse_iso(created) for created in shown(outbox, "created_at")]
        assert ages == sorted(ages)  # the youngest first
        words = [outbox.get_cell(str(r.key.value), "age").plain for r in outbox.ordered_rows]
        assert sorted(words) != words, words  # text order would differ: 45s, 1m, 12m ...

        await sort_by(pilot, chats, "pid")
        pids = shown(chats, "pid")
        assert pids == by_value(pids) and pids[0] == 999
        assert pids[-1] is None  # the exited chat has no pid: last

    drive(numbered.app(), script)
