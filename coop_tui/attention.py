"""What needs Dad, where Dad looks first: the header (the coordinator's truth, the
envelopes by state, the unread notices) and a toast for each event that needs a
decision. Routine events (a receipt, a take, an acceptance) raise nothing.

The counts and alerts are read by the ledger's refresh worker (live.py) and handed
here; the coordinator's words come from the claim checks (coordination.py)."""

from __future__ import annotations

from typing import Any

from textual.app import App
from textual.content import Content

from coop_engine.loop.claim import STOPPED
from coop_engine.loop.notifier import message_of
from coop_engine.queries.status import HEADER_STATES

MOST_TOASTS = 5  # per refresh: a burst of alerts is five toasts and a count, not fifty
TOAST_SECONDS = 20.0
SEVERITY = {"expired": "error", "conflict": "error", "overdue": "warning"}


def counts_words(counts: dict[str, int]) -> str:
    """`2 expired · 1 uncertain · 1 held`: the states that may need Dad, zeros left out."""
    return " · ".join(f"{counts[s]} {s}" for s in HEADER_STATES if counts.get(s))


def unread_words(unread: int) -> str:
    if not unread:
        return ""
    return f"{unread} unread notice{'s' * (unread != 1)} (n)"


class Attention(App[None]):
    """The part of the app that tells Dad what needs a decision."""

    coordinator_state: str
    coordinator_words: str
    counts: dict[str, int]
    unread = 0
    newest_notice = 0  # the newest notice in the ledger, as last read
    notices_seen = 0  # the newest notice Dad has seen (`n` opened)

    def _header(self) -> None:
        """The main screen's header: the coordinator, the counts, the unread notices."""
        parts = [self.coordinator_words, counts_words(self.counts), unread_words(self.unread)]
        self.sub_title = " · ".join(part for part in parts if part)

    def format_title(self, title: str, sub_title: str) -> Content:
        """The header's line; a stopped coordinator stands out (red), so does mail."""
        if sub_title != self.sub_title or not sub_title:
            return super().format_title(title, sub_title)
        style = "bold $error" if self.coordinator_state == STOPPED else "dim"
        pieces: list[Content | tuple[str, str] | str] = [
            Content(title),
            (" — ", "dim"),
            (self.coordinator_words, style),
        ]
        counts = counts_words(self.counts)
        if counts:
            pieces += [(" · ", "dim"), (counts, "$warning" if self.counts.get("expired") else "")]
        if self.unread:
            pieces += [(" · ", "dim"), (unread_words(self.unread), "bold $accent")]
        return Content.assemble(*pieces)

    def _attention_read(self, counts: dict[str, int], unread: tuple[int, int]) -> None:
        self.counts = counts
        count, self.newest_notice = unread
        self.unread = 0 if self.newest_notice <= self.notices_seen else count
        self._header()

    def notices_read(self) -> None:
        """Dad opened the notices: every one read so far is seen."""
        self.notices_seen = self.newest_notice
        self.unread = 0
        self._header()

    def _alert(self, alerts: list[dict[str, Any]]) -> None:
        """One toast per event that needs a decision; chat text never as markup."""
        for alert in alerts[:MOST_TOASTS]:
            self.notify(
                message_of(alert),
                title=alert["title"],
                severity=SEVERITY.get(alert["kind"], "warning"),  # type: ignore[arg-type]
                timeout=TOAST_SECONDS,
                markup=False,
            )
        more = len(alerts) - MOST_TOASTS
        if more > 0:
            self.notify(
                f"and {more} more: see the notices (n) and the outbox",
                title="Coop",
                severity="warning",
                timeout=TOAST_SECONDS,
                markup=False,
            )
