"""A table cell shows what a chat or a Mac wrote as the characters it holds (STYLE.md:
`Text(str)`, never markup built from data): `[bold]` stays `[bold]`, a link tag never
links."""

from __future__ import annotations

from coop_tui.widgets import cells

HOSTILE = "[bold red]x[/] [link=file:///etc]y[/link]"


def test_a_cell_of_markup_shows_the_markup_as_written() -> None:
    cell = cells.plain(HOSTILE, style="green")
    assert cell.plain == HOSTILE
    assert [span.style for span in cell.spans] == []
    assert str(cell.style) == "green"


def test_the_reason_column_shows_a_conflict_as_written() -> None:
    cell = cells.why({"conflict": HOSTILE, "state": "delivered"})
    assert cell.plain == HOSTILE and cell.spans == []
