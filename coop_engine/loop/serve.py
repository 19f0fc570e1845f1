"""`coop serve`: the coordinator running until stopped.

One coordinator per ledger: serve (and the app's in-process coordinator) takes the
ledger's claim (claim.py) before its first pass and holds it while its process lives; a
second one is refused at once, naming the first. Each pass beats the claim's heartbeat.

Each Mac has its own worker (loop/macs.py), so no Mac waits for another. A pass runs
because something changed or because something is due, never on its own reads:
watchdog watches this Mac's registry folder and the transcript folders of chats with
envelopes in flight, asking the kernel only for files created, written, moved or deleted
(loop/watching.py: never for an open or a read, Coop's own reads among them); another
Mac's helper answers a long-poll; a commit to the ledger (a `coop invite` from another
process), once a reader can see it (loop/news.py), wakes the workers that have an
envelope to send. Otherwise a Mac sleeps until its next due time (a verdict's grace, a
paced envelope's turn), the ledger's chores until theirs (an obligation, the adoption
minute, the heartbeat), each at most `longest` seconds.
After the chores, each event since the last round that needs a decision from Dad (an
expiry, a conflict, a hold, a refused adoption, an overdue obligation) goes to the
notifier (loop/notifier.py), as fleet.toml's `[notify]` allows.

While it runs, the CLI on its home asks it over the hub (loop/hub.py, answered by
loop/desk.py) whatever touches the fleet, rather than opening connections of its own:
the listings, the questions `coop invite`, `coop resend` and `coop chief set` put to the
Macs, `coop withdraw`, `coop adopt --once` (this coordinator's adoption pass,
`adopt_now`) and `coop tick`, which is a pass of this coordinator's on every Mac
(`pass_now`), never a second coordinator's pass beside it. SIGTERM or Ctrl-C
finishes the command at hand and exits; a SIGKILL loses nothing, since every step is
committed before the next one starts and a restart reconciles uncertain envelopes
first.

A pass never dies of a refusal: a step that the ledger (locked, full, read-only), a rule
or a Mac refused costs that step, is logged once (and once more when its cause changes
or clears), and the next pass tries again. Anything else is a bug in Coop's own code: it
stops the coordinator with its traceback in the log, and `coop serve` exits 1.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from peewee import fn
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from coop_engine.db import LedgerError, is_sqlite, ledger_fault
from coop_engine.engine import Engine
from coop_engine.errors import CoopError, Fenced
from coop_engine.formats import iso
from coop_engine.home import ensure_home
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.loop.claim import Claimed, LedgerClaim, ledger_claim
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.desk import Desk
from coop_engine.loop.hub import Hub, HubError
from coop_engine.loop.macs import LONG_POLL_SECONDS, RETRY_MOST, MacWorker
from coop_engine.loop.news import LedgerNews
from coop_engine.loop.notifier import Notifier
from coop_engine.loop.watching import CHANGES, watch_changes
from coop_engine.models import Obligation
from coop_engine.queries import latest_event
from coop_engine.queries.status import alerts_between
from hosts.fleet import Fleet
from hosts.mac.errors import HostsError
from hosts.mac.local import LocalHost

MIN_PASS_GAP = 0.05
PASS_WAIT = 90.0  # how long `coop tick` waits for this coordinator's pass on every Mac
LONGEST = 30.0  # the longest a Mac goes unsurveyed, or the ledger unswept, when idle
HEARTBEAT_SECONDS = 10.0
LEDGER_FILES = "coop.db"  # the ledger, its -wal and -shm: a write there says look for news
Log = Callable[[str], None]
Errors = tuple[type[Exception], ...]


class _Signal(FileSystemEventHandler):
    """Only signals, and only for a change: no I/O in watchdog's thread."""

    def __init__(self, wake: Callable[[], None], wanted: Callable[[str], bool]) -> None:
        self.wake = wake
        self.wanted = wanted

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGES:
            return  # an open, or a close without a write: Coop's own reads among them
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        if any(path and self.wanted(os.fsdecode(path)) for path in paths):
            self.wake()

    def on_events_lost(self, event: FileSystemEvent) -> None:
        self.wake()  # whatever was wanted may have changed unseen


