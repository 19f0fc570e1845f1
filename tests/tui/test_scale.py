"""An event costs what it changes, not the ledger's history ([6/6] item 2).

The same three events (a new invitation, a shown envelope expiring, that invitation
withdrawn) are applied by the app over a ledger of 100 envelopes and over one of 10,000,
sorted by state with the cursor on an older row. At both sizes each event touches the
outbox pane's rows it changes and no other (a row made, or one row's cells written),
the changed row takes its place in the sort, the cursor stays on its row, and the header
counts move. The ledger is asked the same questions at both sizes, and what SQLite does
to answer them (its virtual machine's instructions, counted by a progress handler: no
clock) does not grow with the history: the header's counts come from indexes, not from
a scan of the outbox.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import peewee as pw
import pytest
from textual import work
from textual.pilot import Pilot
from tuikit import T0, flat, screen_text, until

from coop_engine.db import SqliteLedger, open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.office import Office
from coop_engine.models import Event, Outbox, Session, Todo, database
from coop_engine.queries import OUTBOX_WINDOW
from coop_tui.app import CoopApp
from coop_tui.live import TRAILING_READS, LivePanes
from coop_tui.messages import LedgerChanged
from hosts.fleet import Fleet

pytestmark = pytest.mark.tui

SMALL, LARGE = 100, 10_000
CHATS = 20
# The newest envelopes are the ones that may need Dad, at both sizes alike; the history
# below them (what grows) is delivered or cancelled, as a ledger's history is.
NEEDING = ("pending", "uncertain", "held", "expired")
NEEDS_DAD = 40
NOW = T0 + LARGE + 3600
EXPIRY = {"reason": "receiver-idle-without-entry", "observed_at": T0}
STEP = 10  # SQLite instructions between two calls of the progress handler
WAIT = 30.0  # bounds a wait for the app only


def newest(size: int, state: str) -> int:
    """The newest envelope of the ledger `history` wrote at this size in this state."""
    return max(n for n in range(size - NEEDS_DAD, size) if NEEDING[n % len(NEEDING)] == state)


def envelope_id(n: int) -> str:
    return str(uuid.UUID(int=(1 << 64) + n))


def native_id(n: int) -> str:
    return str(uuid.UUID(int=n + 1))


def history(home: Path, envelopes: int) -> None:
    """A ledger of `envelopes` outbox rows (and an enqueue event each), written in bulk."""
    db = open_ledger(home)
    with db.atomic():
        Session.insert_many(
            {
                "vendor": "claude",
                "host": "office",
                "native_id": native_id(n),
                "mode": "managed",
                "surface": "native",
                "status": "idle",
                "name": f"chat-{n}",
                "created_at": T0,
                "updated_at": T0,
            }
            for n in range(CHATS)
        ).execute()
        Todo.insert(title="Scale", state="open", created_at=T0).execute()

        def row(n: int) -> dict[str, Any]:
            newest = envelopes - n <= NEEDS_DAD
            state = NEEDING[n % len(NEEDING)] if newest else ("delivered", "cancelled")[n % 2]
            return {
                "id": envelope_id(n),
                "session": 1 + n % CHATS,
                "generation": 1,
                "kind": ("invitation", "work")[n % 2],
                "payload": {"text": f"Envelope {n}"},
                "state": "uncertain" if state == "held" else state,
                "held": {"cause": "explicit"} if state == "held" else None,
                # The reason the event's expiry gives: its column is already as wide.
                "expiry": EXPIRY if state == "expired" else None,
                "created_at": T0 + n,
                "updated_at": T0 + n,
            }

        for batch in pw.chunked((row(n) for n in range(envelopes)), 500):
            Outbox.insert_many(batch).execute()
        events = (
            {
                "at": T0 + n,
                "who": "coop",
                "command": "enqueue",
                "subject": f"outbox:{envelope_id(n)}",
                "to_state": "pending",
            }
            for n in range(envelopes)
        )
        for batch in pw.chunked(events, 500):
            Event.insert_many(batch).execute()
    db.close()


@dataclass
class Applied:
    """What one event did to the app: the pane's rows touched, the ledger's work."""

    name: str
    changed: str  # the envelope the event changed
    touched: Counter[str] = field(default_factory=Counter)  # row key -> cells written
    made: list[str] = field(default_factory=list)  # rows added
    removed: list[str] = field(default_factory=list)
    cleared: int = 0
    statements: set[str] = field(default_factory=set)
    reads: list[int] = field(default_factory=list)  # instructions, per read of the ledger
    header_before: str = ""
    header_after: str = ""
    selected_kept: bool = False
    in_sorted_place: bool = False

    def costliest_read(self) -> int:
        return max(self.reads, default=0)


class Watch:
    """Counts, while `on`, what the outbox pane is asked to do and what the ledger is
    asked and does: every statement peewee runs (its text), and the instructions SQLite
    runs for each of the app's reads of what changed (live.LivePanes._refresh)."""

    def __init__(self) -> None:
        self.on = False
        self.now: Applied | None = None
        self.steps: Counter[int] = Counter()  # thread -> instructions so far
        self._lock = threading.Lock()

    def step(self) -> int:
        with self._lock:
            self.steps[threading.get_ident()] += STEP
        return 0  # go on

    def connections(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Every connection to a SQLite ledger counts its instructions."""
        made = SqliteLedger._connect

        def connect(db: SqliteLedger) -> sqlite3.Connection:
            conn = made(db)
            conn.set_progress_handler(self.step, STEP)
            return conn

        monkeypatch.setattr(SqliteLedger, "_connect", connect)

    def refreshes(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Each read of what changed records the instructions it cost (on its thread,
        which a pool reuses: what it adds to that thread's count)."""
        read = LivePanes._refresh.__wrapped__  # type: ignore[attr-defined]

        @work(thread=True, group="ledger", exit_on_error=False)
        def measured(app: LivePanes, *args: Any) -> None:
            thread = threading.get_ident()
            before = self.steps[thread]
            applied = self.now if self.on else None
            try:
                read(app, *args)
            finally:
                if applied is not None:
                    applied.reads.append(self.steps[thread] - before)

        monkeypatch.setattr(LivePanes, "_refresh", measured)

    def pane(self, pane: Any) -> None:
        def counted(name: str, record: Callable[[Applied, Any], None]) -> None:
            original = getattr(pane, name)

            def call(*args: Any, **kwargs: Any) -> Any:
                if self.on and self.now is not None:
                    record(self.now, (args, kwargs))
                return original(*args, **kwargs)

            setattr(pane, name, call)

        def cell(applied: Applied, call: Any) -> None:
            args, _ = call
            if str(args[1]) != "age":  # the ages are refreshed on a timer, not by events
                applied.touched[str(getattr(args[0], "value", args[0]))] += 1

        counted("update_cell", cell)
        counted("add_row", lambda applied, call: applied.made.append(str(call[1]["key"])))
        counted("remove_row", lambda a, call: a.removed.append(str(call[0][0].value)))

        def clear(applied: Applied, call: Any) -> None:
            applied.cleared += 1

        counted("clear", clear)


class Statements(logging.Handler):
    """peewee logs every statement it runs (its text and parameters) at DEBUG."""

    def __init__(self, watch: Watch) -> None:
        super().__init__(logging.DEBUG)
        self.watch = watch

    def emit(self, record: logging.LogRecord) -> None:
        if self.watch.on and self.watch.now is not None and isinstance(record.msg, tuple):
            self.watch.now.statements.add(str(record.msg[0]))


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Watch]:
    watch = Watch()
    watch.connections(monkeypatch)
    watch.refreshes(monkeypatch)
    logger = logging.getLogger("peewee")
    handler = Statements(watch)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield watch
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def header(app: Any) -> str:
    return flat(screen_text(app).splitlines()[0])


