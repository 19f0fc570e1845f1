"""The panes, live: ledger changes patched into the outbox and chats panes, and every
Mac surveyed on an interval. Reads run in thread workers; results come back with
`call_from_thread` and are dropped once the app is closing."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from textual import work
from textual.app import App
from textual.timer import Timer

from coop_engine import queries
from coop_engine.engine import Engine
from coop_engine.loop.office import Office
from coop_engine.queries.status import alerts_between, header_counts, unread_notices
from coop_tui.chats import Directory, merge_live
from coop_tui.messages import LedgerChanged
from coop_tui.shown import line
from coop_tui.widgets.panes import HostsPane, OutboxPane, SessionsPane

TRAILING_READS = (0.1, 0.5)  # seconds after the last signal


class LivePanes(App[None]):
    """The part of the app that keeps the three panes current."""

    hosts_pane: HostsPane
    sessions_pane: SessionsPane
    outbox_pane: OutboxPane
    engine: Engine | None
    office: Office
    clock: Callable[[], float]
    surveys: dict[str, dict[str, Any]]
    session_rows: list[dict[str, Any]]
    host_filter: str | None
    session_filter: int | None
    text_filter: str | None
    last_event: int
    outbox_total: int
    _refreshing: bool
    _refresh_again: bool
    _asking: set[str]
    _ledger_ready: bool
    _trailing: list[Timer]
    _sessions_shown: list[dict[str, Any]] | None
    notices_seen: int
    chats: Directory  # every chat the chats pane lists, however filtered: how each is called

    def _showing(self) -> bool:
        """False once the app is closing: a late result has nobody to be shown to."""
        return self.outbox_pane.is_attached

    # --- the ledger, live ---------------------------------------------------------------

    def on_ledger_changed(self) -> None:
        self.request_refresh()
        # A signal can come while the writer is still committing (its WAL grows, then
        # fsync, then the commit becomes visible): read again shortly after the last
        # signal rather than leave the change to the slow poll.
        for timer in self._trailing:
            timer.stop()
        self._trailing = [self.set_timer(delay, self.request_refresh) for delay in TRAILING_READS]

    def request_refresh(self) -> None:
        if self.engine is None or not self._showing():
            return
        if self._refreshing:
            self._refresh_again = True
            return
        self._refreshing = True
        self._refresh(
            self.last_event,
            set(self.outbox_pane.rows_by_key),
            self.session_filter,
            self.text_filter,
            self.notices_seen,
        )

    @work(thread=True, group="ledger", exit_on_error=False)
    def _refresh(
        self,
        last_event: int,
        shown: set[str],
        session_id: int | None,
        text: str | None,
        notices_seen: int,
    ) -> None:
        changes = queries.changes_since(last_event)
        # What moved that needs Dad: the same events, read in the same range.
        alerts = alerts_between(last_event, changes.last_event)
        attention = (header_counts(), unread_notices(notices_seen))
        window = None
        fresh = any(row["id"] not in shown for row in changes.envelopes)
        # New envelopes are added as rows; only a burst, or a filter word (matched by
        # the database), reads the whole window again.
        if changes.reload or (fresh and text):
            window = queries.outbox_window(session_id, text=text)
        sessions = queries.session_rows() if changes.sessions else None
        self.call_from_thread(self._apply, changes, window, sessions, attention, alerts)

    def _apply(
        self,
        changes: queries.Changes,
        window: queries.OutboxWindow | None,
        sessions: list[dict[str, Any]] | None,
        attention: tuple[dict[str, int], tuple[int, int]],
        alerts: list[dict[str, Any]],
    ) -> None:
        self._refreshing = False
        if not self._showing():
            return
        self.last_event = changes.last_event
        self._attention_read(*attention)
        if window is not None:
            self._show_window(window)
        else:
            self._patch_outbox(changes)
        if sessions is not None:
            self.session_rows = sessions
            self._show_sessions()
        # Last: a toast names its chat as the panes now do.
        self._alert(alerts)
        if self._refresh_again:
            self._refresh_again = False
            self.request_refresh()

    if TYPE_CHECKING:  # the app's attention (attention.py) answers these

        def _attention_read(self, counts: dict[str, int], unread: tuple[int, int]) -> None: ...

        def _alert(self, alerts: list[dict[str, Any]]) -> None: ...

    def _patch_outbox(self, changes: queries.Changes) -> None:
        """Shown envelopes change in place; new ones of this scope join the window."""
        now = self.clock()
        fresh = []
        patched = False
        for row in changes.envelopes:
            row = {**row, "_now": now, "_chat": self.chats.envelope(row)}
            in_scope = self.session_filter in (None, row["session_id"])
            if self.outbox_pane.patch_row(row):
                patched = True
            elif in_scope:
                fresh.append(row)
        if patched:
            # A patched row takes its place in the sort Dad chose (a state that changed
            # moves it): the rows are reordered, none is made again.
            self.outbox_pane.sort_again_keeping_cursor()
        if fresh:
            self.outbox_total += sum(1 for row in fresh if row["id"] in changes.created)
            self.outbox_pane.add_newest(fresh, queries.OUTBOX_WINDOW)
            self._title_outbox()

    def _show_window(self, window: queries.OutboxWindow) -> None:
        if not self._showing():
            return
        now = self.clock()
        self.outbox_pane.replace_rows(
            {**row, "_now": now, "_chat": self.chats.envelope(row)} for row in window.rows
        )
        self.outbox_total = window.total
        self._title_outbox()

    def _title_outbox(self) -> None:
        shown = self.outbox_pane.row_count
        scope = "" if self.session_filter is None else " for this chat"
        if self.text_filter:
            scope += f" matching {self.text_filter!r}"
        more = f", newest {shown} shown" if self.outbox_total > shown else ""
        # The filter is what Dad typed or pasted: a title is markup unless it is Text.
        self.outbox_pane.border_title = line(f"Outbox · {self.outbox_total} envelopes{scope}{more}")

    @work(thread=True, group="poll", exit_on_error=False)
    def poll_ledger(self) -> None:
        if self.engine is None:
            return
        if queries.latest_event() > self.last_event:
            self.post_message(LedgerChanged())

    def refresh_ages(self) -> None:
        now = self.clock()
        pane = self.outbox_pane
        for key, row in list(pane.rows_by_key.items()):
            row["_now"] = now
            pane.update_cell(key, "age", OutboxPane.column("age")(row))

    # --- Macs and chats ------------------------------------------------------------------

    def survey_fleet(self) -> None:
        """Ask every Mac that is not still answering the last question: a Mac that hangs
        costs one waiting thread, never one more per interval."""
        idle = [name for name in self.office.names if name not in self._asking]
        if idle:
            self._asking.update(idle)
            self._survey(idle)

    @work(thread=True, group="survey", exclusive=False, exit_on_error=False)
    def _survey(self, names: list[str]) -> None:
        # Latency is timed with the app's clock too: a test that fixes the clock fixes
        # every figure the panes show.
        self.office.survey(
            names,
            lambda report: self.call_from_thread(self._surveyed, report),
            self.clock,
            self.clock,
        )

    def _surveyed(self, report: dict[str, Any]) -> None:
        self._asking.discard(report["name"])
        if not self._showing():
            return
        self.surveys[report["name"]] = report
        self.hosts_pane.patch_row(report)
        # The chats pane starts from the ledger's rows, so its first row (and cursor)
        # does not depend on which Mac answered first.
        if self._ledger_ready:
            self._show_sessions()

    def _show_sessions(self) -> None:
        every = merge_live(self.session_rows, self.surveys)
        if every != self.chats.rows:
            self.chats = Directory(every)
            self._rename_outbox()
        rows = every
        if self.host_filter:
            rows = [row for row in rows if row["host"] == self.host_filter]
        title = "Chats" if not self.host_filter else f"Chats on {self.host_filter}"
        self.sessions_pane.border_title = line(f"{title} · {len(rows)}")
        if rows != self._sessions_shown:  # a survey that changed nothing redraws nothing
            self._sessions_shown = rows
            self.sessions_pane.replace_rows(rows)

    def _rename_outbox(self) -> None:
        """The outbox names each chat as the chats pane does: a name a Mac told since, or
        a short id that grew (a new thread sharing its start), is patched in place."""
        for row in list(self.outbox_pane.rows_by_key.values()):
            called = self.chats.envelope(row)
            if called != row.get("_chat"):
                self.outbox_pane.patch_row({**row, "_chat": called})