def is_ledger_file(path: str) -> bool:
    """A file whose change may be another process's command: the SQLite ledger's."""
    return os.path.basename(path).startswith(LEDGER_FILES)


class Refusals:
    """Which steps of the loop are failing, and of what: one cause is told once, and
    again only when it changes or clears, never once a pass."""

    def __init__(self, log: Log) -> None:
        self.log = log
        self.failing: dict[str, tuple[str, bool]] = {}  # step -> (what was told, ledger's?)

    def failed(self, what: str, told: str, on_the_ledger: bool) -> None:
        if self.failing.get(what, ("", False))[0] != told:
            self.log(told)
        self.failing[what] = (told, on_the_ledger)

    def ran(self, what: str) -> None:
        told = self.failing.pop(what, None)
        if told is not None:
            _, on_the_ledger = told
            self.log(f"{what} ran again" + (": the ledger is writable again" * on_the_ledger))


def refused(what: str, error: Exception, also: Errors = ()) -> str | None:
    """The line that tells a step was refused (the ledger failing under it, a rule, a
    Mac, or one of `also`), or None when the error is a bug in Coop's own code."""
    fault = ledger_fault(error)
    if fault is not None:
        cause = (str(error).strip().splitlines() or [type(error).__name__])[0]
        # The ledger's words when they say more than the error does (the disk is full).
        explained = "" if fault.endswith(cause) else f" ({fault})"
        return f"{what} failed on the ledger: {cause}{explained}; the next pass tries again"
    if isinstance(error, HostsError):
        return f"{what} failed on a Mac: {error}; the next pass tries again"
    if isinstance(error, CoopError):
        return f"{what} was refused: {error}; the next pass tries again"
    if isinstance(error, also):
        return f"{what} failed: {error}; the next pass tries again"
    return None


def stamped(log: Log) -> Log:
    def write(line: str) -> None:
        log(f"{iso(time.time(), 'seconds')} {line}")

    return write


