"""Standby coordinators as real processes on one PostgreSQL ledger, simulated chats that
log every frame their inbox reads, and the chaos done to the lease's holder.

Each `coop serve --standby` has a home of its own (its own machine, as far as Coop can
tell) and the same database; its connections carry an application name of its own
(PGAPPNAME), so a network cut of one serve is its backends terminated, again and again,
for as long as the cut lasts. Counting is the receivers' own: each simulated chat's log
of the frames its inbox read, against the ledger's envelopes.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from waiting import wait_until

from coop_engine import lease
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import CoopError
from coop_engine.models import Outbox
from hosts.sim.launch import ROOT, SimChat, SimFleet

# The receivers' clocks run fast: the subject is the lease, not their rate limit.
FAST_RECEIVER = {"COOP_SIM_TIME_SCALE": "0.01"}
KINDS = ("kill", "stop", "cut")
MAX_ATTEMPTS = 2  # Dad sends a proven loss again once; a second loss stays a loss


@dataclass
class Takeover:
    kind: str
    seconds: float  # from the chaos to the lease's epoch rising, by this machine's clock
    old_pid: int
    new_pid: int
    stepped_down: bool  # a stopped or cut holder said so once it could


@dataclass
class Tally:
    takeovers: list[Takeover] = field(default_factory=list)
    envelopes: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    states: dict[str, str] = field(default_factory=dict)  # each envelope's, and why
    sent_again: list[str] = field(default_factory=list)  # proven losses Dad sent again


class Standbys:
    def __init__(self, workdir: Path, url: str, serves: int, lease_seconds: float) -> None:
        self.workdir = workdir
        self.url = url
        self.lease_seconds = lease_seconds
        self.fleet = SimFleet(workdir / "claude")
        self.fleet.config_dir.mkdir(parents=True)
        self.chats: list[SimChat] = []
        self.processes: dict[int, subprocess.Popen[bytes]] = {}
        self.logs: dict[int, Path] = {}
        self.names: dict[int, str] = {}
        self.spawned = 0
        self.serves = serves
        self.engine = Engine(open_ledger(workdir / "dad", url), actor="dad")
        self.tally = Tally()

    # --- the office ---------------------------------------------------------------------

    def start(self, chats: int = 3) -> Standbys:
        for _ in range(chats):
            self.chats.append(self.fleet.start("--think", "0.02", env=FAST_RECEIVER))
        for _ in range(self.serves):
            self.spawn()
        wait_until(lambda: self.holder() is not None, "a first holder", 30)
        return self

    def spawn(self) -> int:
        self.spawned += 1
        name = f"coop-serve-{self.spawned}"
        home = self.workdir / name
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("COOP_", "PIPPA_"))},
            "COOP_HOME": str(home),
            "COOP_DATABASE_URL": self.url,
            "CLAUDE_CONFIG_DIR": str(self.fleet.config_dir),
            "PGAPPNAME": name,
        }
        log = self.workdir / f"{name}.log"
        argv = [sys.executable, "-m", "coop_engine.cli", "serve", "--standby"]
        argv += ["--lease", str(self.lease_seconds), "--interval", "0.2"]
        with log.open("ab") as out:
            process = subprocess.Popen(
                argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=ROOT
            )
        self.processes[process.pid] = process
        self.logs[process.pid] = log
        self.names[process.pid] = name
        return process.pid

    def output(self, pid: int) -> str:
        return self.logs[pid].read_text()

    def alive(self, pid: int) -> bool:
        return self.processes[pid].poll() is None

    def assert_alive(self) -> None:
        """Every serve not killed on purpose still runs: a standby stands by across
        anything short of being killed."""
        for pid, process in self.processes.items():
            if process.poll() is not None:
                tail = "\n".join(self.output(pid).splitlines()[-5:])
                raise AssertionError(
                    f"{self.names[pid]} (pid {pid}) exited {process.returncode}:\n{tail}"
                )

    def holder(self) -> lease.Seen | None:
        """The lease, when one of this office's live serves holds it unlapsed."""
        seen = lease.read(self.engine.db)
        if seen is None or seen.lapsed or seen.pid not in self.processes:
            return None
        return seen

    def invite(self, rounds: int = 1) -> None:
        """One new todo per chat and round, each invited."""
        for _ in range(rounds):
            for chat in self.chats:
                todo = self.engine.add_todo(f"standby todo for {chat.pid}")["id"]
                self.engine.invite(todo, chat.ref, "office")

    # --- the chaos ----------------------------------------------------------------------

    def chaos(self, kind: str) -> Takeover:
        """Do `kind` to the holder (SIGKILL; SIGSTOP past its lease, then SIGCONT; its
        backends terminated for longer than its lease) and wait for a standby to take
        the lease; a killed serve is replaced by a new standby."""
        self.assert_alive()
        wait_until(lambda: self.holder() is not None, "a holder before the chaos", 30)
        seen = self.holder()
        assert seen is not None
        old, process = seen.pid, self.processes[seen.pid]
        said = len(self.output(old))
        started = time.monotonic()
        if kind == "kill":
            process.kill()
            process.wait(30)
        elif kind == "stop":
            process.send_signal(signal.SIGSTOP)
        else:
            self._cut(self.names[old], until_epoch=seen.epoch)
        wait_until(
            lambda: (now := lease.read(self.engine.db)) is not None and now.epoch > seen.epoch,
            f"a takeover after {kind}",
            self.lease_seconds + 60,
            interval=0.05,
        )
        seconds = time.monotonic() - started
        after = lease.read(self.engine.db)
        assert after is not None
        stepped_down = False
        if kind == "kill":
            del self.processes[old]
            self.spawn()
        else:
            if kind == "stop":
                time.sleep(0.5)  # the stopped holder's lease has lapsed: it wakes fenced out
                process.send_signal(signal.SIGCONT)
            wait_until(
                lambda: "stepped down" in self.output(old)[said:],
                f"the {kind} holder saying it stepped down",
                60,
            )
            # With --standby it stands by again, whatever it lost: its database
            # connection, its lease, the seconds it was stopped for.
            wait_until(
                lambda: "standing by again" in self.output(old)[said:] or not self.alive(old),
                f"the {kind} holder standing by again",
                60,
            )
            self.assert_alive()
            stepped_down = True
        took = Takeover(kind, seconds, old, after.pid, stepped_down)
        self.tally.takeovers.append(took)
        return took

    def _cut(self, name: str, until_epoch: int) -> None:
        """The holder's network to the database gone: every backend of its application
        name terminated, again and again, until its lease moved on."""
        admin = self._admin()
        try:
            deadline = time.monotonic() + self.lease_seconds + 60
            while time.monotonic() < deadline:
                with admin.cursor() as cursor:
                    cursor.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                        " WHERE application_name = %s",
                        (name,),
                    )
                now = lease.read(self.engine.db)
                if now is not None and now.epoch > until_epoch:
                    return
                time.sleep(0.05)
        finally:
            admin.close()

    def _admin(self) -> Any:
        import psycopg2

        admin = psycopg2.connect(self.url)
        admin.autocommit = True
        return admin

    # --- the count ----------------------------------------------------------------------

    def settle(self, timeout: float = 120) -> None:
        """Wait until no envelope is pending or uncertain; then, as Dad, send again each
        one the ledger proved lost (expired), once, and wait again. An intent recorded
        by a holder that died (or lost the database) before its frame left is neither
        sent twice nor silently dropped: the successor looks for it in the chat, finds
        it absent, and expires it with that proof; Send again is Dad's decision (the
        main reliability run does the same)."""
        for _ in range(MAX_ATTEMPTS):
            wait_until(
                lambda: (
                    not Outbox.select().where(Outbox.state.in_(["pending", "uncertain"])).exists()
                ),
                "every envelope delivered",
                timeout,
                interval=0.2,
            )
            if not self._send_again():
                break
        self.assert_alive()

    def _send_again(self) -> int:
        sent = 0
        for row in Outbox.select().where(
            (Outbox.state == "expired") & Outbox.resent_as.is_null() & Outbox.resent_from.is_null()
        ):
            try:
                self.engine.resend(row.id, by="dad")
            except CoopError:
                continue  # no longer resendable (its dispatch moved on)
            self.tally.sent_again.append(row.id)
            sent += 1
        return sent

    def count(self) -> Tally:
        """Every delivery of the ledger (an envelope, and the one Dad sent again in its
        place) against the frames the chats read: lost (read by none), duplicated (read
        more than once, or an envelope's frame read twice)."""
        read = Counter(frame["msg_id"] for chat in self.chats for frame in chat.frames())
        rows = list(Outbox.select())
        envelopes = [row.id for row in rows]
        self.tally.states = {
            row.id: f"{row.state} expiry={row.expiry} transport={row.transport}" for row in rows
        }
        self.tally.envelopes = len(envelopes)
        # An envelope and the one Dad sent again in its place are one delivery.
        again = {row.id: row.resent_as for row in rows if row.resent_as}
        firsts = [row.id for row in rows if row.resent_from is None]

        def chain(envelope: str) -> list[str]:
            ids = [envelope]
            while ids[-1] in again:
                ids.append(again[ids[-1]])
            return ids

        reads = {first: sum(read[envelope] for envelope in chain(first)) for first in firsts}
        self.tally.lost = [first for first, n in reads.items() if n == 0]
        doubled = {first for first, n in reads.items() if n > 1}
        self.tally.duplicated = sorted(
            doubled | {envelope for envelope, n in read.items() if n > 1}
        )
        return self.tally

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGCONT)
                process.terminate()
        for process in self.processes.values():
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)
        self.fleet.stop_all()
        self.engine.db.close()
