"""Printing listings: one JSON array with --json, otherwise an aligned plain table."""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, TextIO

    Column = tuple[str, Callable[[dict[str, Any]], Any]]


def print_rows(
    rows: Sequence[dict[str, Any]],
    columns: Sequence[Column],
    as_json: bool,
    out: TextIO | None = None,
) -> None:
    out = out or sys.stdout
    if as_json:
        # dumps, not dump: dump encodes in pure Python, chunk by chunk.
        out.write(json.dumps(list(rows), separators=(",", ":")) + "\n")
        return
    if not rows:
        out.write("(none)\n")
        return
    # The formatter is loaded for a table only: in JSON, json escapes what a chat wrote.
    from coop_engine.formats import one_line

    def cell(value: Any) -> str:
        # A table row is one line whatever a chat wrote.
        return "-" if value is None else one_line(str(value))

    table = [[name for name, _ in columns]]
    table += [[cell(get(row)) for _, get in columns] for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(columns))]
    for line in table:
        out.write(
            "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        )
        out.write("\n")
