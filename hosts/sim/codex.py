"""``python -m hosts.sim codex``: make and change threads in a simulated Codex home.

One run does one thing, then prints one JSON line saying what it wrote:

- create a thread (``--thread-id`` when given, else a new UUIDv7): a rollout in the LOCAL
  date folder ``sessions/YYYY/MM/DD/`` with ``--turns`` turns (default 1), its
  ``state_5.sqlite`` row, and a ``session_index.jsonl`` line when ``--name`` is given;
- change an existing thread (``--thread-id`` of one): more turns, a new name;
- ``--archive ID``: move the rollout flat into ``archived_sessions/``, flag the row;
- ``--unarchive ID``: move it back to the dated folder its name gives, clear the flag
  (the real `codex unarchive`);
- ``--compress ID``: replace ``X.jsonl`` by ``X.jsonl.zst`` (same mtime), leaving the
  row's ``rollout_path`` on the old name, as the real CLI's compression does.

``--now`` fixes the clock (unix seconds) and ``TZ`` the local date, so tests can make
rollouts around midnight. ``--no-state`` writes no database (a Codex before it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hosts.sim import codex_state as state
from hosts.sim.codex_lock import coordination
from hosts.sim.codex_rollout import (
    CLI_VERSION,
    CLIENTS,
    MODEL,
    PROVIDER,
    Rollout,
    append_line,
    iso_ns,
    resume_counts,
    rollout_name,
    uuid7,
)

# Any id the file name can carry: tests make bad ids on purpose, never path separators.
SAFE_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z-]*")
# rollout-<local YYYY-MM-DD>T<hh-mm-ss>-<id>.jsonl: its dated folder is in its name.
ROLLOUT_DATE = re.compile(r"rollout-(\d{4})-(\d{2})-(\d{2})T")
ZSTD_MAGIC = 0xFD2FB528
ZSTD_BLOCK = 128 * 1024  # the largest block a frame may hold


class UsageError(Exception):
    """The command line asks for something the simulator cannot do; exit status 2."""


def find_rollout(home: Path, thread_id: str) -> Path | None:
    """The thread's rollout file (plain or compressed, active or archived), if any."""
    for pattern in (
        f"sessions/*/*/*/rollout-*-{thread_id}.jsonl*",
        f"archived_sessions/rollout-*-{thread_id}.jsonl*",
    ):
        found = sorted(home.glob(pattern))
        if found:
            return found[0]
    return None


def create(home: Path, args: argparse.Namespace, now: float) -> dict[str, Any]:
    """A new thread with ``args.turns`` turns (at least one: Codex saves a thread at its
    first turn), its state row and, when named, its index line."""
    thread_id = args.thread_id or uuid7(now)
    folder, name = rollout_name(thread_id, now)
    path = home / "sessions" / folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    cwd = str(Path(args.cwd or os.getcwd()).absolute())
    rollout = Rollout(path, thread_id, cwd, args.client)
    rollout.session_meta(now)
    turns = max(1, args.turns if args.turns is not None else 1)
    for n in range(turns):
        rollout.turn(now, f"Simulated prompt {n + 1}", f"Simulated answer {n + 1}.", n == 0)
    os.utime(path, (now, now))  # the file was last written "now", even a --now in the past
    coordination(home)
    db = None
    if not args.no_state:
        originator, source = CLIENTS[args.client]
        conn = state.connect(home)
        try:
            row = {
                "id": thread_id,
                "now": now,
                "rollout_path": str(path),
                "source": source,
                "originator": originator,
                "model_provider": PROVIDER,
                "model": MODEL,
                "cwd": cwd,
                "prompt": "Simulated prompt 1",
                "cli_version": CLI_VERSION,
            }
            state.insert_thread(conn, row)
            state.touch_thread(conn, thread_id, now, 12 * turns)
        finally:
            conn.close()
        db = str(home / state.STATE_DB)
    named = _rename(home, thread_id, args.name, now, args.no_state)
    return _report("created", home, thread_id, path, args.name, turns, db, named)


