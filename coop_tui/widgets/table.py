"""The app's one kind of table: rows keyed by an id, rebuilt or patched from dicts, that
fit the terminal's width and move like the best TUIs' (vim keys, sorting, maximise,
copy the full id)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.strip import Strip
from textual.widgets import DataTable

from coop_tui.shown import Shown, line, toast

# (key, header, cell maker): every cell is a Shown, the one renderer's.
Column = tuple[str, str, Callable[[dict[str, Any]], Shown]]


class LedgerTable(DataTable[Text]):
    """A table whose rows are keyed by an id and rebuilt or patched from dicts.

    It fits its width: columns named in DROP_FIRST leave, in that order, while the rest
    would not fit, and the FLEX column then shrinks, its values ending in an ellipsis (or,
    when it is the WRAP column, wrapping onto more lines).
    Vim keys move the cursor, `s` (or a click on a header) sorts, `z` maximises the
    table and `C` copies the selected row's full id."""

    COLUMNS: ClassVar[list[Column]] = []
    DROP_FIRST: ClassVar[tuple[str, ...]] = ()
    FLEX: ClassVar[str | None] = None
    FLEX_MIN: ClassVar[int] = 12  # the narrowest the FLEX column is made
    # A column whose cells wrap (cells.wrapped): its rows are as tall as their text needs.
    WRAP: ClassVar[str | None] = None
    EMPTY = "nothing to show"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False, id="table.down", tooltip="Next row"),
        Binding("k", "cursor_up", "Up", show=False, id="table.up", tooltip="Previous row"),
        Binding(
            "g,home", "scroll_top", "First row", show=False, id="table.first", tooltip="First row"
        ),
        Binding(
            "G,end", "scroll_bottom", "Last row", show=False, id="table.last", tooltip="Last row"
        ),
        Binding(
            "s",
            "sort_next",
            "Sort",
            show=False,
            id="table.sort",
            tooltip="Sort by the next column (again on the last: reversed); or click a header",
        ),
        Binding(
            "z",
            "maximize_pane",
            "Maximise",
            id="table.maximize",
            tooltip="This pane alone on the screen; z or escape again to restore",
        ),
        Binding(
            "C",
            "copy_selected",
            "Copy id",
            key_display="C",
            id="table.copy",
            tooltip="Copy the selected row's full id to the clipboard (through the terminal)",
        ),
    ]

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.rows_by_key: dict[str, dict[str, Any]] = {}
        # The widest value each column has had (header included), shown or not.
        self.widths: dict[str, int] = {key: len(label) for key, label, _ in self.COLUMNS}
        self.shown: tuple[tuple[str, ...], int | None] = (
            tuple(key for key, _, _ in self.COLUMNS),
            None,
        )
        self.sorted_by: tuple[str, bool] | None = None
        self._stale = False  # a column's widest value grew since the columns were made

    def on_mount(self) -> None:
        self._add_columns()

    # --- rows ------------------------------------------------------------------------------

    def row_key(self, row: dict[str, Any]) -> str:
        return str(row["id"])

    def cells(self, row: dict[str, Any]) -> list[Shown]:
        """The shown columns' cells of a row (a value cut to the FLEX column's width
        ends in an ellipsis)."""
        keys, _ = self.shown
        return [render(row) for key, _, render in self.COLUMNS if key in keys]

    def _add(self, row: dict[str, Any], key: str) -> None:
        # height None: as tall as the WRAP column's text needs at the column's width.
        self.add_row(*self.cells(row), key=key, height=None if self.WRAP else 1)

    def _measure(self, row: dict[str, Any]) -> bool:
        """Widen the columns' record for this row; True when one grew."""
        grew = False
        for key, _, render in self.COLUMNS:
            size = render(row).cell_len
            if size > self.widths[key]:
                self.widths[key], grew = size, True
        return grew

    def replace_rows(self, rows: Iterable[dict[str, Any]]) -> None:
        """Show exactly these rows, keeping the cursor on the same id when it survives."""
        selected = self.selected_key()
        self.clear()
        self.rows_by_key = {}
        grew = False
        for row in rows:
            key = self.row_key(row)
            self.rows_by_key[key] = row
            grew = self._measure(row) or grew
            self._add(row, key)
        self._sort_again()
        if not self._fit(force=grew):
            self._keep_cursor(selected)

    def patch_row(self, row: dict[str, Any]) -> bool:
        """Update a shown row in place; False when it is not shown."""
        key = self.row_key(row)
        if key not in self.rows_by_key:
            return False
        self.rows_by_key[key] = row
        if self._measure(row) and self._fit(force=True):
            return True
        # (A value longer than the column had, "asking…" -> "reachable", widened it above.)
        for column, _, render in self.COLUMNS:
            self.update_cell(key, column, render(row))
        return True

    def update_cell(
        self, row_key: Any, column_key: Any, value: Any, *, update_width: bool = False
    ) -> None:
        """A column dropped for want of width has no cell to update.

        The widths are this table's own (`widths`, `_fit`): every column is added with
        its width, which the DataTable never changes. Its `update_width` would only
        measure, on the next idle, every cell of the column again for each cell updated:
        rows x rows for a window patched whole (the chats' names, the ages), a second
        at 300 rows. So it is never passed on."""
        if column_key in self.columns:
            super().update_cell(row_key, column_key, value)

    def _keep_cursor(self, selected: str | None) -> None:
        if selected in self.rows_by_key:
            self.move_cursor(row=self.get_row_index(selected), scroll=False)

    def selected_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            return str(self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value)
        except Exception:  # an empty or just-cleared table has no cell under the cursor
            return None

    def selected(self) -> dict[str, Any] | None:
        key = self.selected_key()
        return None if key is None else self.rows_by_key.get(key)

    # --- fitting the width -------------------------------------------------------------------

    def _layout(self, width: int) -> tuple[tuple[str, ...], int | None]:
        """Which columns fit in `width` cells, and the FLEX column's width if it must
        shrink (None: every shown column at its widest value)."""
        pad = 2 * self.cell_padding
        keys = [key for key, _, _ in self.COLUMNS]

        def need(shown: list[str], flex: int) -> int:
            return sum(
                (min(flex, self.widths[key]) if key == self.FLEX else self.widths[key]) + pad
                for key in shown
            )

        # A column leaves only when the rest would not fit even with FLEX at its narrowest.
        for dropped in self.DROP_FIRST:
            if need(keys, self.FLEX_MIN) <= width:
                break
            keys.remove(dropped)
        flex = None
        if self.FLEX in keys and need(keys, self.widths[self.FLEX]) > width:
            rest = need([key for key in keys if key != self.FLEX], 0)
            flex = max(self.FLEX_MIN, width - rest - pad)
        return tuple(keys), flex

    def _fit(self, force: bool = False) -> bool:
        """Rebuild the columns when the width calls for others (or, `force`, when a
        column's widest value grew); True when it did."""
        width = self.scrollable_content_region.width
        self._stale = self._stale or force
        if width <= 0:
            return False  # not laid out yet: the resize that follows fits it
        layout = self._layout(width)
        if layout == self.shown and not self._stale:
            return False
        self._stale = False
        selected = self.selected_key()
        order = [str(row.key.value) for row in self.ordered_rows]
        self.shown = layout
        self.clear(columns=True)
        self._add_columns()
        for key in order:
            self._add(self.rows_by_key[key], key)
        self._keep_cursor(selected)
        return True

    def _add_columns(self) -> None:
        keys, flex = self.shown
        # Every width is given, never left to the table to work out from rows that are
        # still arriving: the widest value each column has had, or the FLEX column's share.
        for key, label, _ in self.COLUMNS:
            if key in keys:
                width = flex if key == self.FLEX and flex is not None else self.widths[key]
                self.add_column(label, key=key, width=width)

    def on_resize(self) -> None:
        self.call_after_refresh(self._fit)

    def render_line(self, y: int) -> Strip:
        """An empty table says so under its header rather than stay blank."""
        if self.row_count or y != (self.header_height if self.show_header else 0):
            return super().render_line(y)
        words = line(f" {self.empty_words()}", "italic", end="")
        width = self.scrollable_content_region.width
        return Strip(words.render(self.app.console), words.cell_len).crop_extend(
            0, width, self.rich_style
        )

    def empty_words(self) -> str:
        return self.EMPTY

    # --- sorting, maximising, copying ----------------------------------------------------------

    def sort_by(self, column: str) -> None:
        """Sort by this column; by the same one again, the other way round."""
        reverse = self.sorted_by == (column, False)
        self.sorted_by = (column, reverse)
        self._sort_again()
        label = next(label for key, label, _ in self.COLUMNS if key == column)
        self.border_subtitle = line(f"sorted by {label} {'↓' if reverse else '↑'} (s)")

    def sort_again_keeping_cursor(self) -> None:
        """Rows patched in place take their place in the sort Dad chose (a sort moves
        rows, it makes none), and the cursor stays on its row, not on its position."""
        if self.sorted_by is None:
            return
        selected = self.selected_key()
        self._sort_again()
        self._keep_cursor(selected)

    def _sort_again(self) -> None:
        if self.sorted_by is None or self.sorted_by[0] not in self.columns:
            return
        column, reverse = self.sorted_by
        self.sort(column, key=sort_key, reverse=reverse)

    def action_sort_next(self) -> None:
        keys = [str(key.value) for key in self.columns]
        if not keys:
            return
        current = self.sorted_by[0] if self.sorted_by else None
        if current in keys and self.sorted_by == (current, False):
            self.sort_by(current)  # the same column, reversed
            return
        at = keys.index(current) + 1 if current in keys else 0
        self.sort_by(keys[at % len(keys)])

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def action_maximize_pane(self) -> None:
        if self.screen.maximized is self:
            self.screen.minimize()
        else:
            self.screen.maximize(self, container=False)

    def copy_value(self, row: dict[str, Any]) -> tuple[str, str]:
        """What `C` copies of a row: what it is, and its full value."""
        return "id", self.row_key(row)

    def action_copy_selected(self) -> None:
        row = self.selected()
        if row is None:
            toast(self, line("No row selected: nothing copied"), severity="warning")
            return
        what, value = self.copy_value(row)
        self.app.copy_to_clipboard(value)
        toast(self, line(f"Copied {what} {value}"), title="Clipboard")


def sort_key(cell: Text) -> tuple[Any, ...]:
    """Where a cell sorts: by its value (a number, a time, an age: cells.Ordered) when it
    has one, else by its text, with an empty value (`-`) last. A value never meets a
    text: an ordered cell sorts before a plain one of the same column."""
    order = getattr(cell, "order", None)
    if order is not None:
        return (0, 0, order)
    if cell.plain == "-":
        return (1, 0, ())
    return (0, 1, cell.plain.lower())
