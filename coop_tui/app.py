"""The Coop app: live panes for Macs, chats and the outbox, and the screens behind them.

The UI thread never waits on the ledger, a Mac or ssh: every read and every engine
command runs in a thread worker, which hands its result back with `call_from_thread`.
Changes arrive as events: watchdog sees the ledger's WAL move (whoever wrote it, this
app's coordinator or a `coop serve`), and one worker reads what moved since the last
event id. A slow poll of the newest event id is the fallback for ledgers watchdog
cannot see (a database server).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Header, Static
from textual.worker import Worker, WorkerState
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.office import Office
from coop_engine.loop.survey import asking
from coop_engine.loop.watching import CHANGES, watch_changes
from coop_engine.queries.status import header_counts, unread_notices
from coop_tui.attention import Attention
from coop_tui.chats import Directory
from coop_tui.commands import CoopCommands
from coop_tui.coordination import Coordination
from coop_tui.decisions import Decisions, refused_here
from coop_tui.live import LivePanes
from coop_tui.messages import LedgerChanged, ResendRequested, WithdrawRequested
from coop_tui.shown import line, toast
from coop_tui.widgets.panes import HostsPane, OutboxPane, SessionsPane

Clock = Callable[[], float]
STOP_SECONDS = 10.0
# Actions on the three panes and their selection: only while the panes are on screen.
PANE_ACTIONS = frozenset(
    {
        "focus_pane",
        "resend",
        "withdraw",
        "adoption",
        "inspect",
        "invite",
        "notifications",
        "filter",
        "clear_filter",
    }
)


class _LedgerWatch(FileSystemEventHandler):
    """Only signals; the app's worker does the reading."""

    def __init__(self, app: CoopApp) -> None:
        self.app = app

    def on_any_event(self, event: FileSystemEvent) -> None:
        # Changes only (the watch asks for no opens or reads): a reader changes nothing.
        if event.event_type not in CHANGES:
            return
        if os.path.basename(os.fsdecode(event.src_path)).startswith("coop.db"):
            self.app.post_message(LedgerChanged())

    def on_events_lost(self, event: FileSystemEvent) -> None:
        self.app.post_message(LedgerChanged())  # the ledger may have changed unseen