def update(home: Path, path: Path, args: argparse.Namespace, now: float) -> dict[str, Any]:
    """More turns and/or a new name for the thread whose rollout is ``path``."""
    thread_id = args.thread_id
    turns = args.turns or 0
    if turns and (path.name.endswith(".zst") or path.parent.name == "archived_sessions"):
        raise UsageError(f"thread {thread_id} is compressed or archived; it takes no turns")
    if turns:
        ordinal, history = resume_counts(path)
        rollout = Rollout(path, thread_id, "", args.client, ordinal=ordinal, history=history)
        for n in range(turns):
            rollout.turn(now, f"Simulated prompt +{n + 1}", f"Simulated answer +{n + 1}.", False)
        os.utime(path, (now, now))
        if _has_state(home, args.no_state):
            conn = state.connect(home)
            try:
                state.touch_thread(conn, thread_id, now, 12 * turns)
            finally:
                conn.close()
    named = _rename(home, thread_id, args.name, now, args.no_state)
    db = str(home / state.STATE_DB) if _has_state(home, args.no_state) else None
    return _report("updated", home, thread_id, path, args.name, turns, db, named)


def archive(home: Path, thread_id: str, now: float, no_state: bool) -> dict[str, Any]:
    """Move the rollout flat into ``archived_sessions/`` and flag its state row."""
    path = _existing(home, thread_id)
    target = home / "archived_sessions" / path.name
    return _moved(home, thread_id, path, target, no_state, "archived",
                  lambda conn: state.set_archived(conn, thread_id, str(target), now))  # fmt: skip


def unarchive(home: Path, thread_id: str, now: float, no_state: bool) -> dict[str, Any]:
    """Move an archived rollout back to the dated folder its file name gives (the real
    `codex unarchive` does), and clear its state row's flag."""
    path = _existing(home, thread_id)
    dated = ROLLOUT_DATE.match(path.name)
    if path.parent.name != "archived_sessions" or dated is None:
        raise UsageError(f"thread {thread_id} is not archived")
    target = home / "sessions" / dated[1] / dated[2] / dated[3] / path.name
    return _moved(home, thread_id, path, target, no_state, "unarchived",
                  lambda conn: state.set_unarchived(conn, thread_id, str(target)))  # fmt: skip


def _moved(
    home: Path,
    thread_id: str,
    path: Path,
    target: Path,
    no_state: bool,
    action: str,
    record: Callable[[sqlite3.Connection], None],
) -> dict[str, Any]:
    """Move the rollout to `target` and `record` the move in the state database."""
    if path != target:
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(path, target)
    db = None
    if _has_state(home, no_state):
        conn = state.connect(home)
        try:
            record(conn)
        finally:
            conn.close()
        db = str(home / state.STATE_DB)
    return _report(action, home, thread_id, target, None, 0, db, False)


