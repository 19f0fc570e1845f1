"""Every I/O point of a delivery cycle, in one list: each ledger write (the engine
commands a coordinator pass runs) and each host operation, down to the system call that
fails. A new I/O point in a delivery cycle must be added here: test_faults checks that
every engine command and host operation the coordinator's code calls, and every one a
run was seen to use, is listed.

Each point names the operation it belongs to, the scenario that reaches it, the stage of
the pass where it fails (deliver, observe, verdict, statuses, obligations, stale), how it
fails (flavours), and the states the envelope may be in right after the failed pass.

Proved elsewhere, over real sshd: a Mac that refuses the connection, one that accepts
and never answers, unknown and changed host keys, a helper killed mid-session
(tests/ssh/test_ssh_connect.py, tests/ssh/test_channel.py). The helper points below fail
the same request/answer protocol (hosts/channel.py) over a PipeHost's pipes.
"""

from __future__ import annotations

import errno
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import peewee as pw
import pytest

from coop_engine.engine import Engine
from hosts.mac import codex_door, native, platforms, settings, transcripts
from hosts.mac import local as local_host
from hosts.pipe import PipeStream

from .kit import Fault, World, quick_busy_timeout, write_lock

Inject = Callable[[pytest.MonkeyPatch, Fault, World], None]

ANY = frozenset({"pending", "uncertain", "delivered", "expired", "cancelled"})
UNSENT = frozenset({"pending"})
SENT = frozenset({"uncertain", "delivered"})
UNCERTAIN = frozenset({"uncertain"})


@dataclass(frozen=True)
class Point:
    name: str
    layer: str  # ledger | host
    operation: str  # the engine command or the host operation it belongs to
    scenario: str
    stage: str | None
    flavours: tuple[str, ...]
    expect: frozenset[str]
    inject: Inject
    helper: bool = False  # the Mac is reached through the helper protocol


def oserror(code: int) -> OSError:
    return OSError(code, os.strerror(code))


# --- ledger writes ------------------------------------------------------------------------


def ledger_write(command: str) -> Inject:
    """`busy`: another connection holds the write lock (a real SQLITE_BUSY, the busy
    timeout cut short). `full`: the command's last write fails (SQLITE_FULL) inside its
    transaction, after all its other writes."""

    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        original = getattr(Engine, command)
        full = {"armed": False}

        def failing(self: Engine, *args: Any, **kwargs: Any) -> Any:
            if not fault.now():
                return original(self, *args, **kwargs)
            if fault.flavour == "busy":
                with quick_busy_timeout(world), write_lock(world.ledger):
                    return original(self, *args, **kwargs)
            if command == "advance_cursor":  # one UPDATE: it fails whole
                raise pw.OperationalError("database or disk is full")
            full["armed"] = True
            try:
                return original(self, *args, **kwargs)
            finally:
                full["armed"] = False

        from coop_engine.models import Command

        create = Command.create.__func__  # type: ignore[attr-defined]

        def last_write(cls: type, **fields: Any) -> Any:
            if full["armed"]:
                raise pw.OperationalError("database or disk is full")
            return create(cls, **fields)

        monkeypatch.setattr(Engine, command, failing)
        monkeypatch.setattr(Command, "create", classmethod(last_write))

    return inject


LEDGER = ("busy", "full")


def _ledger(command: str, scenario: str, stage: str, expect: frozenset[str]) -> Point:
    return Point(
        f"ledger.{command}", "ledger", command, scenario, stage, LEDGER, expect,
        ledger_write(command),
    )  # fmt: skip


# --- this Mac's files ---------------------------------------------------------------------


class FailingOs:
    """A module's `os`, one of whose functions fails when the fault says so."""

    def __init__(self, fault: Fault, function: str, code: int, op: str, path_has: str = ""):
        self._fault, self._function, self._code = fault, function, code
        self._op, self._path_has = op, path_has

    def __getattr__(self, name: str) -> Any:
        real = getattr(os, name)
        if name != self._function:
            return real

        def failing(*args: Any, **kwargs: Any) -> Any:
            target = str(args[0]) if args else ""
            if name == "read" and isinstance(
                args[0], int
            ):  # a read by descriptor: what file is it?
                target = os.readlink(f"/proc/self/fd/{args[0]}")
            if self._path_has in target and self._fault.now(self._op):
                raise oserror(self._code)
            return real(*args, **kwargs)

        return failing


