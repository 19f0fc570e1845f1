"""SIGKILL `coop serve` at random moments of real delivery cycles, many times over.

A simulated fleet of real chats (`python -m hosts.sim chat`, each logging every frame
its inbox reads) stays up for the whole run. Each cycle starts `coop serve` as a real
process, feeds it work as Dad would (new todos and invitations, outcomes for work that
arrived, Send again for proven losses, a prompt that keeps one chat busy), and SIGKILLs
it at a random moment: during start-up and reconciliation, between the intent and the
write, between the write and its record, in the middle of an acceptance. After every
kill and at the end the ledger and the chats' frame logs are checked:

- lost: an envelope once committed is gone or its fact went back (delivered or
  expired becoming anything else), or at the end one was never sent or a chat holds
  a peer entry for one the ledger does not call delivered;
- duplicated: one envelope's frame read twice by a chat, or two envelopes of one
  dispatch and kind written to chats without a recorded Send again linking them;
- unsent_looking: a chat read an envelope's frame while the ledger calls it pending.

At the end one undisturbed run settles what is in flight and `coop tick --at` a day
later lets the verdicts decide every send that never reached a chat; no uncertain
envelope may remain, and every expiry must be true (no peer entry for it anywhere).
`PRAGMA integrity_check` must answer ok after every kill.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import CoopError
from hosts.sim.launch import ROOT, SimChat, SimFleet

# (arguments, open invitations kept in flight) per simulated chat.
CHATS: tuple[tuple[tuple[str, ...], int], ...] = (
    (("--think", "0.02"), 2),
    (("--think", "0.05"), 2),
    (("--think", "0.02", "--mode", "acceptEdits"), 2),
    # Busy with tool calls whenever the harness types a prompt: frames are absorbed.
    (("--think", "0.02", "--busy-seconds", "0.4", "--tool-interval", "0.05"), 2),
    # Refuses every frame: expired at once, sent again once by Dad, refused again.
    (("--think", "0.02", "--inbound", "refuse"), 1),
)
BUSY_CHAT = 3
# A receiver admits 30 frames from one sender, then one per 2 s (Claude Code 2.1.328's
# loop protection). The harness sends far faster than that, and its subject is crashes,
# not the rate limit: the chats' clocks run a hundred times faster.
FAST_RECEIVER = {"COOP_SIM_TIME_SCALE": "0.01"}
MAX_ATTEMPTS = 2  # Dad sends a proven loss again once; the second loss stays a loss
KILL_WINDOW = 0.7  # seconds after the start; `coop serve` is up after about 0.2
SETTLE_SECONDS = 60.0
# With `min_delivered`, the kills go on past `kills` until that many envelopes were
# delivered between them: counted in deliveries, not seconds, so a loaded machine runs
# more cycles rather than fewer deliveries. This only bounds a hang.
HANG_SECONDS = 900.0
VERDICT_LATER = 24 * 3600.0


@dataclass
class Report:
    kills: int = 0
    lost: set[str] = field(default_factory=set)
    duplicated: set[str] = field(default_factory=set)
    unsent_looking: set[str] = field(default_factory=set)
    integrity: list[str] = field(default_factory=list)
    unresolved: set[str] = field(default_factory=set)
    false_expiry: set[str] = field(default_factory=set)
    phantom_transport: set[str] = field(default_factory=set)
    mid_send: set[str] = field(default_factory=set)  # intent recorded, answer not yet
    crashes: int = 0  # tracebacks `coop serve` printed: a crash not caused by the kill
    written_before_record: int = 0
    killed_before_write: int = 0
    resends: int = 0
    states: Counter[str] = field(default_factory=Counter)
    expiries: Counter[str] = field(default_factory=Counter)
    delivered_between_kills: int = 0  # delivered when the last kill had been checked
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"RELIABILITY kills={self.kills} lost={len(self.lost)} "
            f"duplicated={len(self.duplicated)} unsent_looking={len(self.unsent_looking)}"
        )

    def detail(self) -> str:
        states = " ".join(f"{k}={v}" for k, v in sorted(self.states.items()))
        reasons = " ".join(f"{k}={v}" for k, v in sorted(self.expiries.items()))
        return (
            f"RELIABILITY-DETAIL seconds={self.seconds:.0f} "
            f"delivered_between_kills={self.delivered_between_kills} envelopes: {states}; "
            f"expired by: {reasons or 'none'}; resends={self.resends} "
            f"kills_between_intent_and_record={len(self.mid_send)} "
            f"(written={self.written_before_record} not_written={self.killed_before_write}) "
            f"crashes={self.crashes} "
            f"unresolved={len(self.unresolved)} false_expiry={len(self.false_expiry)} "
            f"phantom_transport={len(self.phantom_transport)} "
            f"integrity_failures={len(self.integrity)}"
        )

    @property
    def ok(self) -> bool:
        problems = (
            self.lost,
            self.duplicated,
            self.unsent_looking,
            self.integrity,
            self.unresolved,
            self.false_expiry,
            self.phantom_transport,
        )
        return not any(problems) and not self.crashes


@dataclass
class Row:
    id: str
    state: str
    kind: str
    dispatch: int | None
    resent_from: str | None
    transport_at: float | None
    expiry: dict[str, Any] | None


class FrameLogs:
    """Every frame each chat's inbox read, read on from where the last look stopped."""

    def __init__(self, chats: list[SimChat]) -> None:
        self.chats = chats
        self.offsets = [0] * len(chats)
        self.frames: list[tuple[int, str]] = []  # (chat index, msg_id)

    def read(self) -> list[tuple[int, str]]:
        for index, chat in enumerate(self.chats):
            with open(chat.frame_log, "rb") as log:
                log.seek(self.offsets[index])
                data = log.read()
            end = data.rfind(b"\n") + 1
            self.offsets[index] += end
            for line in data[:end].splitlines():
                if line.strip():
                    self.frames.append((index, str(json.loads(line)["msg_id"])))
        return self.frames


