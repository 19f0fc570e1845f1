"""What needs Dad, where Dad looks first: the header (the coordinator's truth, the
envelopes by state, the unread notices) and a toast for each event that needs a
decision. Routine events (a receipt, a take, an acceptance) raise nothing.

The counts and alerts are read by the ledger's refresh worker (live.py) and handed
here; the coordinator's words come from the claim checks (coordination.py)."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.app import App
from textual.content import Content
from textual.notifications import SeverityLevel

from coop_engine.formats import one_line, printable
from coop_engine.loop.claim import STOPPED
from coop_engine.loop.notifier import message_of
from coop_engine.queries.status import HEADER_STATES
from coop_tui.chats import Directory
from coop_tui.shown import Severity, headline, line, toast
from coop_tui.widgets.panes import OutboxPane

MOST_TOASTS = 5  # per refresh: a burst of alerts is five toasts and a count, not fifty
TOAST_SECONDS = 20.0
SEVERITY: dict[str, Severity] = {"expired": "error", "conflict": "error", "overdue": "warning"}


def counts_words(counts: dict[str, int]) -> str:
    """`2 expired · 1 uncertain · 1 held`: the states that may need Dad, zeros left out."""
    return " · ".join(f"{counts[s]} {s}" for s in HEADER_STATES if counts.get(s))


def unread_words(unread: int, form: int = 0) -> str:
    """The unread badge, in the header's `form` (0 the longest)."""
    if not unread:
        return ""
    return (f"{unread} unread notice{'s' * (unread != 1)} (!)", f"{unread} unread (!)",
            f"{unread} (!)")[form]  # fmt: skip


# Textual's header icon (8 cells) and clock space (10) around the title: the first to go
# when the line does not fit (the palette stays on ^p).
HEADER_EDGES = 18
# The header's forms, most words first: (icon and clock space kept, the app's title
# kept, the coordinator's words, the badge's words), each form 0 the longest.
HEADER_FORMS = (
    (True, True, 0, 0),
    (False, True, 0, 0),
    (False, False, 0, 1),
    (False, True, 1, 1),
    (False, False, 1, 1),
    (False, False, 2, 2),
)
Part = tuple[str, str]  # a piece of the header's line and its style


class Attention(App[None]):
    """The part of the app that tells Dad what needs a decision."""

    coordinator_state: str
    coordinator_words: tuple[str, str, str]  # Truth.words, .short and .shortest
    counts: dict[str, int]
    chats: Directory
    outbox_pane: OutboxPane
    unread = 0
    newest_notice = 0  # the newest notice in the ledger, as last read
    notices_seen = 0  # the newest notice Dad has seen (notices opened)
    _header_titled = True  # the header's line starts with the app's title
    _header_parts: tuple[Part, ...] = ()

    def _header(self, width: int | None = None) -> None:
        """The main screen's header: the coordinator, the counts, the unread notices,
        in the longest words that fit the terminal's width (no icon, no title, then
        fewer words, before anything is cut)."""
        width = self.size.width if width is None else width
        for edges, titled, words, badge in HEADER_FORMS:
            parts = self._parts(words, badge)
            line = " · ".join(text for text, _ in parts)
            room = width - HEADER_EDGES * edges
            if len(f"{self.title} — {line}" if titled else line) <= room:
                break
        self.set_class(not edges, "-bare-header")
        self._header_titled, self._header_parts = titled, tuple(parts)
        self.sub_title = line

    def _parts(self, words: int, badge: int) -> list[Part]:
        stopped = self.coordinator_state == STOPPED
        parts = [(self.coordinator_words[words], "bold $error" if stopped else "dim")]
        counts = counts_words(self.counts)
        if counts:
            parts.append((counts, "$warning" if self.counts.get("expired") else ""))
        if self.unread:
            parts.append((unread_words(self.unread, badge), "bold $accent"))
        return parts

    def on_resize(self, event: events.Resize) -> None:
        # The event's size: this runs before App's own handler takes it as the app's.
        self._header(event.size.width)

    def format_title(self, title: str, sub_title: str) -> Content:
        """Every screen's header line, as written (a screen's names a chat); the main
        screen's: a stopped coordinator stands out (red), so does mail."""
        if sub_title != self.sub_title or not sub_title:
            named: list[Part] = [(" — ", "dim"), (sub_title, "dim")] if sub_title else []
            return headline(title, *named)
        pieces: list[str | Part] = []
        if self._header_titled:
            pieces += [title, (" — ", "dim")]
        for number, part in enumerate(self._header_parts):
            pieces += [(" · ", "dim"), part] if number else [part]
        return headline(*pieces)

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None:
        """Every toast, whoever raises it (Coop through shown.toast, or Textual): its
        words as written, controls as visible escapes, never parsed as markup."""
        super().notify(
            printable(message),
            title=one_line(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

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
        """One toast per event that needs a decision, naming its chat as the panes do;
        chat text never as markup."""
        for alert in alerts[:MOST_TOASTS]:
            chat = self.chats.place(alert, self.outbox_pane.rows_by_key)
            toast(
                self,
                line(message_of({**alert, "chat": chat.words if chat else alert.get("chat")})),
                title=alert["title"],
                severity=SEVERITY.get(alert["kind"], "warning"),
                timeout=TOAST_SECONDS,
            )
        more = len(alerts) - MOST_TOASTS
        if more > 0:
            toast(
                self,
                line(f"and {more} more: see the notices (!) and the outbox"),
                title="Coop",
                severity="warning",
                timeout=TOAST_SECONDS,
            )
