"""Turning ledger values into table cells. Every cell is a Shown (coop_tui/shown.py):
what a chat, a transcript or another Mac wrote is shown as the characters it holds, its
controls as visible escapes, never parsed as markup."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from coop_tui import explain
from coop_tui.chats import Called, Directory
from coop_tui.shown import Shown, assemble, line

FACTS = ("stored", "transport", "received", "accepted", "outcome")
DONE, PENDING, UNKNOWN = "●", "○", "?"
EMPTY = "-"  # a cell with no value


def plain(value: Any, style: str = "", order: tuple[Any, ...] | None = None) -> Shown:
    """A cell that shows `value` as the characters it holds, on one line: `[bold]` stays
    `[bold]`, an escape shows as `\\x1b`; cut to a narrow column, it ends in an ellipsis.
    With `order`, it sorts by that, not by its text."""
    if value is None or value == "":
        return line(EMPTY, "dim", end="")
    cell = line(value, style, no_wrap=True, overflow="ellipsis", end="")
    return cell if order is None else Ordered(cell, order)


def wrapped(value: Any, style: str = "") -> Shown:
    """A cell shown whole, wrapped at words over as many lines as it needs (the table's
    WRAP column): what Dad was told is never cut."""
    if value is None or value == "":
        return line(EMPTY, "dim", end="")
    return line(" ".join(str(value).split()), style, overflow="fold", end="")


class Ordered(Shown):
    """A cell that knows where its row sorts: DataTable sorts rows by their cells, and
    a number, a time or an age sorts as the value it is, never as its text."""

    def __init__(self, cell: Shown, order: tuple[Any, ...]) -> None:
        super().__init__(
            cell.plain,
            cell.style,
            spans=cell.spans,
            no_wrap=cell.no_wrap,
            overflow=cell.overflow,
            end=cell.end,
        )
        self.order = order


def ordered(value: str, order: tuple[Any, ...], size: int = 8) -> Ordered:
    return Ordered(line(value[:size], no_wrap=True, end=""), order)


def number(value: float | None, shown: str | None = None, style: str = "") -> Shown:
    """A count, a pid, a generation or a measure: shown as `shown` (default: itself),
    sorted as the number."""
    if value is None:
        return plain(None)
    return plain(str(value) if shown is None else shown, style, order=(value,))


def at(iso: str | None, shown: str | None = None, style: str = "") -> Shown:
    """A time: shown as `shown` (default: the ISO text), sorted as the moment it is."""
    moment = parse_iso(iso)
    if moment is None:
        return plain(None)
    return plain(iso if shown is None else shown, style, order=(moment,))


def todos(ids: list[int] | None) -> Shown:
    """A chat's bound todos, `#3, #12`, sorted by their numbers."""
    if not ids:
        return plain(None)
    return plain(", ".join(f"#{t}" for t in ids), order=tuple(ids))


def fact_marks(row: dict[str, Any]) -> Shown:
    """The five facts at a glance: ● done, ○ not yet, ? unknown (sent, not yet seen);
    sorted by how far the delivery got."""
    facts = row["facts"]
    sent = facts["transport"] is not None or row["state"] in ("uncertain", "delivered", "expired")
    marks = []
    for name in FACTS:
        if facts[name]:
            marks.append((DONE, "green"))
        elif name == "received" and sent and row["state"] == "uncertain":
            marks.append((UNKNOWN, "yellow"))
        else:
            marks.append((PENDING, "dim"))
    cell = assemble(*marks, end="")
    cell.no_wrap = True
    return Ordered(cell, tuple(bool(facts[name]) for name in FACTS))


def _called(row: dict[str, Any]) -> Called:
    """The envelope's chat as the chats pane names it (`_chat`, set by the app), or as
    its row alone does."""
    found = row.get("_chat")
    return found if isinstance(found, Called) else Directory().envelope(row)


def session_name(row: dict[str, Any]) -> Shown:
    """The envelope's chat: its name, else its folder, else the start of its id."""
    return plain(_called(row).name)


def session(row: dict[str, Any]) -> Shown:
    """The envelope's chat's short id with its door (`claude:1a2b3c4d`), the chats
    pane's: as long as it takes to tell two Codex threads of the same minute apart."""
    return plain(_called(row).ref)


QUEUE_WORDS = {True: ("queued in Codex", "yellow"), False: ("taken from the queue", "")}


def why(row: dict[str, Any]) -> Shown:
    """Why the envelope is not delivered (yet): its proof of loss, a conflict or a
    refusal; or, for a Codex envelope between transport and receipt, where it stands in
    Codex's queue (taken: its receipt should follow)."""
    said = row.get("reason") or row.get("conflict") or row.get("last_error")
    if said:
        return plain(said, "red" if row.get("conflict") else "")
    in_flight = row.get("door") == "codex" and row["state"] == "uncertain"
    if in_flight and row.get("queued") in QUEUE_WORDS:
        return plain(*QUEUE_WORDS[row["queued"]])
    return plain(None)


def reachable(row: dict[str, Any]) -> Shown:
    """A Mac: reachable, why not, or still being asked (no answer yet)."""
    if row["reachable"] is None:
        return plain("asking…", "dim")
    return plain("reachable", "green") if row["reachable"] else plain(row["reason"], "red")


STATE_STYLE = {
    "pending": "cyan",
    "uncertain": "yellow",
    "delivered": "green",
    "expired": "red",
    "cancelled": "dim",
}


def state(value: str) -> Shown:
    return plain(value, STATE_STYLE.get(value, ""))


def parse_iso(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def age(created: str | None, now: float) -> Shown:
    """How long ago, `45s` `3m` `2h` `1d`: sorted by the seconds, youngest first."""
    moment = parse_iso(created)
    if moment is None:
        return plain(None)
    seconds = max(0, int(now - moment))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return number(seconds, f"{seconds // size}{unit}")
    return number(seconds, f"{seconds}s")


def inbound(prediction: dict[str, Any] | None) -> Shown:
    if not prediction:
        return plain(None)
    verdict = prediction.get("verdict", "unknown")
    style = {"accept": "green", "hold": "yellow", "refuse": "red", "queued": "cyan"}
    words = explain.inbound_words(prediction)
    return line(words, style.get(verdict, "magenta"), no_wrap=True, overflow="ellipsis", end="")


def codeman(found: dict[str, Any] | None) -> Shown:
    """The Codeman session a chat's tmux pane names; a docker or ssh worker's lives in
    another registry, and says so (the inspector says which kind)."""
    if not found:
        return plain(None)
    if found.get("registry") == "another":
        return plain(f"{found['session']} (another registry)", "dim")
    return plain(found["session"])
