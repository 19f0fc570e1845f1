"""The machinery of the fault-injection runs: a fleet of simulated chats shared by the
runs, a fresh ledger per run, markers of where a pass is, and a recorder of the ledger
at every command boundary (the scenarios and recovery are in scenarios.py).

"Old or new state" is checked at the granularity of the ledger's writes: every write is
an engine command (one transaction) or the transcript bookmark (one UPDATE). The
recorder dumps the ledger, through a connection of its own that sees only what is
committed, before and after each of them during the faulted pass. The dumps must chain
(nothing changes between two writes), the failed write must leave the ledger exactly as
it was before it, and the ledger after the pass must be the state after the last whole
write. Which one it is, "old" (the failure recorded nothing) or "new" (a command recorded
it), is reported per point.
"""

from __future__ import annotations

import contextvars
import functools
import json
import sqlite3
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from clock import Clock

from coop_engine import frame
from coop_engine.db import open_ledger
from coop_engine.delivery import DeliveryCommands
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.loop.doors.codex import CodexDoor
from coop_engine.loop.surveyed import Surveyed
from coop_engine.models import TABLES, Outbox, Session
from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.pipe import PipeHost
from hosts.sim.launch import (
    CODEX_EXECUTABLE,
    SimChat,
    SimFleet,
    SimHolder,
    codex_holder,
    codex_thread,
)

STAGE: contextvars.ContextVar[str] = contextvars.ContextVar("stage", default="")
OP: contextvars.ContextVar[str] = contextvars.ContextVar("op", default="")
RECOVERY_PASSES = 80
VERDICT_STEP = 61.0  # past the 60 s grace of receiver-idle-without-entry
# The chats are shared by every run: a receiver's per-sender rate limit (30 frames, then
# one per 2 s) would drop Coop's frames, so their clock runs a hundred times faster.
FAST_RECEIVER = {"COOP_SIM_TIME_SCALE": "0.01"}
# Each chat has a first turn already, so its transcript exists before Coop writes.
CHAT_ARGS = {
    "accept": ("--history", "--think", "0.02"),
    "refuse": ("--history", "--think", "0.02", "--inbound", "refuse"),
    "held": ("--history", "--think", "0.02", "--mode", "bypassPermissions"),
    "decline": ("--history", "--think", "0.02", "--answer", "decline"),
    "lose": ("--history", "--think", "0.02", "--lose-frames"),
}


# --- the ledger, dumped ------------------------------------------------------------------


def dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every committed row of every ledger table, through a connection of our own."""
    conn = sqlite3.connect(path, timeout=30)
    try:
        return {
            model._meta.table_name: conn.execute(
                f'SELECT * FROM "{model._meta.table_name}" ORDER BY 1'
            ).fetchall()
            for model in TABLES
        }
    finally:
        conn.close()


@dataclass
class Write:
    name: str
    stage: str
    before: dict[str, Any]
    after: dict[str, Any]
    failed: str | None


class Recorder:
    """The ledger before and after each write of the faulted pass."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.on = False
        self.writes: list[Write] = []

    def around(self, name: str, call: Callable[[], Any]) -> Any:
        if not self.on:
            return call()
        before, stage = dump(self.path), STAGE.get()
        try:
            result = call()
        except BaseException as error:
            self.writes.append(Write(name, stage, before, dump(self.path), repr(error)))
            raise
        self.writes.append(Write(name, stage, before, dump(self.path), None))
        return result

    def check_chain(self, start: dict[str, Any], end: dict[str, Any]) -> None:
        state = start
        for write in self.writes:
            assert write.before == state, (
                f"the ledger changed outside a command before {write.name}"
            )
            if write.failed:
                assert write.after == write.before, f"failed {write.name} left a partial write"
            state = write.after
        assert end == state, "the ledger changed after the last command of the pass"

    def after_fault(self, fault: Fault) -> list[str]:
        """The whole writes the failing step made after the failure: what recorded it."""
        return [
            write.name
            for write in self.writes[fault.fired_at :]
            if write.stage == fault.fired_stage and not write.failed
        ]


# --- faults ----------------------------------------------------------------------------


@dataclass
class Fault:
    """One failure, armed for one point: it fires once, where `when` says."""

    point: str
    stage: str | None
    flavour: str
    recorder: Recorder
    armed: bool = False
    fired: bool = False
    fired_at: int = 0
    fired_stage: str = ""

    def now(self, op: str | None = None) -> bool:
        """Whether the operation at hand is the one to fail (and then never again)."""
        if not self.armed or self.fired:
            return False
        if self.stage is not None and STAGE.get() != self.stage:
            return False
        if op is not None and OP.get() != op:
            return False
        self.fired = True
        self.fired_at, self.fired_stage = len(self.recorder.writes), STAGE.get()
        return True