class Server:
    def __init__(
        self,
        engine: Engine,
        fleet: Fleet,
        home: Path,
        log: Log,
        pass_interval: float = LONGEST,
        adoption_interval: float = 60.0,
        first_adoption_after: float = 0.0,
        claim: LedgerClaim | None = None,
        long_poll_seconds: float = LONG_POLL_SECONDS,
        retry_most: float = RETRY_MOST,
        notifier: Notifier | None = None,
    ) -> None:
        self.engine = engine
        self.fleet = fleet
        self.home = home
        self.log = log
        self.coordinator = Coordinator(engine, fleet.hosts, log)
        # Adoption's search asks the Macs that answered the last pass first.
        self.adoption = AdoptionPass(
            engine, fleet.hosts, fleet.office, log, self.coordinator.reachable
        )
        self.pass_interval = pass_interval  # the longest anything waits when nothing is due
        self.adoption_interval = adoption_interval
        self.first_adoption_after = first_adoption_after
        self.wake = threading.Event()  # the ledger's files changed
        self.stopping = threading.Event()
        self.observer = Observer()
        self._watched: dict[str, Any] = {}
        self.claim = claim if claim is not None else ledger_claim(engine.db)
        self.refusals = Refusals(log)
        self.notifier = notifier if notifier is not None else Notifier(fleet.notify)
        self._told_upto: int | None = None  # the last event the notifier was shown
        self._news_since_chores = False  # a commit seen since the ledger's chores last ran
        self.failure: str | None = None  # why the coordinator stopped on its own, if it did
        self.stepped_down = False  # it lost the ledger to another coordinator
        self.workers = {
            name: MacWorker(
                name,
                self.coordinator,
                self._guarded,
                self.stopping,
                pass_interval,
                log,
                after_pass=partial(self._after_pass, name),
                crashed=self._crashed,
                long_poll=not (name == fleet.office and isinstance(host, LocalHost)),
                long_poll_seconds=long_poll_seconds,
                retry_most=retry_most,
            )
            for name, host in fleet.hosts.items()
        }
        self.hub: Hub | None = None
        self.news: LedgerNews | None = None  # what the loop's rounds saw of the ledger
        self.crash: BaseException | None = None  # a worker's bug, which stops serve
        self._beating = threading.Lock()
        self._adopting = threading.Lock()  # the loop's adoption pass, or `coop adopt --once`
        self._watching = threading.Lock()
        self._wanted: set[str] = set()  # the files this Mac's watch is for
        self._sessions = ""  # this Mac's registry folder

    # --- watching -------------------------------------------------------------------

    def _local(self) -> LocalHost | None:
        host = self.fleet.hosts.get(self.fleet.office)
        return host if isinstance(host, LocalHost) else None

    def _watch(self, folder: str, wake: Callable[[], None], wanted: Callable[[str], bool]) -> None:
        if folder in self._watched or not os.path.isdir(folder):
            return
        self._watched[folder] = watch_changes(self.observer, _Signal(wake, wanted), folder)

    def _refresh_watches(self) -> None:
        """What this Mac's last survey watched: the registry folder, and the transcripts
        of chats with envelopes in flight (a transcript not written yet: the nearest
        folder on its way that exists, for the folder or file to come)."""
        local = self._local()
        if local is None:
            return
        watching = self.coordinator.views[local.name].watching
        sessions = os.path.join(local.config_dir, "sessions")
        paths = watching["paths"] if watching else [sessions]
        with self._watching:
            self._wanted = set(paths)
            self._sessions = sessions
            wake = self.workers[local.name].changed
            for path in paths:
                folder = path if path == sessions else os.path.dirname(path)
                while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
                    folder = os.path.dirname(folder)
                self._watch(folder, wake, self._wants)

    def _wants(self, changed: str) -> bool:
        """A registry entry, a watched transcript, or a folder on the way to one."""
        if os.path.dirname(changed) == self._sessions and changed.endswith(".json"):
            return True
        wanted = self._wanted
        return changed in wanted or any(path.startswith(changed + os.sep) for path in wanted)

    # --- running --------------------------------------------------------------------

    def stop(self, *_: object) -> None:
        self.stopping.set()
        self.wake.set()

    def take(self, by: str) -> None:
        """Take the ledger's claim for this process (`by`: serve, or app) and record it.
        Claimed, naming the holder, when another coordinator holds the ledger."""
        self.claim.take(self.fleet.office, by)
        # Every intent to send carries the lease's epoch, and the renewer that finds the
        # lease lost stops this coordinator at once.
        self.engine.epoch = self.claim.epoch
        self.claim.on_lost = self._crashed
        self._beat()

    def run(self) -> int:
        """Serve in the main thread, holding the ledger's claim, until SIGTERM or Ctrl-C
        (0). Claimed when another coordinator holds the ledger; 1 when serve stopped on
        an error in Coop itself, or lost its claim (fenced out by a successor)."""
        self.take("serve")
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        return 0 if self._serve_claimed() else 1

    def start_thread(self) -> threading.Thread:
        """Serve in a background thread (the app's in-process coordinator), holding the
        ledger's claim: Claimed when another coordinator holds the ledger."""
        self.take("app")
        thread = threading.Thread(target=self._serve_claimed, name="coordinator", daemon=True)
        thread.start()
        return thread

    def _serve_claimed(self) -> bool:
        """Serve, then let the claim go. False, with `failure` saying why, when the
        coordinator stopped on its own: a bug in Coop, or a claim lost to another."""
        try:
            self.serve()
            if self.crash is not None:
                raise self.crash
            return True
        except Claimed as lost:
            self.stepped_down = True
            self.failure = f"the claim on this ledger was lost: {lost}"
            self.log(f"stopped: {self.failure}")
        except Fenced as lost:
            self.stepped_down = True
            self.failure = str(lost)
            self.log(f"stepped down: {self.failure}")
        except Exception as error:
            self.failure = "".join(traceback.format_exception(error))
            self.log(f"stopped by an error in Coop itself:\n{self.failure.rstrip()}")
        finally:
            self.engine.epoch = None
            self.claim.on_lost = None
            self.claim.release()
        return False

    def serve(self) -> None:
        self._watch(str(self.home), self.wake.set, is_ledger_file)
        self._guarded("watching transcripts", self._refresh_watches, OSError)
        self.observer.start()
        self._open_hub()
        for worker in self.workers.values():
            worker.start()
        self.log(f"serving {len(self.fleet.hosts)} Mac(s); office is {self.fleet.office}")
        self.news = news = LedgerNews(self.engine.db)
        try:
            self._loop(news)
        finally:
            news.close()
            self.stopping.set()
            for worker in self.workers.values():
                worker.stop()
            if self.hub is not None:
                self.hub.close()
            self.observer.stop()
            for worker in self.workers.values():
                worker.join(5)
            self.observer.join(5)
        self.log("stopped")

    def _open_hub(self) -> None:
        """The fleet commands' way to this coordinator; without one they connect themselves."""
        try:
            ensure_home(self.home)  # a ledger on a database server needs no home of its own
            desk = Desk(self.fleet, self.coordinator.unreachable, self)
            self.hub = Hub(self.home, desk.answer).start()
        except (HubError, LedgerError) as error:
            self.log(f"the CLI's fleet commands connect themselves: {error}")

    def adopt_now(self) -> list[dict[str, Any]]:
        """The adoption pass, now, one at a time (the loop's own, `coop adopt --once`)."""
        with self._adopting:
            return self.adoption.run()

    def pass_now(self, wait: float = PASS_WAIT) -> dict[str, Any]:
        """A pass on every Mac, each begun after this call (the ledger's chores are woken
        too, not waited for): `{macs: [{host, passed, reason}]}` once every Mac's worker
        finished its pass or `wait` seconds passed (`passed` false, `reason` why). A Mac
        that could not be asked has passed, with the reason its envelopes wait."""
        tickets = {name: worker.ask_pass() for name, worker in self.workers.items()}
        self.wake.set()
        deadline = time.monotonic() + wait
        macs = []
        for name, worker in self.workers.items():
            if not worker.await_pass(tickets[name], deadline):
                why = "the coordinator is stopping" if self.stopping.is_set() else None
                reason = why or f"its pass did not finish within {wait:.0f} s"
                macs.append({"host": name, "passed": False, "reason": reason})
                continue
            unreachable = self.coordinator.unreachable.get(name)
            macs.append({"host": name, "passed": True, "reason": unreachable})
        return {"macs": macs}

    def _guarded(self, what: str, step: Callable[[], object], *also: type[Exception]) -> bool:
        """Run one step of the loop; True when it ran. A refusal (the ledger locked past
        the busy timeout, full, read-only or gone; a rule; a Mac; `also`) costs that step,
        not the coordinator: every command is one transaction, so the next pass starts
        from what was committed. Anything else is a bug in Coop, and propagates."""
        try:
            step()
        except (Claimed, Fenced):
            raise  # another coordinator has the ledger now: this one must stop
        except Exception as error:
            told = refused(what, error, also)
            if told is None:
                raise
            on_the_ledger = ledger_fault(error) is not None
            if on_the_ledger:
                self._reconnect_later()
            self.refusals.failed(what, told, on_the_ledger)
            return False
        self.refusals.ran(what)
        return True

    def _reconnect_later(self) -> None:
        """A database server's connection that failed stays failed: close this thread's,
        so the next step opens another. A SQLite connection recovers by itself."""
        db = self.engine.db
        if not is_sqlite(db) and not db.in_transaction():
            db.close()

    def _beat(self) -> None:
        """Record a pass on the claim's heartbeat: after each Mac's pass, and every
        HEARTBEAT_SECONDS while nothing needs one."""
        with self._beating:
            self._guarded("the heartbeat", partial(self.claim.beat, time.time()), OSError)

    def _after_pass(self, name: str) -> None:
        self._beat()
        if name == self.fleet.office:
            self._guarded("watching transcripts", self._refresh_watches, OSError)

    def _crashed(self, error: BaseException) -> None:
        """A worker stopped on a bug in Coop's own code: the coordinator stops with it."""
        if self.crash is None:
            self.crash = error
        self.stopping.set()
        self.wake.set()

    def _loop(self, news: LedgerNews) -> None:
        """The ledger's side: its chores when it changed or they are due, and the news
        (a commit a reader can see: loop/news.py) passed to every Mac's worker; the Macs'
        passes run in their workers."""
        adoption_due = time.monotonic() + self.first_adoption_after
        beat_due = chores_due = 0.0
        while not self.stopping.is_set():
            event = self.wake.is_set()
            self.wake.clear()  # a change during this round wakes the next one at once
            started = time.monotonic()
            self._look(news, event, started)  # first: a receipt waits on no chore
            if self._news_since_chores or started >= chores_due:
                # The chores read the ledger alone: with no commit since they last ran and
                # nothing falling due, they would find what they found then. A round woken
                # only to look for a commit not yet visible costs one PRAGMA.
                self._news_since_chores = False
                self._guarded("the ledger's chores", self._chores)
                self._guarded("the notifier", self._tell)
                chores_due = self._chores_due(started)
            if started >= adoption_due and not self.stopping.is_set():
                self._guarded("the adoption pass", self.adopt_now)
                adoption_due = started + self.adoption_interval
            if started >= beat_due:
                self._beat()
                beat_due = started + HEARTBEAT_SECONDS
            self._gap(news, started + MIN_PASS_GAP)  # a burst of writes is one change
            due = [adoption_due, beat_due, chores_due]
            look = news.next_look()
            if look is not None:
                due.append(look)
            self.wake.wait(max(0.0, min(due) - time.monotonic()))

    def _chores_due(self, now: float) -> float:
        """When the chores run again without news (monotonic): when the next open
        obligation falls due, and at the latest after `pass_interval`."""
        due = now + self.pass_interval
        obligation = self._next_obligation()
        if obligation is not None:
            due = min(due, now + max(0.0, obligation - self.engine.clock()))
        return due

    def _look(self, news: LedgerNews, event: bool, now: float) -> None:
        """Tell the workers of a commit a reader can see (loop/news.py), never of a file
        event alone: an event only says when to look. The loop's next round runs the
        chores for it."""
        changed = news.take(event, now)
        if changed:
            self._news_since_chores = True
            for worker in self.workers.values():
                worker.news()

    def _gap(self, news: LedgerNews, until: float) -> None:
        """The pause between the loop's rounds, until `until` (monotonic). The news is
        still looked at when due meanwhile (a commit not yet visible at its event is
        visible a few milliseconds later), and told to the workers at once: an envelope
        to send waits for its commit to be seen, not for the ledger's next round."""
        while not self.stopping.is_set():
            now = time.monotonic()
            look = news.next_look()
            if look is None or look >= until:
                time.sleep(max(0.0, until - now))
                return
            time.sleep(max(0.0, look - now))
            self._look(news, False, time.monotonic())

    def _chores(self) -> None:
        self.coordinator.cancel_stale()
        self.coordinator.chores(self.engine.clock())

    def _tell(self) -> None:
        """The alerts since the last round, to the notifier, in a thread of their own: a
        slow notifier never holds up the loop. The history before serve started is not
        news."""
        if self._told_upto is None:
            self._told_upto = latest_event()
            return
        upto = latest_event()
        if upto <= self._told_upto:
            return
        alerts = [a for a in alerts_between(self._told_upto, upto) if self.notifier.wants(a)]
        self._told_upto = upto
        if alerts:
            threading.Thread(
                target=lambda: [self.notifier.tell(alert) for alert in alerts],
                name="notifier",
                daemon=True,
            ).start()

    def _next_obligation(self) -> float | None:
        """When the next open obligation falls due (the ledger's clock)."""
        try:
            due = Obligation.select(fn.MIN(Obligation.due_at)).where(Obligation.state == "open")
            at = due.scalar()
        except Exception as error:
            if ledger_fault(error) is None:
                raise
            return None  # the chores' own refusal tells of the ledger
        return None if at is None else float(at)