class CoopApp(LivePanes, Decisions, Coordination, Attention):
    CSS_PATH = "coop.tcss"
    TITLE = "Coop"
    SUB_TITLE = "the fleet's deliveries"
    # The ledger file is watched; this poll only catches a change the watch missed.
    LEDGER_POLL_SECONDS: ClassVar[float] = 2.0
    COMMANDS = App.COMMANDS | {CoopCommands}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "question_mark",
            "help",
            "Help",
            key_display="?",
            id="help",
            tooltip="Every key, and what the fact marks mean",
        ),
        Binding("q", "quit", "Quit", id="quit", tooltip="Stop the coordinator and leave"),
        Binding("1", "focus_pane('hosts')", "Macs", id="pane.hosts", tooltip="Focus the Macs pane"),
        Binding(
            "2",
            "focus_pane('sessions')",
            "Chats",
            id="pane.sessions",
            tooltip="Focus the chats pane",
        ),
        Binding(
            "3", "focus_pane('outbox')", "Outbox", id="pane.outbox", tooltip="Focus the outbox pane"
        ),
        Binding(
            "r",
            "resend",
            "Send again",
            id="resend",
            tooltip="Send again an expired delivery, once, as Dad",
        ),
        Binding(
            "a",
            "adoption",
            "Adoption",
            id="adoption",
            tooltip="CLI takers, where they were searched, adopt one",
        ),
        Binding(
            "c",
            "inspect",
            "Inspect chat",
            id="inspect",
            tooltip="The chat's registry entry and transcript tail",
        ),
        Binding("i", "invite", "Invite", id="invite", tooltip="Invite a chat to a todo"),
        Binding(
            "exclamation_mark",
            "notifications",
            "Notices",
            key_display="!",
            id="notifications",
            tooltip="What Dad was told, newest first",
        ),
        Binding(
            "f",
            "filter",
            "Filter",
            id="filter",
            tooltip="Filter the outbox: every word, any column (state, reason, chat, Mac, id)",
        ),
        Binding(
            "plus",
            "add_todo",
            "Add todo",
            key_display="+",
            id="add_todo",
            tooltip="Add a todo, as Dad",
        ),
        Binding(
            "escape",
            "clear_filter",
            "Clear filter",
            key_display="esc",
            id="clear_filter",
            tooltip="Show every Mac's chats and every envelope",
        ),
    ]
    # How often the app asks the ledger's claim who coordinates (a few seconds at most
    # between a coop serve's end and the status line saying so).

    def __init__(
        self,
        home: Path,
        office: Office,
        *,
        clock: Clock = time.time,
        coordinator: str = "auto",
        banner: str | None = None,
        survey_interval: float = 5.0,
        engine: Engine | None = None,
        first_adoption_after: float = 0.0,
    ) -> None:
        super().__init__()
        self.home = home
        self.office = office
        self.clock = clock
        self.coordinator_mode = coordinator
        self.banner = banner
        self.survey_interval = survey_interval
        self.engine = engine
        self.first_adoption_after = first_adoption_after
        self.surveys: dict[str, dict[str, Any]] = {}
        self.session_rows: list[dict[str, Any]] = []
        self.host_filter: str | None = None
        self.session_filter: int | None = None
        self.text_filter: str | None = None
        self.last_event = 0
        self._refreshing = False
        self._refresh_again = False
        self._server: Any = None
        self._coordinator: threading.Thread | None = None
        self._observer: Any = None
        self._asking: set[str] = set()
        self._ledger_ready = False
        self._trailing: list[Timer] = []
        self.outbox_total = 0
        self._sessions_shown: list[dict[str, Any]] | None = None
        self.chats = Directory()
        self.counts: dict[str, int] = {}

    # --- layout -------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header()
        # Kept, not queried: results from threads may arrive while the app closes, when
        # the screen no longer holds them (see `_showing`).
        self.hosts_pane = HostsPane(id="hosts")
        self.sessions_pane = SessionsPane(id="sessions")
        self.outbox_pane = OutboxPane(id="outbox")
        with Vertical(id="panes"):
            yield self.hosts_pane
            yield self.sessions_pane
            yield self.outbox_pane
        yield Static(id="status")
        # Compact: every key of the panes fits on one line at 160 columns.
        yield Footer(compact=True)

    def on_mount(self) -> None:
        for pane in (self.hosts_pane, self.sessions_pane, self.outbox_pane):
            pane.border_title = pane.BORDER_TITLE
        self.outbox_pane.focus()
        # Every Mac has its row from the start, in fleet order: one that has not
        # answered yet says so, and the cursor never depends on who answered first.
        self.hosts_pane.replace_rows(asking(name) for name in self.office.names)
        self.open_ledger()
        self.set_interval(self.survey_interval, self.survey_fleet)
        self.set_interval(5.0, self.refresh_ages)
        self.set_interval(self.LEDGER_POLL_SECONDS, self.poll_ledger)
        self.survey_fleet()

    @work(thread=True, group="ledger", exit_on_error=False)
    def open_ledger(self) -> None:
        engine = self.engine or Engine(open_ledger(self.home), clock=self.clock, actor="dad")
        window = queries.outbox_window()
        sessions = queries.session_rows()
        last = queries.latest_event()
        attention = (header_counts(), unread_notices(0))
        self.call_from_thread(self._ledger_opened, engine, window, sessions, last, attention)

    def _ledger_opened(
        self,
        engine: Engine,
        window: queries.OutboxWindow,
        sessions: list[dict[str, Any]],
        last: int,
        attention: tuple[dict[str, int], tuple[int, int]],
    ) -> None:
        self.engine = engine
        if not self._showing():
            return
        self._ledger_ready = True
        self.last_event = last
        self._attention_read(*attention)
        self.session_rows = sessions
        # The chats first: the window's rows are then made with their chats' names,
        # rather than made and then each patched again.
        self._show_sessions()
        self._show_window(window)
        self._watch_ledger()
        self._start_coordinator()

    def _watch_ledger(self) -> None:
        if not self.home.is_dir():
            return
        self._observer = Observer()
        watch_changes(self._observer, _LedgerWatch(self), str(self.home))
        self._observer.daemon = True
        self._observer.start()

    def _status(self, text: str) -> None:
        """The status line: who coordinates (a claim's record names its holder, and
        anyone with the home can write it), and the banner; one line, as written."""
        parts = [text]
        if self.banner:
            parts.append(self.banner)
        self.query_one("#status", Static).update(line(" · ".join(parts)))

    async def action_quit(self) -> None:
        self.exit()

    # --- what the screens and workers tell the app ---------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        self.report_worker(event)

    def report_worker(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker (the app's or a screen's) becomes visible: a
        notice that stays until read, naming what failed and why."""
        if event.state is not WorkerState.ERROR:
            return
        worker: Worker[object] = event.worker
        what = worker.name or worker.group or "a background task"
        toast(
            self, line(f"{what} failed: {worker.error}"), title="Coop", severity="error", timeout=30
        )

    def on_resend_requested(self, message: ResendRequested) -> None:
        if refused_here(self):
            return
        self.request_resend(message.outbox_id, message.done)

    def on_withdraw_requested(self, message: WithdrawRequested) -> None:
        if refused_here(self):
            return
        self.request_withdraw(message.outbox_id, message.done)

    def on_unmount(self) -> None:
        """However the app ends (q, ctrl+c, a pilot's exit), the coordinator thread and
        the ledger watch stop with it, and the claim goes with the coordinator."""
        with self._claim_guard:
            # A claim check still running starts no coordinator after this.
            self._closing = True
        if self._server is not None:
            self._server.stop()
        if self._observer is not None:
            self._observer.stop()
        # The pass at hand finishes (every step of it is committed before the next).
        if self._coordinator is not None:
            self._coordinator.join(STOP_SECONDS)
        if self._observer is not None:
            self._observer.join(STOP_SECONDS)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The pane keys act on the panes: over another screen they are neither shown
        nor run (`r` in the adoption review must not resend the envelope under it)."""
        if action in PANE_ACTIONS and len(self.screen_stack) > 1:
            return False
        return True

    # --- selecting and filtering ---------------------------------------------------------

    @on(DataTable.RowSelected, "#hosts")
    def _host_selected(self, event: DataTable.RowSelected) -> None:
        self.host_filter = str(event.row_key.value)
        self._show_sessions()
        self.sessions_pane.focus()

    @on(DataTable.RowSelected, "#sessions")
    def _session_selected(self, event: DataTable.RowSelected) -> None:
        row = self.sessions_pane.selected()
        if row is None or row.get("id") is None:
            toast(self, line("This chat has no envelopes yet: invite it with i"))
            return
        self.session_filter = int(row["id"])
        self._reload_window()
        self.outbox_pane.focus()

    @on(DataTable.RowSelected, "#outbox")
    def _envelope_selected(self, event: DataTable.RowSelected) -> None:
        from coop_tui.screens.delivery import DeliveryScreen

        self.push_screen(DeliveryScreen(str(event.row_key.value)))

    def _reload_window(self) -> None:
        self._load_window(self.session_filter, self.text_filter)

    @work(thread=True, group="filter", exclusive=True, exit_on_error=False)
    def _load_window(self, session_id: int | None, text: str | None) -> None:
        window = queries.outbox_window(session_id, text=text)
        self.call_from_thread(self._show_filtered, window, session_id, text)

    def _show_filtered(
        self, window: queries.OutboxWindow, session_id: int | None, text: str | None
    ) -> None:
        """A window read for an older keystroke (or chat) is dropped: the newest wins."""
        if (session_id, text) == (self.session_filter, self.text_filter):
            self._show_window(window)

    def action_focus_pane(self, name: str) -> None:
        self.query_one(f"#{name}").focus()

    def action_clear_filter(self) -> None:
        self.host_filter = None
        self.session_filter = None
        self.text_filter = None
        self._show_sessions()
        self._reload_window()

    def action_filter(self) -> None:
        """The filter applies as it is typed; escape puts back the one before."""
        from coop_tui.screens.dialogs import FilterDialog

        before = self.text_filter

        def live(text: str) -> None:
            self.text_filter = text.strip() or None
            self._reload_window()

        def apply(text: str | None) -> None:
            live((before or "") if text is None else text)

        self.push_screen(FilterDialog(self.text_filter or "", live), apply)

    def action_add_todo(self) -> None:
        from coop_tui.screens.dialogs import AddTodoDialog

        if refused_here(self):
            return
        self.push_screen(AddTodoDialog())

    def action_adoption(self) -> None:
        from coop_tui.screens.adoption import AdoptionScreen

        self.push_screen(AdoptionScreen())

    def action_inspect(self) -> None:
        from coop_tui.screens.inspector import InspectorScreen

        row = self.sessions_pane.selected()
        if row is None:
            toast(self, line("Select a chat in the chats pane first"), severity="warning")
            return
        self.push_screen(InspectorScreen(row))

    def action_notifications(self) -> None:
        from coop_tui.screens.notices import NotificationsScreen

        self.notices_read()
        self.push_screen(NotificationsScreen())

    def action_help(self) -> None:
        from coop_tui.screens.help import HelpScreen

        self.push_screen(HelpScreen())


if TYPE_CHECKING:
    from coop_tui.seat import TheApp

    def _seated(app: CoopApp) -> TheApp:
        return app  # mypy: the app is what its screens take it for (coop_tui/seat.py)