# --- the world: chats, a ledger, hosts ---------------------------------------------------


SEEN_OPS: Counter[str] = Counter()
SEEN_COMMANDS: Counter[str] = Counter()


class Fleet:
    """The simulated chats every run shares (one per behaviour), and one Codex thread
    held open by a holder that takes its queue at once."""

    def __init__(self, root: Path) -> None:
        self.sims = SimFleet(root / "claude")
        self.sims.config_dir.mkdir(parents=True)
        self.chats: dict[str, SimChat] = {}
        self.codex_home = root / "codex"
        self.thread: str | None = None
        self.holder: SimHolder | None = None
        self.holder_pause = root / "holder-pause"

    def codex_thread(self) -> str:
        if self.thread is None:
            self.thread = str(codex_thread(self.codex_home)["thread_id"])
            pause = ["--pause-file", str(self.holder_pause)]
            self.holder = codex_holder(self.codex_home, self.thread, "--poll", "0.05", *pause)
        return self.thread

    def pause_holder(self) -> None:
        """The holder stops taking its queue (its pause file): what is sent waits there.
        (Not SIGSTOP: a holder stopped mid-read would sit on the queue database's lock.)"""
        self.holder_pause.touch()

    def resume_holder(self) -> None:
        self.holder_pause.unlink(missing_ok=True)

    def rollout(self) -> Path:
        assert self.thread is not None
        (path,) = self.codex_home.glob(f"sessions/**/rollout-*-{self.thread}.jsonl")
        return path

    def chat(self, kind: str) -> SimChat:
        if kind not in self.chats:
            self.chats[kind] = self.sims.start(*CHAT_ARGS[kind], env=FAST_RECEIVER)
        return self.chats[kind]

    def stop(self) -> None:
        if self.holder is not None:
            self.holder.kill()
        self.sims.stop_all()


class World:
    """One run: a fresh ledger over the shared chats, reached in-process or through the
    helper protocol."""

    def __init__(self, fleet: Fleet, root: Path, through_helper: bool = False) -> None:
        self.fleet = fleet
        self.home = root / f"home-{uuid.uuid4().hex[:8]}"
        self.clock = Clock()
        self.db = open_ledger(self.home)
        self.ledger = self.home / "coop.db"
        self.engine = Engine(self.db, clock=self.clock, actor="dad")
        codex = str(CODEX_EXECUTABLE)
        self.host: Host = (
            PipeHost(
                "office",
                env={
                    "CLAUDE_CONFIG_DIR": str(fleet.sims.config_dir),
                    "CODEX_HOME": str(fleet.codex_home),
                },
                codex=codex,
            )
            if through_helper
            else LocalHost(
                "office",
                config_dir=fleet.sims.config_dir,
                managed_dir=root / "managed",
                codex_home=fleet.codex_home,
                codex=codex,
            )
        )
        self.log: list[str] = []
        self.coordinator = Coordinator(self.engine, {"office": self.host}, self.log.append)
        self.recorder = Recorder(self.ledger)
        self.frame_starts = {
            kind: chat.frame_log.stat().st_size for kind, chat in fleet.chats.items()
        }
        self.tag = uuid.uuid4().hex[:6]
        self.rollout_start: int | None = None  # where this run's Codex receipts begin

    def close(self) -> None:
        self.fleet.resume_holder()  # a run that failed before its heal stops no other
        self.host.close()
        self.db.close()

    # the scenario's moves

    def invite(self, kind: str) -> str:
        if kind == "codex":
            thread = self.fleet.codex_thread()
            self.rollout_start = self.fleet.rollout().stat().st_size
            todo = self.engine.add_todo(f"Fault run {self.tag} for a Codex thread")["id"]
            return str(self.engine.invite(todo, f"codex:{thread}", "office")["outbox"])
        chat = self.fleet.chat(kind)
        self.frame_starts.setdefault(kind, chat.frame_log.stat().st_size)
        # A title of its own: a chat drops an identical body from the same sender.
        todo = self.engine.add_todo(f"Fault run {self.tag} for a {kind} chat")["id"]
        return str(self.engine.invite(todo, chat.ref, "office")["outbox"])

    def row(self, outbox_id: str) -> Outbox:
        return Outbox.get_by_id(outbox_id)

    def work_for(self, outbox_id: str) -> Outbox | None:
        dispatch = self.row(outbox_id).dispatch_id
        return Outbox.get_or_none((Outbox.dispatch == dispatch) & (Outbox.kind == "work"))

    def frames(self) -> list[str]:
        """The msg_id of every frame the chats read during this run."""
        found = []
        for kind, start in self.frame_starts.items():
            with open(self.fleet.chats[kind].frame_log, "rb") as log:
                log.seek(start)
                data = log.read()
            for line in data.splitlines():
                if line.strip():
                    found.append(str(json.loads(line)["msg_id"]))
        return found + self.codex_receipts()

    def codex_receipts(self) -> list[str]:
        """The client id of every message the Codex thread ran during this run."""
        if self.rollout_start is None:
            return []
        with open(self.fleet.rollout(), "rb") as rollout:
            rollout.seek(self.rollout_start)
            data = rollout.read()
        found = []
        for line in data.splitlines():
            payload = json.loads(line).get("payload") or {}
            item = payload.get("item") or {}
            if payload.get("type") == "item_completed" and item.get("type") == "UserMessage":
                found.append(str(item.get("client_id")))
        return found

    def tick(self) -> None:
        self.coordinator.tick()

    def chats_settled(self) -> bool:
        """Whatever was written to this run's chats has been read and written down: each
        frame whose write the ledger recorded is in its chat's frame log (a positive
        sign, whatever the machine's speed), and a moment later every chat is idle (or
        holding, for the bypass chat)."""
        written = Outbox.select(Outbox.id).join(Session)
        written = written.where(Outbox.transport_at.is_null(False) & (Session.vendor == "claude"))
        if not {row.id for row in written} <= set(self.frames()):
            return False
        time.sleep(0.15)  # a frame read just now has made its chat busy
        return all(
            chat.entry().get("status") in ("idle", "waiting")
            for kind, chat in self.fleet.chats.items()
            if kind in self.frame_starts
        )


