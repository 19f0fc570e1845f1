"""Turning ledger values into table cells. Everything a chat, a transcript or another
Mac wrote is shown as plain text, never parsed as markup."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text

from coop_tui import explain

FACTS = ("stored", "transport", "received", "accepted", "outcome")
DONE, PENDING, UNKNOWN = "●", "○", "?"


def plain(value: Any, style: str = "") -> Text:
    """A cell that shows `value` literally: `[bold]` stays `[bold]`; cut to a narrow
    column, it ends in an ellipsis."""
    if value is None or value == "":
        return Text("-", style="dim")
    return Text(
        str(value).replace("\n", " "), style=style, no_wrap=True, overflow="ellipsis", end=""
    )


def short(value: str | None, size: int = 8) -> Text:
    return plain(value[:size] if value else None)


class Ordered(Text):
    """A cell that knows where its row sorts: DataTable sorts rows by their cells."""

    def __init__(self, text: str, order: tuple[Any, ...], **style: Any) -> None:
        super().__init__(text, **style)
        self.order = order


def ordered(value: str, order: tuple[Any, ...], size: int = 8) -> Ordered:
    return Ordered(value[:size], order, no_wrap=True, end="")


def fact_marks(row: dict[str, Any]) -> Text:
    """The five facts at a glance: ● done, ○ not yet, ? unknown (sent, not yet seen)."""
    facts = row["facts"]
    sent = facts["transport"] is not None or row["state"] in ("uncertain", "delivered", "expired")
    text = Text(no_wrap=True, end="")
    for name in FACTS:
        if facts[name]:
            text.append(DONE, style="green")
        elif name == "received" and sent and row["state"] == "uncertain":
            text.append(UNKNOWN, style="yellow")
        else:
            text.append(PENDING, style="dim")
    return text


def chat(row: dict[str, Any]) -> Text:
    """The envelope's chat: its id's first characters, with its door when not Claude's
    (`codex:01a2322c`)."""
    door, _, native = row["session"].rpartition(":")
    if door in ("", "claude"):
        return short(native)
    return plain(f"{door}:{native[:8]}")


QUEUE_WORDS = {True: ("queued in Codex", "yellow"), False: ("taken from the queue", "")}


def why(row: dict[str, Any]) -> Text:
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


def reachable(row: dict[str, Any]) -> Text:
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


def state(value: str) -> Text:
    return plain(value, STATE_STYLE.get(value, ""))


def parse_iso(value: str | None) -> float | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def age(created: str | None, now: float) -> Text:
    at = parse_iso(created)
    if at is None:
        return plain(None)
    seconds = max(0, int(now - at))
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if seconds >= size:
            return plain(f"{seconds // size}{unit}")
    return plain(f"{seconds}s")


def inbound(prediction: dict[str, Any] | None) -> Text:
    if not prediction:
        return plain(None)
    verdict = prediction.get("verdict", "unknown")
    style = {"accept": "green", "hold": "yellow", "refuse": "red", "queued": "cyan"}
    return Text(
        explain.inbound_words(prediction),
        style=style.get(verdict, "magenta"),
        no_wrap=True,
        overflow="ellipsis",
        end="",
    )