def compress(home: Path, thread_id: str) -> dict[str, Any]:
    """``X.jsonl`` becomes ``X.jsonl.zst`` (a real zstd frame) with the same mtime."""
    path = _existing(home, thread_id)
    if path.name.endswith(".zst"):
        raise UsageError(f"thread {thread_id} is already compressed")
    target = path.with_name(path.name + ".zst")
    stat = path.stat()
    staging = target.with_name("." + target.name + ".tmp")
    staging.write_bytes(zstd_frame(path.read_bytes()))
    os.utime(staging, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(staging, target)
    path.unlink()
    return _report("compressed", home, thread_id, target, None, 0, None, False)


def _existing(home: Path, thread_id: str) -> Path:
    path = find_rollout(home, thread_id)
    if path is None:
        raise UsageError(f"no rollout for thread {thread_id} in {home}")
    return path


def _has_state(home: Path, no_state: bool) -> bool:
    return not no_state and (home / state.STATE_DB).exists()


def _rename(home: Path, thread_id: str, name: str | None, now: float, no_state: bool) -> bool:
    """Append the index line and set the row's name, as a rename in Codex does."""
    if name is None:
        return False
    entry = {"id": thread_id, "thread_name": name, "updated_at": iso_ns(now)}
    append_line(home / "session_index.jsonl", entry)
    if _has_state(home, no_state):
        conn = state.connect(home)
        try:
            state.set_name(conn, thread_id, name)
        finally:
            conn.close()
    return True


def _report(
    action: str,
    home: Path,
    thread_id: str,
    path: Path,
    name: str | None,
    turns: int,
    db: str | None,
    named: bool,
) -> dict[str, Any]:
    return {
        "action": action,
        "codex_home": str(home),
        "thread_id": thread_id,
        "rollout_path": str(path),
        "archived": path.parent.name == "archived_sessions",
        "name": name,
        "turns": turns,
        "state_db": db,
        "index_line": named,
    }


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hosts.sim codex", description="Write threads into a simulated Codex home."
    )
    parser.add_argument("--codex-home", required=True, type=Path)
    parser.add_argument("--thread-id", help="the thread to create or change (default: new)")
    parser.add_argument("--name", help="name the thread (appends session_index.jsonl)")
    parser.add_argument("--cwd", help="the new thread's working folder (default: this one)")
    parser.add_argument(
        "--turns", type=int, help="turns to add (a new thread gets at least 1, the default)"
    )
    parser.add_argument("--client", choices=sorted(CLIENTS), default="tui")
    parser.add_argument("--archive", metavar="ID", help="archive this thread, nothing else")
    parser.add_argument("--unarchive", metavar="ID", help="bring an archived thread back")
    parser.add_argument("--compress", metavar="ID", help="compress this thread's rollout")
    parser.add_argument("--now", type=float, help="the clock, unix seconds (default: now)")
    parser.add_argument("--no-state", action="store_true", help="keep no state_5.sqlite")
    return parser


def run(argv: list[str]) -> dict[str, Any]:
    """Do what ``argv`` asks; returns the report. Raises UsageError or OSError."""
    args = _parser().parse_args(argv)
    home: Path = args.codex_home.expanduser().absolute()
    now = time.time() if args.now is None else args.now
    single = [flag for flag in ("archive", "unarchive", "compress") if getattr(args, flag)]
    if single and (len(single) > 1 or args.thread_id or args.name or args.turns):
        raise UsageError(f"--{single[0]} ID is an action of its own")
    for value in (args.thread_id, args.archive, args.unarchive, args.compress):
        if value is not None and not SAFE_ID.fullmatch(value):
            raise UsageError(f"a thread id is letters, digits and '-', not {value!r}")
    if args.turns is not None and args.turns < 0:
        raise UsageError("--turns counts turns: 0 or more")
    home.mkdir(parents=True, exist_ok=True)
    if args.archive:
        return archive(home, args.archive, now, args.no_state)
    if args.unarchive:
        return unarchive(home, args.unarchive, now, args.no_state)
    if args.compress:
        return compress(home, args.compress)
    existing = find_rollout(home, args.thread_id) if args.thread_id else None
    if existing is not None:
        return update(home, existing, args, now)
    return create(home, args, now)


def main(argv: list[str]) -> int:
    """Run ``codex``; prints the report line and returns the exit status (2: usage)."""
    try:
        report = run(argv)
    except UsageError as exc:
        print(f"hosts.sim codex: error: {exc}", file=sys.stderr)
        return 2
    except (OSError, sqlite3.Error) as exc:
        print(f"hosts.sim codex: cannot write: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(report), flush=True)
    return 0


def zstd_frame(data: bytes) -> bytes:
    """A single zstd frame holding ``data`` in raw (stored) blocks, with its size."""
    # Frame header: single segment, an 8-byte content size, no checksum, no dictionary.
    out = bytearray(struct.pack("<IB", ZSTD_MAGIC, 0xE0) + struct.pack("<Q", len(data)))
    offsets = list(range(0, len(data), ZSTD_BLOCK)) or [0]
    for i, start in enumerate(offsets):
        block = data[start : start + ZSTD_BLOCK]
        last = 1 if i == len(offsets) - 1 else 0
        header = last | (0 << 1) | (len(block) << 3)  # block type 0: raw
        out += header.to_bytes(3, "little") + block
    return bytes(out)
