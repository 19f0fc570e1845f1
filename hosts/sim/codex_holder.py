"""``python -m hosts.sim codex-holder``: a process that holds a Codex thread open.

It plays the Desktop app or a ``codex resume`` TUI on one thread, as Codex CLI 0.171.0
does after ``thread/resume``: it holds the thread's writer lock (``codex_lock``), writes
``--ready-file`` (JSON: pid, thread, lock, rollout) once it holds it, then takes the
thread's queued items at once and every ``--poll`` seconds. Each item is deleted from
``queue_1.sqlite`` first, then run as one turn appended to the thread's rollout: the
queue-triggered lines (``Rollout.queue_turn``), then the answer (``finish_turn``). The
answer to an invitation ("end your reply with: COOP_ACCEPT <nonce>") ends with
``COOP_ACCEPT <nonce>``; to anything else it is "Noted.". ``--answer hang`` starts the
first turn and never ends it (a holder to kill mid-turn); so does a message holding
``COOP-STALL``, as tests/codex/model_server.py never answers one for the real Codex.
While ``--pause-file`` exists it takes nothing (what is queued stays queued), without
stopping the process, so it never sits on a lock of the queue's database.

SIGTERM or SIGINT: it stops (a hung turn is written off as ``turn_aborted``, as the real
holder does when its client closes it), removes the lock file and exits 0. SIGKILL
leaves the turn open and the lock file behind.
Exit 1 when the thread cannot be held (no active uncompressed rollout, another writer),
2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import signal
import sqlite3
import sys
import time
from contextlib import closing
from pathlib import Path

from hosts.sim import codex_queue, replies
from hosts.sim import codex_state as state
from hosts.sim.codex import find_rollout
from hosts.sim.codex_appserver import parse_uuid
from hosts.sim.codex_lock import acquire, lock_path, release
from hosts.sim.codex_rollout import Rollout, resume_counts

PLAIN_ANSWER = "Noted."
STALL = "COOP-STALL"  # a message the scripted model never answers
TURN_TOKENS = 12  # what one turn adds to the state row's tokens_used


class HolderError(Exception):
    """The thread cannot be held; exit status 1."""


class Stopper:
    """Set by SIGTERM or SIGINT. ``wait`` sleeps until then or a timeout: the signal's
    wakeup byte on a pipe ends the sleep, so a signal just before it is not missed."""

    def __init__(self) -> None:
        self.stopped = False
        self._wakeup, write = os.pipe()
        os.set_blocking(write, False)
        signal.set_wakeup_fd(write)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._stop)

    def _stop(self, signum: int, frame: object) -> None:
        self.stopped = True

    def wait(self, seconds: float | None) -> None:
        if not self.stopped:
            select.select([self._wakeup], [], [], seconds)


def reply(text: str) -> str:
    """The scripted model's answer: accept an invitation, acknowledge anything else."""
    if replies.invitation_tokens([text]):
        return replies.answer([text], "accept")
    return PLAIN_ANSWER


def run_turn(
    home: Path, rollout_path: Path, item: codex_queue.QueuedItem, hang: bool, stop: Stopper
) -> None:
    """Append one queue-triggered turn for ``item``. A turn left hanging waits for the
    stop signal, then ends interrupted, as a real holder closed mid-turn ends it."""
    ordinal, history = resume_counts(rollout_path)
    rollout = Rollout(
        rollout_path, item.thread_id, _cwd(rollout_path), ordinal=ordinal, history=history
    )
    turn = rollout.queue_turn(time.time(), item.client_id, item.content)
    if hang or STALL in item.text:
        stop.wait(None)
        rollout.abort_turn(time.time(), turn)
        return
    now = time.time()
    rollout.finish_turn(now, turn, reply(item.text))
    if (home / state.STATE_DB).exists():
        with closing(state.connect(home)) as conn:
            state.touch_thread(conn, item.thread_id, now, TURN_TOKENS)


def hold(
    home: Path,
    thread_id: str,
    rollout_path: Path,
    poll: float,
    hang: bool,
    stop: Stopper,
    pause: Path | None = None,
) -> None:
    """Take queued items until a signal (none while the pause file exists)."""
    with closing(codex_queue.connect(home)) as conn:
        while not stop.stopped:
            if pause is not None and pause.exists():
                stop.wait(poll)
                continue
            # A read first: an empty poll takes no write lock on the queue.
            waiting = codex_queue.has_items(conn, thread_id)
            item = codex_queue.take_next(conn, thread_id) if waiting else None
            if item is None:
                stop.wait(poll)
            else:
                run_turn(home, rollout_path, item, hang, stop)


def holdable_rollout(home: Path, thread_id: str) -> Path:
    """The thread's active, uncompressed rollout; raises HolderError otherwise."""
    path = find_rollout(home, thread_id)
    if path is None:
        raise HolderError(f"no rollout found for thread id {thread_id}")
    if path.parent.name == "archived_sessions":
        raise HolderError(f"session {thread_id} is archived")
    if path.suffix != ".jsonl":
        raise HolderError(f"the rollout of {thread_id} is compressed: {path.name}")
    return path


def main(argv: list[str]) -> int:
    """Hold the thread until a signal; returns the exit status."""
    args = _parser().parse_args(argv)
    try:
        thread_id = parse_uuid(args.thread)
    except ValueError as exc:
        print(f"hosts.sim codex-holder: error: invalid thread id: {exc}", file=sys.stderr)
        return 2
    home: Path = args.codex_home.expanduser().absolute()
    stop = Stopper()
    try:
        rollout_path = holdable_rollout(home, thread_id)
        lock = lock_path(home, thread_id)
        fd = acquire(lock)
        if fd is None:
            raise HolderError(f"thread {thread_id} already has an active writer")
    except (HolderError, OSError) as exc:
        print(f"hosts.sim codex-holder: {exc}", file=sys.stderr)
        return 1
    try:
        if args.ready_file:
            _write_ready(args.ready_file, thread_id, lock, rollout_path)
        hang = args.answer == "hang"
        hold(home, thread_id, rollout_path, args.poll, hang, stop, args.pause_file)
    except (OSError, sqlite3.Error) as exc:
        print(f"hosts.sim codex-holder: {exc}", file=sys.stderr)
        return 1
    finally:
        release(fd, lock)
    return 0


def _cwd(rollout_path: Path) -> str:
    """The thread's working folder, from its ``session_meta`` line."""
    with rollout_path.open("rb") as f:
        first = f.readline()
    try:
        return str(json.loads(first)["payload"]["cwd"])
    except (ValueError, KeyError, TypeError):
        return ""


def _write_ready(path: Path, thread_id: str, lock: Path, rollout_path: Path) -> None:
    ready = {"pid": os.getpid(), "thread_id": thread_id, "lock": str(lock)}
    staging = path.with_name(path.name + ".tmp")
    staging.write_text(json.dumps({**ready, "rollout": str(rollout_path)}))
    os.replace(staging, path)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hosts.sim codex-holder",
        description="Hold a Codex thread open and run its queued messages as turns.",
    )
    parser.add_argument("--codex-home", required=True, type=Path)
    parser.add_argument("--thread", required=True, help="the thread's id")
    parser.add_argument("--poll", type=float, default=10.0, help="seconds between queue checks")
    parser.add_argument("--answer", choices=("auto", "hang"), default="auto")
    parser.add_argument("--ready-file", type=Path, help="written once the lock is held")
    parser.add_argument("--pause-file", type=Path, help="while it exists, take nothing")
    return parser