def run_events(home: Path, watch: Watch, size: int) -> list[Applied]:
    """The app over the ledger at `home`; the three events applied one by one, each
    signalled by hand after its commit (what is measured is applying it)."""
    app = CoopApp(home, Office(Fleet("office", {})), coordinator="none", clock=lambda: NOW)
    app.LEDGER_POLL_SECONDS = 3600.0  # nothing but the events reads the ledger
    app.CLAIM_CHECK_SECONDS = 3600.0
    applied: list[Applied] = []

    async def one(pilot: Pilot[None], name: str, write: Callable[[Engine], str]) -> Applied:
        app_: Any = pilot.app
        pane = app_.outbox_pane
        selected = pane.selected_key()
        result: dict[str, str] = {}

        def writer() -> None:
            result["id"] = write(Engine(database.obj, clock=lambda: NOW, actor="dad"))

        await asyncio.to_thread(writer)
        event = Applied(name, result["id"], header_before=header(app_))
        last = app_.last_event
        watch.now, watch.on = event, True
        app_.post_message(LedgerChanged())
        await until(pilot, lambda: app_.last_event > last, WAIT, f"{name} applied")
        # The trailing reads after a signal (live.TRAILING_READS) belong to it as well.
        await pilot.pause(max(TRAILING_READS) + 0.2)
        await until(pilot, lambda: not app_._refreshing, WAIT, "the last read applied")
        await pilot.pause()
        watch.on = False
        event.header_after = header(app_)
        event.selected_kept = pane.selected_key() == selected
        column = [sort_cell(pane, key) for key in ordered_keys(pane)]
        event.in_sorted_place = column == sorted(column)
        return event

    async def script(pilot: Pilot[None]) -> None:
        app_: Any = pilot.app
        pane = app_.outbox_pane
        await until(pilot, lambda: pane.row_count > 0, WAIT, "the outbox's rows")
        await until(pilot, lambda: app_._observer is not None, WAIT, "the ledger watch")
        app_._observer.stop()  # the signal is sent by hand, after each commit
        pane.focus()
        pane.sort_by("state")
        # The cursor on an envelope the events leave alone, below the ones they change.
        pane.move_cursor(row=min(pane.row_count - 1, NEEDS_DAD + 10))
        await pilot.pause()
        assert pane.selected_key() is not None
        watch.pane(pane)
        todo = Todo.get().id
        chat = f"claude:{native_id(0)}"
        invited = await one(pilot, "invite", lambda e: e.invite(todo, chat, "office")["outbox"])
        applied.append(invited)
        expiring = envelope_id(newest(size, "uncertain"))
        assert expiring in pane.rows_by_key
        applied.append(await one(pilot, "expire", lambda e: e.expire(expiring, EXPIRY)["outbox"]))
        applied.append(
            await one(pilot, "withdraw", lambda e: e.withdraw(invited.changed, "dad")["outbox"])
        )
        assert pane.rows_by_key[invited.changed]["state"] == "cancelled"
        assert pane.rows_by_key[expiring]["state"] == "expired"

    async def main() -> None:
        async with app.run_test(size=(160, 48)) as pilot:
            await script(pilot)

    asyncio.run(main())
    return applied