# --- instrumenting the code under test -------------------------------------------------


def instrument(monkeypatch: pytest.MonkeyPatch, world: World) -> None:
    """Stage and operation markers, and the recorder around every ledger write."""

    def staged(cls: type, name: str, stage: str) -> None:
        original = getattr(cls, name)

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            token = STAGE.set(stage)
            try:
                return original(*args, **kwargs)
            finally:
                STAGE.reset(token)

        monkeypatch.setattr(cls, name, wrapper)

    for name in ("deliver", "observe", "verdict"):
        staged(ClaudeDoor, name, name)
        staged(CodexDoor, name, name)
    staged(Surveyed, "take", "survey")
    staged(Coordinator, "refresh_statuses", "statuses")
    staged(Coordinator, "sweep_obligations", "obligations")
    staged(Coordinator, "cancel_stale", "stale")

    host_cls = type(world.host)
    original_call = host_cls.call

    def call(self: Host, op: str, **args: Any) -> Any:
        SEEN_OPS[op] += 1
        token = OP.set(op)
        # The readings of a pass's first send ride with its survey (loop/surveyed.py):
        # they are the send's, and fail where the send's own would.
        ahead = STAGE.set("deliver") if STAGE.get() == "survey" and op != "survey" else None
        try:
            return original_call(self, op, **args)
        finally:
            if ahead is not None:
                STAGE.reset(ahead)
            OP.reset(token)

    monkeypatch.setattr(host_cls, "call", call)
    original_together = host_cls.read_together

    def read_together(self: Host, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        # Reads asked together go in one write: a fault of that write is its first op's.
        SEEN_OPS.update(op for op, _ in requests)
        token = OP.set(requests[0][0] if requests else "")
        try:
            return original_together(self, requests)
        finally:
            OP.reset(token)

    monkeypatch.setattr(host_cls, "read_together", read_together)

    original_command = frame.CommandBase._command

    def command(self: Any, name: str, key: str, args: dict[str, Any], body: Any) -> Any:
        SEEN_COMMANDS[name] += 1
        return world.recorder.around(name, lambda: original_command(self, name, key, args, body))

    monkeypatch.setattr(frame.CommandBase, "_command", command)
    original_cursor = DeliveryCommands.advance_cursor

    def advance_cursor(self: Any, outbox_id: str, offset: int) -> None:
        SEEN_COMMANDS["advance_cursor"] += 1
        world.recorder.around("advance_cursor", lambda: original_cursor(self, outbox_id, offset))

    monkeypatch.setattr(DeliveryCommands, "advance_cursor", advance_cursor)


@contextmanager
def quick_busy_timeout(world: World) -> Iterator[None]:
    """A short busy timeout, so a lock held elsewhere fails the command at once."""
    world.db.execute_sql("PRAGMA busy_timeout = 50")
    try:
        yield
    finally:
        world.db.execute_sql("PRAGMA busy_timeout = 15000")


@contextmanager
def write_lock(ledger: Path) -> Iterator[None]:
    """Another connection holding the ledger's write lock: a real SQLITE_BUSY."""
    other = sqlite3.connect(ledger, timeout=30, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("ROLLBACK")
        other.close()


def tempdir(prefix: str) -> Path:
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))
