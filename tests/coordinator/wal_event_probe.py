"""How often a commit is not yet visible when watchdog tells of its write to the WAL,
and stays unseen with no later event (the cause behind loop/news.py).

    .venv/bin/python tests/coordinator/wal_event_probe.py 30

Each commit is made in a thread of its own; this thread reads the row on each event and
waits a second for another. Prints `PROBE commits=N unseen=U stale_reads=S`."""

from __future__ import annotations

import os
import sqlite3
import sys
import tempfile
import threading

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

QUIET = 1.0  # seconds with no event after which a commit counts as unseen


class Told(FileSystemEventHandler):
    def __init__(self, wake: threading.Event) -> None:
        self.wake = wake

    def on_any_event(self, event: FileSystemEvent) -> None:
        if os.path.basename(os.fsdecode(event.src_path)).startswith("coop.db"):
            self.wake.set()


def probe(commits: int) -> tuple[int, int]:
    folder = tempfile.mkdtemp(prefix="wal-probe-")
    path = os.path.join(folder, "coop.db")
    writer = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    writer.execute("PRAGMA journal_mode=wal")
    writer.execute("PRAGMA synchronous=full")
    writer.execute("CREATE TABLE t (i INTEGER)")
    writer.execute("INSERT INTO t VALUES (0)")
    reader = sqlite3.connect(path, isolation_level=None)
    wake = threading.Event()
    observer = Observer()
    observer.schedule(Told(wake), folder)
    observer.start()
    unseen = stale = 0
    try:
        for value in range(1, commits + 1):
            wake.clear()
            commit = threading.Thread(target=writer.execute, args=("UPDATE t SET i = ?", (value,)))
            commit.start()
            seen = None
            while wake.wait(QUIET):
                wake.clear()
                seen = reader.execute("SELECT i FROM t").fetchone()[0]
                if seen == value:
                    break
                stale += 1
            unseen += seen != value
            commit.join()
    finally:
        observer.stop()
        observer.join()
    return unseen, stale


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    unseen, stale = probe(count)
    print(f"PROBE commits={count} unseen={unseen} stale_reads={stale}")