def ordered_keys(pane: Any) -> list[str]:
    return [str(row.key.value) for row in pane.ordered_rows]


def sort_cell(pane: Any, key: str) -> Any:
    from coop_tui.widgets.table import sort_key

    return sort_key(pane.get_cell(key, "state"))


@pytest.fixture
def both_sizes(tmp_path: Path, watch: Watch) -> dict[int, list[Applied]]:
    applied = {}
    for size in (SMALL, LARGE):
        home = tmp_path / f"home-{size}"
        history(home, size)
        applied[size] = run_events(home, watch, size)
    return applied


def test_each_event_touches_only_the_row_it_changes_at_100_and_at_10000_envelopes(
    both_sizes: dict[int, list[Applied]],
) -> None:
    for size, events in both_sizes.items():
        invite, expire, withdraw = events
        # A new envelope is one row made: nothing cleared, no other row written.
        assert invite.made == [invite.changed], (size, invite.made)
        assert not invite.cleared and not invite.touched, (size, invite.touched)
        # The window keeps at most OUTBOX_WINDOW rows: at 10,000 the oldest shown leaves.
        assert len(invite.removed) == (1 if size > OUTBOX_WINDOW else 0), size
        # A state that changes writes that row's cells, in place; nothing is made again.
        for event in (expire, withdraw):
            assert set(event.touched) == {event.changed}, (size, event.name, event.touched)
            assert not event.made and not event.removed and not event.cleared, (size, event)
        for event in events:
            assert event.selected_kept, (size, event.name)
            assert event.in_sorted_place, (size, event.name)
        # The counts in the header move with each event (10 of each state at first).
        assert "10 expired · 10 uncertain · 10 held · 10 pending" in invite.header_before
        assert "10 expired · 10 uncertain · 10 held · 11 pending" in invite.header_after
        assert "11 expired · 9 uncertain · 10 held · 11 pending" in expire.header_after
        assert "11 expired · 9 uncertain · 10 held · 10 pending" in withdraw.header_after


def test_the_ledger_does_as_much_per_event_at_10000_envelopes_as_at_100(
    both_sizes: dict[int, list[Applied]],
) -> None:
    small, large = both_sizes[SMALL], both_sizes[LARGE]
    for few, many in zip(small, large, strict=True):
        # The same questions, whatever the history.
        assert many.statements == few.statements, (many.name, many.statements ^ few.statements)
        # And no answer costs more for the history: a scan of 10,000 envelopes (or their
        # index) is tens of thousands of instructions more than at 100.
        assert few.costliest_read() > 0, few.name
        assert many.costliest_read() <= 2 * few.costliest_read(), (
            many.name,
            few.costliest_read(),
            many.costliest_read(),
        )
