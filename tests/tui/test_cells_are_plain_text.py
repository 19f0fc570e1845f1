"""A table cell shows what a chat or a Mac wrote as the characters it holds (STYLE.md:
one renderer, never markup built from data): `[bold]` stays `[bold]`, a link tag never
links, an escape sequence is printed as `\\x1b`, never sent."""

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


def test_a_cell_shows_an_escape_sequence_and_a_bidi_override_as_printed() -> None:
    name = "\x1b]2;PWNED\x07ev\x1b[2Jil\x9b31m\u202egnp.exe"
    cell = cells.plain(name, style="bold")
    assert cell.plain == "\\x1b]2;PWNED\\x07ev\\x1b[2Jil\\x9b31m\\u202egnp.exe"
    assert cell.spans == [] and str(cell.style) == "bold"
    ordered = cells.plain(name, order=(1,))
    assert ordered.plain == cell.plain and ordered.order == (1,)
    assert cells.wrapped(f"held: {name}").plain == f"held: {cell.plain}"
