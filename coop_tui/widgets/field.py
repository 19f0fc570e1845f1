"""The app's one kind of text field: what Dad types or pastes, shown as the characters it
holds. A paste may carry a control or a bidi character (a terminal passes C1 controls,
BEL and bidi overrides inside a bracketed paste): Textual's Input would write it to the
terminal as it is; a Field shows each as one visible sign (coop_tui.shown.pictured) and
keeps the value itself exact, so that the door's check sees what was pasted and the
dialog can say which character it refuses and where."""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text
from textual.widgets import Input

from coop_tui.shown import pictured, shown


class Field(Input):
    """An Input whose value is drawn with its controls pictured, one cell each: the
    cursor and a click stay on the character they are at. (Textual's Input measures and
    draws its value in these three; Textual is pinned, and tests/tui/test_escapes.py
    draws a pasted control.)"""

    @property
    def _value(self) -> Text:
        return shown(pictured(self.value), no_wrap=True, overflow="ignore", end="")

    def _position_to_cell(self, position: int) -> int:
        return cell_len(pictured(self.value[:position]))

    def _cell_offset_to_index(self, offset: int) -> int:
        scroll_x, _ = self.scroll_offset
        offset += scroll_x
        cells = 0
        for index, char in enumerate(pictured(self.value)):
            size = get_character_cell_size(char)
            if cells <= offset < cells + size:
                return index
            cells += size
        return max(0, min(offset, len(self.value)))