class Harness:
    def __init__(
        self,
        workdir: Path,
        kills: int,
        seed: int | None = None,
        say: Callable[[str], None] = print,
        min_delivered: int = 0,
        hang_seconds: float = HANG_SECONDS,
    ) -> None:
        self.workdir = workdir
        self.kills = kills
        self.min_delivered = min_delivered
        self.hang_seconds = hang_seconds
        self.rng = random.Random(seed)
        self.say = say
        self.home = workdir / "home"
        self.fleet = SimFleet(workdir / "claude")
        self.fleet.config_dir.mkdir(parents=True)
        self.serve_log = workdir / "serve.log"
        self.report = Report()
        self.seen: dict[str, str] = {}  # every envelope id ever committed -> last state
        self.chats: list[SimChat] = []
        self.engine: Engine | None = None
        self.logs: FrameLogs | None = None

    # --- the run --------------------------------------------------------------------

    def run(self) -> Report:
        started = time.monotonic()
        try:
            self._start_fleet()
            cycle = 0
            while cycle < self.kills or self._short_of_work(started):
                self._cycle(cycle)
                self.report.kills += 1
                self._check()
                cycle += 1
                if cycle % 100 == 0:
                    self.say(f"{self.report.line()} ({time.monotonic() - started:.0f}s)")
            self._settle()
            self._final_verdicts()
            self._check(final=True)
        finally:
            self.fleet.stop_all()
            if self.engine is not None:
                self.engine.db.close()
        self.report.seconds = time.monotonic() - started
        return self.report

    def env(self) -> dict[str, str]:
        return {
            **{k: v for k, v in os.environ.items() if not k.startswith(("COOP_", "PIPPA_"))},
            "COOP_HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.fleet.config_dir),
        }

    def _start_fleet(self) -> None:
        for arguments, _ in CHATS:
            self.chats.append(self.fleet.start(*arguments, env=FAST_RECEIVER))
        self.logs = FrameLogs(self.chats)
        os.environ.pop("COOP_DATABASE_URL", None)
        self.engine = Engine(open_ledger(self.home), actor="dad")

    def _serve(self) -> subprocess.Popen[bytes]:
        with self.serve_log.open("ab") as log:
            return subprocess.Popen(
                [sys.executable, "-m", "coop_engine.cli", "serve", "--interval", "0.2"],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=self.env(),
                cwd=ROOT,
            )

    def _cycle(self, cycle: int) -> None:
        server = self._serve()
        kill_at = time.monotonic() + self.rng.uniform(0.0, KILL_WINDOW)
        self._feed(cycle)
        left = kill_at - time.monotonic()
        if left > 0:
            time.sleep(left)
        server.send_signal(signal.SIGKILL)
        server.wait()

    def _short_of_work(self, started: float) -> bool:
        """Fewer than `min_delivered` delivered so far, and no hang yet."""
        short = self.report.delivered_between_kills < self.min_delivered
        if short and time.monotonic() - started >= self.hang_seconds:
            self.say(
                f"only {self.report.delivered_between_kills} delivered in {self.hang_seconds:.0f}s"
            )
            return False
        return short

    # --- Dad's side: work flowing in ------------------------------------------------

    def _feed(self, cycle: int) -> None:
        """New invitations up to each chat's quota, outcomes for work that arrived,
        Send again (once) for proven losses, and now and then a prompt that keeps the
        busy chat in a turn with tool calls."""
        assert self.engine is not None
        self._report_outcomes()
        self._send_again(self._rows())
        self._invite(self._rows())
        if cycle % 3 == 0:
            self.chats[BUSY_CHAT].process.send_signal(signal.SIGUSR2)

    def _invite(self, rows: dict[str, Row]) -> None:
        """Up to each chat's quota of dispatches still in play: invited or accepted, and
        not given up on (every invitation expired, Send again used up)."""
        assert self.engine is not None
        given_up = self._given_up(rows)
        open_per_chat = Counter(
            ref
            for dispatch, ref in self._query(
                "SELECT d.id, s.vendor || ':' || s.native_id FROM engine_dispatches d "
                "JOIN engine_sessions s ON d.session_id = s.id "
                "WHERE d.state IN ('invited', 'accepted')"
            )
            if dispatch not in given_up
        )
        for index, (_, quota) in enumerate(CHATS):
            ref = self.chats[index].ref
            for _ in range(quota - open_per_chat[ref]):
                todo = self.engine.add_todo(f"Reliability todo for chat {index}")["id"]
                result = self.engine.invite(todo, ref, "office")
                self.seen.setdefault(result["outbox"], "pending")

    def _given_up(self, rows: dict[str, Row]) -> set[int]:
        resent = {row.resent_from for row in rows.values() if row.resent_from}
        live: set[int] = set()
        lost: set[int] = set()
        for row in rows.values():
            if row.dispatch is None or row.kind != "invitation":
                continue
            finished = row.state == "expired" and (
                row.id in resent or self._attempts(row, rows) >= MAX_ATTEMPTS
            )
            (lost if finished else live).add(row.dispatch)
        return lost - live

    def _report_outcomes(self) -> None:
        assert self.engine is not None
        done = self._query(
            "SELECT DISTINCT d.todo_id FROM engine_outbox o "
            "JOIN engine_dispatches d ON o.dispatch_id = d.id "
            "WHERE o.kind = 'work' AND o.state = 'delivered' AND d.state = 'accepted'"
        )
        for (todo,) in done:
            try:
                self.engine.report_outcome(todo, "done", by="worker")
            except CoopError:
                pass  # reported meanwhile

    def _send_again(self, rows: dict[str, Row]) -> None:
        assert self.engine is not None
        resent = {row.resent_from for row in rows.values() if row.resent_from}
        for row in rows.values():
            if (
                row.state != "expired"
                or row.id in resent
                or self._attempts(row, rows) >= MAX_ATTEMPTS
            ):
                continue
            try:
                result = self.engine.resend(row.id, by="dad")
            except CoopError:
                continue  # no longer resendable (declined, accepted meanwhile)
            self.report.resends += 1
            self.seen.setdefault(result["outbox"], "pending")

    @staticmethod
    def _attempts(row: Row, rows: dict[str, Row]) -> int:
        attempts, current = 1, row
        while current.resent_from and current.resent_from in rows:
            attempts += 1
            current = rows[current.resent_from]
        return attempts

    # --- reading the ledger ---------------------------------------------------------

    def _query(self, sql: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.home / "coop.db", timeout=30)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()

    def _rows(self) -> dict[str, Row]:
        found = self._query(
            "SELECT id, state, kind, dispatch_id, resent_from, transport_at, expiry "
            "FROM engine_outbox"
        )
        return {
            r[0]: Row(r[0], r[1], r[2], r[3], r[4], r[5], json.loads(r[6]) if r[6] else None)
            for r in found
        }

    # --- the checks -----------------------------------------------------------------

    def _check(self, final: bool = False) -> None:
        assert self.logs is not None
        (integrity,) = self._query("PRAGMA integrity_check")[0]
        if integrity != "ok":
            self.report.integrity.append(f"after kill {self.report.kills}: {integrity}")
        rows = self._rows()
        self._check_nothing_lost(rows)
        if not final:
            self.report.delivered_between_kills = sum(r.state == "delivered" for r in rows.values())
        frames = self.logs.read()
        self._check_frames(rows, frames)
        intents = self._query("SELECT outbox_id FROM engine_host_queue WHERE state = 'intent'")
        self.report.mid_send.update(outbox for (outbox,) in intents)
        if final:
            self._check_final(rows, frames)

    def _check_nothing_lost(self, rows: dict[str, Row]) -> None:
        for envelope, state in self.seen.items():
            row = rows.get(envelope)
            if row is None:
                self.report.lost.add(envelope)
            elif state in ("delivered", "expired") and row.state != state:
                self.report.lost.add(envelope)
        for row in rows.values():
            self.seen[row.id] = row.state

    def _check_frames(self, rows: dict[str, Row], frames: list[tuple[int, str]]) -> None:
        counts = Counter(envelope for _, envelope in frames)
        self.report.duplicated.update(envelope for envelope, n in counts.items() if n > 1)
        written: dict[tuple[int | None, str], set[str]] = {}
        for _, envelope in frames:
            row = rows.get(envelope)
            if row is None:
                self.report.lost.add(envelope)  # a chat got a frame the ledger never held
                continue
            if row.state == "pending":
                self.report.unsent_looking.add(envelope)
            written.setdefault((row.dispatch, row.kind), set()).add(envelope)
        for envelopes in written.values():
            if len(envelopes) > 1 and not _one_resend_chain(envelopes, rows):
                self.report.duplicated.update(envelopes)

    def _check_final(self, rows: dict[str, Row], frames: list[tuple[int, str]]) -> None:
        received = {envelope for _, envelope in frames}
        entries = self._peer_entries()
        for row in rows.values():
            self.report.states[row.state] += 1
            if row.state == "pending":
                self.report.lost.add(row.id)  # never sent, though nothing stood in the way
            elif row.state == "uncertain":
                self.report.unresolved.add(row.id)
            elif row.state == "expired":
                self.report.expiries[(row.expiry or {}).get("reason", "none")] += 1
                if row.id in entries:
                    self.report.false_expiry.add(row.id)
            if row.transport_at is not None and row.id not in received:
                self.report.phantom_transport.add(row.id)
        for envelope in self.report.mid_send:
            if envelope in received:
                self.report.written_before_record += 1
            else:
                self.report.killed_before_write += 1
        self.report.crashes = self.serve_log.read_text(errors="replace").count("Traceback")
        for envelope in entries:
            if envelope in rows and rows[envelope].state != "delivered":
                self.report.lost.add(envelope)  # a peer entry the ledger does not count

    def _peer_entries(self) -> set[str]:
        """Envelope ids of every peer entry in the chats' transcripts."""
        found: set[str] = set()
        for chat in self.chats:
            for entry in chat.transcript_entries():
                origin = entry.get("origin")
                if isinstance(origin, dict) and origin.get("kind") == "peer":
                    found.add(str(origin.get("msg_id")))
        return found

    # --- the end --------------------------------------------------------------------

    def _settle(self) -> None:
        """One undisturbed `coop serve` until nothing is pending and every frame a chat
        read is settled; then a clean stop."""
        assert self.logs is not None
        server = self._serve()
        deadline = time.monotonic() + SETTLE_SECONDS
        try:
            while time.monotonic() < deadline:
                self._report_outcomes()
                rows = self._rows()
                received = {envelope for _, envelope in self.logs.read()}
                waiting = [
                    row
                    for row in rows.values()
                    if row.state == "pending" or (row.state == "uncertain" and row.id in received)
                ]
                if not waiting and self._chats_idle():
                    return
                time.sleep(0.3)
            self.say(f"settling did not finish in {SETTLE_SECONDS:.0f}s")
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(30)

    def _chats_idle(self) -> bool:
        return all(chat.entry().get("status") == "idle" for chat in self.chats)

    def _final_verdicts(self) -> None:
        """A pass a day later, through the CLI: every send that never reached a chat is
        decided by one of the three reasons."""
        later = time.time() + VERDICT_LATER
        done = subprocess.run(
            [sys.executable, "-m", "coop_engine.cli", "tick", "--at", str(later)],
            capture_output=True,
            text=True,
            env=self.env(),
            cwd=ROOT,
            timeout=120,
        )
        if done.returncode != 0:
            raise AssertionError(f"coop tick failed: {done.stderr}")


def _one_resend_chain(envelopes: set[str], rows: dict[str, Row]) -> bool:
    """Whether every envelope but the first came from another by a recorded Send again."""
    firsts = [e for e in envelopes if rows[e].resent_from not in envelopes]
    return len(firsts) == 1