def module_os(module: Any, function: str, code: int, op: str, path_has: str = "") -> Inject:
    """Fail `function` in `module` for the fault, on a path holding `path_has`; a
    `{pid}` there is the accepting chat's (a scan reads every chat's files: a failure on
    another chat's would leave the one being sent to untouched)."""

    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        where = path_has.format(pid=world.fleet.chat("accept").pid)
        monkeypatch.setattr(module, "os", FailingOs(fault, function, code, op, where))

    return inject


def settings_read(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
    original = settings.read_file

    def failing(path: str, limit: int = 1 << 20) -> bytes:
        if fault.now("policy_inputs"):
            raise oserror(errno.EIO)
        return original(path, limit)

    monkeypatch.setattr(settings, "read_file", failing)


class FailingFile:
    """A transcript opened fine whose reads fail (EIO)."""

    def __init__(self, handle: Any) -> None:
        self._handle = handle

    def __enter__(self) -> FailingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._handle.close()

    def fileno(self) -> int:
        return int(self._handle.fileno())

    def seek(self, offset: int) -> int:
        return int(self._handle.seek(offset))

    def read(self, *_: Any) -> bytes:
        raise oserror(errno.EIO)

    def readinto(self, *_: Any) -> int:
        raise oserror(errno.EIO)


def transcript_open(op: str, code: int) -> Inject:
    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        def opening(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            if fault.now(op):
                raise oserror(code)
            return open(path, mode, *args, **kwargs)  # noqa: SIM115

        monkeypatch.setattr(transcripts, "open", opening, raising=False)

    return inject


def transcript_read(op: str) -> Inject:
    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        def opening(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
            handle = open(path, mode, *args, **kwargs)  # noqa: SIM115
            return FailingFile(handle) if fault.now(op) else handle

        monkeypatch.setattr(transcripts, "open", opening, raising=False)

    return inject


# --- the socket write ---------------------------------------------------------------------


def socket_fault(method: str, error: Callable[[], BaseException], partial: bool = False) -> Inject:
    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        original = getattr(socket.socket, method)

        def failing(self: socket.socket, *args: Any) -> Any:
            if self.family == socket.AF_UNIX and fault.now("send_frame"):
                if partial:
                    data = args[0]
                    self.send(data[: len(data) // 2])
                raise error()
            return original(self, *args)

        monkeypatch.setattr(socket.socket, method, failing)

    return inject


# --- the Codex door -----------------------------------------------------------------------


def app_server_dies_after_add(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
    """Codex queued the message and answered; the app-server died before Coop read it."""
    original = codex_door.AppServer.request

    def request(self: codex_door.AppServer, method: str, *args: Any, **kwargs: Any) -> Any:
        result = original(self, method, *args, **kwargs)
        if method == "thread/queue/add" and fault.now("codex_queue_add"):
            self.proc.kill()
            self.proc.wait()
            raise codex_door.AppServerGone("app-server exited (-9)")
        return result

    monkeypatch.setattr(codex_door.AppServer, "request", request)


def queue_unreadable(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
    """Codex's queue database cannot be read while the survey reads it."""
    original = codex_door.queued

    def queued(codex_home: str, thread_id: str) -> dict[str, list[str]]:
        if fault.now("survey"):
            raise oserror(errno.EIO)
        return original(codex_home, thread_id)

    monkeypatch.setattr(codex_door, "queued", queued)


# --- the helper protocol ------------------------------------------------------------------


def helper_request_lost(op: str, riding: str | None = None) -> Inject:
    """The request line never reaches the helper: its stdin is a broken pipe. With
    `riding`, only a write that carries that operation's request as well."""

    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        original = PipeStream.send

        def failing(self: PipeStream, data: bytes, timeout: float) -> None:
            carried = riding is None or f'"op":"{riding}"'.encode() in data
            if f'"op":"{op}"'.encode() in data and carried and fault.now(op):
                raise BrokenPipeError(errno.EPIPE, "Broken pipe")
            original(self, data, timeout)

        monkeypatch.setattr(PipeStream, "send", failing)

    return inject


def helper_answer_lost(op: str) -> Inject:
    """The helper did the work and answered; the answer never arrives in time."""

    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        original = PipeStream.recv

        def failing(self: PipeStream, timeout: float) -> bytes:
            chunk = original(self, timeout)
            if fault.now(op):
                raise TimeoutError
            return chunk

        monkeypatch.setattr(PipeStream, "recv", failing)

    return inject


def helper_died(op: str) -> Inject:
    """The helper process dies before its answer is read."""

    def inject(monkeypatch: pytest.MonkeyPatch, fault: Fault, world: World) -> None:
        original = PipeStream.recv

        def failing(self: PipeStream, timeout: float) -> bytes:
            chunk = original(self, timeout)
            if fault.now(op):
                self.process.kill()
                self.process.wait()
                return b""  # its output ends; what it wrote died with it
            return chunk

        monkeypatch.setattr(PipeStream, "recv", failing)

    return inject


def _host(
    name: str,
    operation: str,
    scenario: str,
    stage: str,
    flavour: str,
    expect: frozenset[str],
    inject: Inject,
    helper: bool = False,
) -> Point:
    return Point(name, "host", operation, scenario, stage, (flavour,), expect, inject, helper)


EIO, EMFILE = errno.EIO, errno.EMFILE

POINTS: tuple[Point, ...] = (
    # Ledger writes: each engine command a coordinator pass runs, and the bookmark.
    _ledger("mark_uncertain", "accept", "deliver", UNSENT),
    _ledger("record_transport", "accept", "deliver", UNCERTAIN),
    _ledger("record_refusal", "refusal", "deliver", UNSENT),
    _ledger("record_receipt", "accept", "observe", UNCERTAIN),
    _ledger("advance_cursor", "accept", "observe", ANY),
    _ledger("accept", "accept", "observe", frozenset({"delivered"})),
    _ledger("record_held", "held", "observe", UNCERTAIN),
    _ledger("record_conflict", "conflict", "observe", frozenset({"delivered"})),
    _ledger("decline", "decline", "observe", frozenset({"delivered"})),
    _ledger("expire", "refuse", "verdict", UNCERTAIN),
    _ledger("record_status", "accept", "statuses", ANY),
    _ledger("record_process", "accept", "statuses", ANY),
    _ledger("sweep_obligations", "obligation", "obligations", ANY),
    _ledger("cancel_stale", "stale", "stale", UNSENT),
    _ledger("record_queue", "codex_queued", "observe", SENT),
    # The registry, read twice by the engine and a third time where the chat lives.
    _host("registry.list", "target", "accept", "deliver", "EIO", UNSENT,
          module_os(native, "listdir", EIO, "target")),
    _host("registry.read", "target", "accept", "deliver", "EIO", UNSENT,
          module_os(native, "read", EIO, "target", "/sessions/{pid}.json")),
    _host("process.births", "target", "accept", "deliver", "EMFILE", UNSENT,
          module_os(platforms, "open", EMFILE, "target", "/proc/{pid}/stat")),
    _host("settings.read", "policy_inputs", "accept", "deliver", "EIO", SENT, settings_read),
    _host("transcript.position", "transcript_position", "accept", "deliver", "EIO", UNSENT,
          module_os(local_host, "stat", EIO, "transcript_position")),
    _host("registry.third_read", "send_frame", "accept", "deliver", "EIO", UNSENT,
          module_os(native, "listdir", EIO, "send_frame")),
    # The socket: connect, write, shut down.
    _host("socket.connect", "send_frame", "accept", "deliver", "ECONNREFUSED", UNSENT,
          socket_fault("connect", lambda: ConnectionRefusedError(errno.ECONNREFUSED, "refused"))),
    _host("socket.connect_timeout", "send_frame", "accept", "deliver", "timeout", UNSENT,
          socket_fault("connect", lambda: TimeoutError("timed out"))),
    _host("socket.write", "send_frame", "accept", "deliver", "EPIPE", UNCERTAIN,
          socket_fault("sendall", lambda: BrokenPipeError(errno.EPIPE, "Broken pipe"))),
    _host("socket.write_torn", "send_frame", "accept", "deliver", "EPIPE after half", UNCERTAIN,
          socket_fault("sendall", lambda: BrokenPipeError(errno.EPIPE, "Broken pipe"), True)),
    _host("socket.shutdown", "send_frame", "accept", "deliver", "EPIPE", SENT,
          socket_fault("shutdown", lambda: BrokenPipeError(errno.EPIPE, "Broken pipe"))),
    # The transcript, read to observe, to find the answer, and afresh for a verdict.
    _host("transcript.scan", "transcript_scan", "accept", "observe", "EIO", ANY,
          transcript_read("transcript_scan")),
    _host("transcript.answer", "transcript_read", "accept", "observe", "EIO",
          frozenset({"delivered"}), transcript_read("transcript_read")),
    _host("transcript.verdict", "transcript_scan", "lose", "verdict", "EIO", UNCERTAIN,
          transcript_read("transcript_scan")),
    _host("transcript.verdict_open", "transcript_scan", "lose", "verdict", "EACCES",
          UNCERTAIN, transcript_open("transcript_scan", errno.EACCES)),
    # The pass's survey: the registry and the transcripts, read in one request. A survey
    # that failed is a Mac not asked: nothing moves on its word, nothing expires.
    _host("survey.registry", "survey", "lose", "survey", "EIO", UNSENT | UNCERTAIN,
          module_os(native, "listdir", EIO, "survey")),
    _host("survey.registry_accept", "survey", "accept", "survey", "EIO", ANY,
          module_os(native, "listdir", EIO, "survey")),
    _host("survey.transcript", "survey", "accept", "survey", "EIO", ANY,
          transcript_read("survey")),
    # The Codex door: the rollout's position, the add, the rollout read to observe and
    # to find the answer, Codex's queue read by the survey. A request lost before it left
    # has no point: no record Coop can read tells it from one Codex took and lost (an
    # envelope Codex never queued stays uncertain, never inferred unsent).
    _host("codex.position", "codex_position", "codex", "deliver", "EIO", UNSENT,
          module_os(local_host, "stat", EIO, "codex_position")),
    _host("codex.add_answer_died", "codex_queue_add", "codex", "deliver", "killed", SENT,
          app_server_dies_after_add),
    _host("rollout.scan", "rollout_scan", "codex", "observe", "EIO", ANY,
          transcript_read("rollout_scan")),
    _host("rollout.answer", "rollout_read", "codex", "observe", "EIO", ANY,
          transcript_read("rollout_read")),
    _host("survey.codex_queue", "survey", "codex_queued", "survey", "EIO", ANY, queue_unreadable),
    _host("helper.codex_add_answer_lost", "codex_queue_add", "codex", "deliver", "timeout",
          SENT, helper_answer_lost("codex_queue_add"), helper=True),
    # The helper protocol, as over ssh: a request lost, an answer lost, a helper dead.
    # The first send's readings ride with the pass's survey, in its write: that write lost
    # is a Mac not asked, and nothing is sent.
    _host("helper.readings_lost", "survey", "accept", "survey", "EPIPE", UNSENT,
          helper_request_lost("survey", riding="target"), helper=True),
    _host("helper.send_lost", "send_frame", "accept", "deliver", "EPIPE", UNCERTAIN,
          helper_request_lost("send_frame"), helper=True),
    _host("helper.send_answer_lost", "send_frame", "accept", "deliver", "timeout", SENT,
          helper_answer_lost("send_frame"), helper=True),
    _host("helper.scan_died", "transcript_scan", "accept", "observe", "killed", ANY,
          helper_died("transcript_scan"), helper=True),
)  # fmt: skip
