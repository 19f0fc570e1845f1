"""`coop serve`: the coordinator running until stopped.

One coordinator per ledger: serve (and the app's in-process coordinator) takes the
ledger's claim (claim.py) before its first pass and holds it while its process lives; a
second one is refused at once, naming the first. Each pass beats the claim's heartbeat.

watchdog watches the local registry folder, the transcript folders of chats with
envelopes in flight, and the ledger's WAL (a `coop invite` from another process); its
handler only signals. The loop does the I/O: a pass over this Mac's chats when woken,
every Mac's on an interval, the adoption pass every minute. SIGTERM or Ctrl-C finishes
the command at hand and exits; a SIGKILL loses nothing, since every step is committed
before the next one starts and a restart reconciles uncertain envelopes first.

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

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from coop_engine.db import is_sqlite, ledger_fault
from coop_engine.engine import Engine
from coop_engine.errors import CoopError
from coop_engine.formats import iso
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.loop.claim import Claimed, LedgerClaim, ledger_claim
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox, Session
from hosts.fleet import Fleet
from hosts.mac.errors import HostsError
from hosts.mac.local import LocalHost

MIN_PASS_GAP = 0.05
LEDGER_FILES = "coop.db"  # the ledger, its -wal and -shm: a write there is news
Log = Callable[[str], None]
Errors = tuple[type[Exception], ...]


class _Signal(FileSystemEventHandler):
    """Only signals: no I/O in watchdog's thread."""

    def __init__(self, wake: threading.Event, wanted: Callable[[str], bool]) -> None:
        self.wake = wake
        self.wanted = wanted

    def on_any_event(self, event: FileSystemEvent) -> None:
        if self.wanted(os.fsdecode(event.src_path)):
            self.wake.set()


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
        pass_interval: float = 1.0,
        remote_interval: float = 3.0,
        adoption_interval: float = 60.0,
        first_adoption_after: float = 0.0,
        claim: LedgerClaim | None = None,
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
        self.pass_interval = pass_interval
        self.remote_interval = remote_interval
        self.adoption_interval = adoption_interval
        self.first_adoption_after = first_adoption_after
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.observer = Observer()
        self._watched: dict[str, Any] = {}
        self.claim = claim if claim is not None else ledger_claim(engine.db)
        self.refusals = Refusals(log)
        self.failure: str | None = None  # why the coordinator stopped on its own, if it did
        self._reconciled = False

    # --- watching -------------------------------------------------------------------

    def _local(self) -> LocalHost | None:
        host = self.fleet.hosts.get(self.fleet.office)
        return host if isinstance(host, LocalHost) else None

    def _watch(self, folder: str, wanted: Callable[[str], bool]) -> None:
        if folder in self._watched or not os.path.isdir(folder):
            return
        self._watched[folder] = self.observer.schedule(
            _Signal(self.wake, wanted), folder, recursive=False
        )

    def _refresh_watches(self) -> None:
        """The transcript folders of chats with envelopes in flight on this Mac."""
        local = self._local()
        if local is None:
            return
        self._watch(os.path.join(local.config_dir, "sessions"), lambda path: path.endswith(".json"))
        in_flight = (
            Outbox.select(Outbox.cursor)
            .join(Session)
            .where((Session.host == local.name) & Outbox.state.in_(["uncertain", "delivered"]))
        )
        for row in in_flight:
            path = (row.cursor or {}).get("transcript")
            if path:
                self._watch(os.path.dirname(path), lambda changed: changed.endswith(".jsonl"))

    # --- running --------------------------------------------------------------------

    def stop(self, *_: object) -> None:
        self.stopping.set()
        self.wake.set()

    def take(self, by: str) -> None:
        """Take the ledger's claim for this process (`by`: serve, or app) and record it.
        Claimed, naming the holder, when another coordinator holds the ledger."""
        self.claim.take(self.fleet.office, by)
        self._beat()

    def run(self) -> int:
        """Serve in the main thread, holding the ledger's claim, until SIGTERM or Ctrl-C
        (0). Claimed when another coordinator holds the ledger; 1 when serve stopped on
        an error in Coop itself, or lost its claim."""
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
            return True
        except Claimed as lost:
            self.failure = f"the claim on this ledger was lost: {lost}"
            self.log(f"stopped: {self.failure}")
        except Exception:
            self.failure = traceback.format_exc()
            self.log(f"stopped by an error in Coop itself:\n{self.failure.rstrip()}")
        finally:
            self.claim.release()
        return False

    def serve(self) -> None:
        self._watch(str(self.home), is_ledger_file)
        self._guarded("watching transcripts", self._refresh_watches, OSError)
        self.observer.start()
        self.log(f"serving {len(self.fleet.hosts)} Mac(s); office is {self.fleet.office}")
        try:
            self._loop()
        finally:
            self.observer.stop()
            self.observer.join(5)
        self.log("stopped")

    def _guarded(self, what: str, step: Callable[[], object], *also: type[Exception]) -> bool:
        """Run one step of the loop; True when it ran. A refusal (the ledger locked past
        the busy timeout, full, read-only or gone; a rule; a Mac; `also`) costs that step,
        not the coordinator: every command is one transaction, so the next pass starts
        from what was committed. Anything else is a bug in Coop, and propagates."""
        try:
            step()
        except Claimed:
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

    def _pass(self, only: list[str] | None) -> None:
        # Every uncertain envelope is looked for before anything is sent, even when the
        # ledger refused the first attempt at it.
        if not self._reconciled:
            self._reconciled = self._guarded("reconciling", self.coordinator.reconcile)
            if not self._reconciled:
                return
        self._guarded("a pass", partial(self.coordinator.tick, only, self.stopping.is_set))

    def _beat(self) -> None:
        self._guarded("the heartbeat", partial(self.claim.beat, time.time()), OSError)

    def _loop(self) -> None:
        remote_due = 0.0
        adoption_due = time.monotonic() + self.first_adoption_after
        local = [self.fleet.office]
        while not self.stopping.is_set():
            self.wake.clear()  # a change during this pass wakes the next one at once
            started = time.monotonic()
            every_mac = started >= remote_due
            self._pass(None if every_mac else local)
            if every_mac:
                remote_due = started + self.remote_interval
            if started >= adoption_due and not self.stopping.is_set():
                self._guarded("the adoption pass", self.adoption.run)
                adoption_due = started + self.adoption_interval
            self._guarded("watching transcripts", self._refresh_watches, OSError)
            self._beat()
            time.sleep(MIN_PASS_GAP)  # our own ledger writes wake us once; let them settle
            self.wake.wait(self.pass_interval)
