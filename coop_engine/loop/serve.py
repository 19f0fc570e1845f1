"""`coop serve`: the coordinator running until stopped.

watchdog watches the local registry folder, the transcript folders of chats with
envelopes in flight, and the ledger's WAL (a `coop invite` from another process); its
handler only signals. The loop does the I/O: a pass over this Mac's chats when woken,
every Mac's on an interval, the adoption pass every minute. SIGTERM or Ctrl-C finishes
the command at hand and exits; a SIGKILL loses nothing, since every step is committed
before the next one starts and a restart reconciles uncertain envelopes first.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import peewee as pw
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from coop_engine.engine import Engine
from coop_engine.formats import iso
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox, Session
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost
from hosts.mac.platforms import current_platform

MIN_PASS_GAP = 0.05
PID_FILE = "serve.pid"
Log = Callable[[str], None]


class _Signal(FileSystemEventHandler):
    """Only signals: no I/O in watchdog's thread."""

    def __init__(self, wake: threading.Event, wanted: Callable[[str], bool]) -> None:
        self.wake = wake
        self.wanted = wanted

    def on_any_event(self, event: FileSystemEvent) -> None:
        if self.wanted(os.fsdecode(event.src_path)):
            self.wake.set()


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
    ) -> None:
        self.engine = engine
        self.fleet = fleet
        self.home = home
        self.log = log
        self.coordinator = Coordinator(engine, fleet.hosts, log)
        self.adoption = AdoptionPass(engine, fleet.hosts, fleet.office, log)
        self.pass_interval = pass_interval
        self.remote_interval = remote_interval
        self.adoption_interval = adoption_interval
        self.first_adoption_after = first_adoption_after
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.observer = Observer()
        self._watched: dict[str, Any] = {}

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

    def run(self) -> int:
        """Serve in the main thread until SIGTERM or Ctrl-C; announce it in serve.pid."""
        signal.signal(signal.SIGTERM, self.stop)
        signal.signal(signal.SIGINT, self.stop)
        marker = self.home / PID_FILE
        marker.write_text(json.dumps(_this_process()))
        try:
            self.serve()
        finally:
            marker.unlink(missing_ok=True)
        return 0

    def start_thread(self) -> threading.Thread:
        """Serve in a background thread (the TUI's in-process coordinator)."""
        thread = threading.Thread(target=self.serve, name="coordinator", daemon=True)
        thread.start()
        return thread

    def serve(self) -> None:
        self._watch(str(self.home), lambda path: os.path.basename(path).startswith("coop.db"))
        self._refresh_watches()
        self.observer.start()
        self.log(f"serving {len(self.fleet.hosts)} Mac(s); office is {self.fleet.office}")
        try:
            self._guarded("reconciling", self.coordinator.reconcile)
            self._loop()
        finally:
            self.observer.stop()
            self.observer.join(5)
        self.log("stopped")

    def _guarded(self, what: str, step: Callable[[], object]) -> None:
        """Run one step of the loop. A ledger that refuses a command (locked past the busy
        timeout, disk full, an I/O error) costs that step, not the coordinator: every
        command is one transaction, so the next pass starts from what was committed."""
        try:
            step()
        except pw.OperationalError as error:
            self.log(f"{what} failed on the ledger: {error}; the next pass tries again")

    def _loop(self) -> None:
        remote_due = 0.0
        adoption_due = time.monotonic() + self.first_adoption_after
        local = [self.fleet.office]
        while not self.stopping.is_set():
            self.wake.clear()  # a change during this pass wakes the next one at once
            started = time.monotonic()
            every_mac = started >= remote_due
            only = None if every_mac else local
            self._guarded("a pass", partial(self.coordinator.tick, only, self.stopping.is_set))
            if every_mac:
                remote_due = started + self.remote_interval
            if started >= adoption_due and not self.stopping.is_set():
                self._guarded("the adoption pass", self.adoption.run)
                adoption_due = started + self.adoption_interval
            self._refresh_watches()
            time.sleep(MIN_PASS_GAP)  # our own ledger writes wake us once; let them settle
            self.wake.wait(self.pass_interval)


def _this_process() -> dict[str, Any]:
    pid = os.getpid()
    return {"pid": pid, "birth": current_platform().births([pid]).get(pid)}


def running_server(home: Path) -> int | None:
    """The pid of a live `coop serve` on this ledger, or None."""
    try:
        marker = json.loads((home / PID_FILE).read_text())
        pid = int(marker["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    birth = current_platform().births([pid]).get(pid)
    # A pid reused by another process since serve died is not serve.
    return pid if birth is not None and birth == marker.get("birth") else None
