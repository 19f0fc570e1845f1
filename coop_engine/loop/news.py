"""Whether the ledger has news for the Macs' workers: a commit they can see.

A file event on the SQLite ledger comes with the write of the commit to its WAL, and
that write lands before the commit is visible to another connection (SQLite updates the
WAL's index after it). A reader woken by the event can read the state before it, and no
later event comes: an envelope left pending, unseen, by a worker that sleeps until its
Mac changes. Measured (tests/coordinator/wal_event_probe.py) in a thread woken by
watchdog on the WAL: of 30 commits, 27 to 29 (four runs) were still unseen once their
last event had been read and a second had passed with no other.

So news is a change a reader can see: SQLite's `data_version`, read on a connection of
this module's own (which sees every commit, the coordinator's included), differs from
the last one read. An event only says when to look: at once, and again after pauses that
double from LOOK_FIRST until SETTLE_SECONDS have passed, for a commit not visible yet
(in the pause between the loop's rounds too: loop/serve.py).
Every round of the loop looks too, so a commit that took longer still reaches the
workers at the loop's next round. A ledger whose version cannot be read (on a database
server, or a file that will not open) has news at every round."""

from __future__ import annotations

import sqlite3

import peewee as pw

from coop_engine.db import ledger_file

LOOK_FIRST = 0.005
SETTLE_SECONDS = 3.0


class LedgerNews:
    def __init__(self, db: pw.Database) -> None:
        self._reader: sqlite3.Connection | None = None
        path = ledger_file(db)
        if path is not None:
            try:
                self._reader = sqlite3.connect(
                    f"{path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False
                )
            except sqlite3.Error:
                pass  # no version to read: news at every round
        self._seen = self._version()
        self._looks: list[float] = []  # when to look again, for events not yet seen
        self.takes = 0  # rounds that looked, and of them those told of an event
        self.events = 0

    def _version(self) -> int | None:
        if self._reader is None:
            return None
        try:
            return int(self._reader.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            return None  # the ledger's own steps will tell what is wrong with it

    def take(self, event: bool, now: float) -> bool:
        """Whether a commit became visible since the last take; `event`: a file event
        came since then (look again after it, as the module says)."""
        self.takes += 1
        if event:
            self.events += 1
            self._looks = self._schedule(now)
        else:
            self._looks = [at for at in self._looks if at > now]
        version = self._version()
        if version is None:
            return True
        changed = version != self._seen
        self._seen = version
        return changed

    def _schedule(self, now: float) -> list[float]:
        looks, pause, waited = [], LOOK_FIRST, 0.0
        while waited < SETTLE_SECONDS:
            waited += pause
            looks.append(now + waited)
            pause *= 2
        return looks

    def next_look(self) -> float | None:
        """When to look again for a commit an event announced (monotonic), if any."""
        return self._looks[0] if self._looks else None

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
            self._reader = None
