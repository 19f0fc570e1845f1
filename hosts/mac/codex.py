"""A Mac's Codex thread list, read from ``$CODEX_HOME`` (DESIGN.md 5.9).

A thread is the union, by id, of three records Codex keeps:

- rollout files: ``sessions/YYYY/MM/DD/rollout-<local time>-<id>.jsonl`` (folders by the
  LOCAL date; older ones compressed to ``.jsonl.zst``) and, once archived, the same name
  flat in ``archived_sessions/``. Line 1 is ``session_meta``.
- the ``threads`` table of ``state_<N>.sqlite`` (WAL mode), opened read-only where it
  lies: a copy of the main file alone misses what still sits in the ``-wal`` file.
- ``session_index.jsonl``: names, one ``{id, thread_name, updated_at}`` line per rename;
  the last line for an id wins.

Nothing here writes to ``$CODEX_HOME``. Standard library only, Python 3.10 or newer: the
ssh helper runs this module on remote Macs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# A Codex thread id: a lowercase UUIDv7 (version nibble 7, RFC 4122 variant).
THREAD_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
ROLLOUT_NAME = re.compile(r"rollout-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d)-(.+?)\.jsonl(\.zst)?")
STATE_DB = re.compile(r"state_(\d+)\.sqlite")
RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?", re.I
)
INDEX = "session_index.jsonl"
META_LIMIT = 16 << 20  # session_meta carries the base instructions: tens of KB, rarely more
DB_TIMEOUT = 2.0  # seconds to wait on a locked database before reporting it skipped
META_FIELDS = ("cwd", "originator", "source", "cli_version")
STATE_COLUMNS = ("id", "name", "rollout_path", "archived", "updated_at", "updated_at_ms")


def default_codex_home() -> Path:
    """``$CODEX_HOME`` when set and not empty, otherwise ``~/.codex`` (user expanded)."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured or "~/.codex").expanduser()


def is_thread_id(value: object) -> bool:
    """Whether ``value`` is a lowercase UUIDv7 string, the only id Codex gives a thread."""
    return isinstance(value, str) and THREAD_ID.fullmatch(value) is not None


@dataclass
class _Rollout:
    """One rollout file on disk; ``meta`` is its session_meta payload when readable."""

    path: str
    thread_id: str
    archived: bool
    compressed: bool
    mtime: float | None
    meta: dict[str, Any] | None = None
    problem: str | None = None  # why meta is None, for a readable explanation


@dataclass
class _Found:
    """Everything found for one id, before it becomes a thread dict."""

    rollouts: list[_Rollout] = field(default_factory=list)
    row: dict[str, Any] | None = None
    index: dict[str, Any] | None = None


def thread_list(codex_home: str | Path) -> dict[str, Any]:
    """Every thread this Codex home knows, as JSON-able data.

    Returns ``{"codex_home", "threads", "skipped"}``. Each thread is ``{"id", "name",
    "cwd", "originator", "source", "cli_version", "rollout_path", "archived",
    "updated_at", "sources", "compressed", "duplicates", "notes"}``; ``sources`` lists
    which of ``"index"``, ``"rollout"``, ``"state"`` mention it, ``updated_at`` is unix
    seconds (or None), ``duplicates`` other rollout files with the same id, ``notes``
    anything a reader should know (a compressed rollout read by its name only, records
    that disagree). Threads are sorted newest first (UUIDv7 ids sort by creation).
    Whatever cannot be read (torn lines, bad ids, unreadable files or databases) is
    listed in ``skipped`` as ``{"file" or "source": ..., "reason": ...}``; nothing raises.
    """
    home = Path(codex_home).expanduser()
    skipped: list[dict[str, Any]] = []
    found = _collect(home, None, skipped)
    threads = [_thread(tid, f) for tid, f in sorted(found.items(), reverse=True)]
    return {"codex_home": str(home), "threads": threads, "skipped": skipped}


def find_thread(codex_home: str | Path, thread_id: str) -> dict[str, Any]:
    """Whether this Codex home holds the saved thread ``thread_id``, for adoption.

    Returns ``{"matches": n, "archived": bool, "thread": dict or None}``. ``matches``
    counts the thread's saved copies: 0 when it has neither a rollout nor a state row (a
    name alone in the index is not a saved thread), otherwise 1 plus its duplicate
    rollout files. The thread can be adopted when ``matches == 1`` and not archived.
    Only the files named with this id are read, so the cost is a directory listing.
    """
    home = Path(codex_home).expanduser()
    if not is_thread_id(thread_id):
        return {"matches": 0, "archived": False, "thread": None}
    found = _collect(home, thread_id, [])
    if thread_id not in found:
        return {"matches": 0, "archived": False, "thread": None}
    thread = _thread(thread_id, found[thread_id])
    saved = "rollout" in thread["sources"] or "state" in thread["sources"]
    matches = 1 + len(thread["duplicates"]) if saved else 0
    return {"matches": matches, "archived": thread["archived"], "thread": thread}


def _collect(home: Path, only: str | None, skipped: list[dict[str, Any]]) -> dict[str, _Found]:
    """Read the three records into ``{id: _Found}``; ``only`` limits reading to one id."""
    found: dict[str, _Found] = {}
    for rollout in _rollouts(home, only, skipped):
        found.setdefault(rollout.thread_id, _Found()).rollouts.append(rollout)
    for tid, row in _state_rows(home, only, skipped).items():
        found.setdefault(tid, _Found()).row = row
    for tid, entry in _index(home / INDEX, only, skipped).items():
        found.setdefault(tid, _Found()).index = entry
    return found


def _rollouts(home: Path, only: str | None, skipped: list[dict[str, Any]]) -> list[_Rollout]:
    """Rollout files under ``sessions/`` (any depth) and ``archived_sessions/``."""
    out: list[_Rollout] = []

    def unreadable(error: OSError) -> None:
        skipped.append({"file": str(error.filename), "reason": f"cannot list: {error}"})

    for folder, archived in ((home / "sessions", False), (home / "archived_sessions", True)):
        if not folder.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(folder, onerror=unreadable):
            dirnames.sort()
            for name in sorted(filenames):
                rollout = _rollout(Path(dirpath) / name, archived, only, skipped)
                if rollout is not None:
                    out.append(rollout)
    return out


def _rollout(
    path: Path, archived: bool, only: str | None, skipped: list[dict[str, Any]]
) -> _Rollout | None:
    """One file, if it is a rollout of a valid id (and of ``only`` when given)."""
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.zst")):
        return None  # staging and lock files live beside rollouts now and then
    match = ROLLOUT_NAME.fullmatch(path.name)
    if match is None:
        if not path.name.startswith("."):
            skipped.append({"file": str(path), "reason": "not a rollout-<time>-<id> name"})
        return None
    thread_id, compressed = match.group(2), match.group(3) is not None
    if only is not None and thread_id != only:
        return None
    if not is_thread_id(thread_id):
        reason = f"file name id {thread_id!r} is not a lowercase UUIDv7"
        skipped.append({"file": str(path), "reason": reason})
        return None
    try:
        mtime: float | None = path.stat().st_mtime
    except OSError:
        mtime = None
    rollout = _Rollout(str(path), thread_id, archived, compressed, mtime)
    if compressed:
        # zstd is not in the standard library: the file name is all that can be read.
        rollout.problem = "compressed (.jsonl.zst), not read: its id comes from the file name"
        return rollout
    rollout.meta, rollout.problem = _session_meta(path)
    if rollout.problem is not None:
        skipped.append({"file": str(path), "reason": f"line 1: {rollout.problem}"})
    return rollout


def _session_meta(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The payload of line 1 when it is a complete ``session_meta``, else why not."""
    try:
        with path.open("rb") as f:
            line = f.readline(META_LIMIT)
    except OSError as exc:
        return None, f"cannot read: {exc.strerror or exc}"
    if not line.endswith(b"\n"):
        # Codex writes whole lines; a line without its newline is still being written.
        return None, "incomplete (torn or still being written)"
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return None, "not JSON"
    if not isinstance(entry, dict):
        return None, "not a JSON object"
    payload = entry.get("payload")
    if entry.get("type") == "session_meta" and isinstance(payload, dict):
        return payload, None
    return None, f"type {entry.get('type')!r}, not session_meta"


def _state_rows(
    home: Path, only: str | None, skipped: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Rows of the newest ``state_<N>.sqlite`` ``threads`` table, by id."""
    numbered = []
    try:
        for entry in os.scandir(home):
            match = STATE_DB.fullmatch(entry.name)
            if match and entry.is_file():
                numbered.append((int(match.group(1)), Path(entry.path)))
    except OSError:
        return {}  # no home at all: nothing to read, nothing skipped
    if not numbered:
        return {}
    # The highest number is the schema this Codex uses; older files are left behind.
    path = max(numbered)[1]
    label = path.name
    try:
        rows = _query_threads(path, only)
    except sqlite3.Error as exc:
        skipped.append({"source": label, "reason": f"cannot read the threads table: {exc}"})
        return {}
    out: dict[str, dict[str, Any]] = {}
    for row in rows:
        tid = row.get("id")
        if not is_thread_id(tid):
            reason = f"threads row id {tid!r} is not a lowercase UUIDv7"
            skipped.append({"source": label, "reason": reason})
            continue
        out[str(tid)] = row
    return out


def _query_threads(path: Path, only: str | None) -> list[dict[str, Any]]:
    """The ``threads`` rows, read through SQLite in place (read-only, WAL honoured)."""
    uri = path.absolute().as_uri() + "?mode=ro"
    conn = sqlite3.connect(uri, uri=True, timeout=DB_TIMEOUT)
    try:
        present = {row[1] for row in conn.execute("PRAGMA table_info(threads)")}
        if "id" not in present:
            raise sqlite3.OperationalError("no threads table with an id column")
        columns = [
            c for c in STATE_COLUMNS + META_FIELDS if c in present
        ]  # older schemas lack some
        sql = f"SELECT {', '.join(columns)} FROM threads"
        cursor = conn.execute(sql + " WHERE id = ?", (only,)) if only else conn.execute(sql)
        # zip(strict=...) is Python 3.10; the helper also runs on 3.9. Rows have every column.
        return [dict(zip(columns, values)) for values in cursor]  # noqa: B905
    finally:
        conn.close()


def _index(path: Path, only: str | None, skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """The last ``session_index.jsonl`` line for each id (absent file: no names)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        skipped.append({"file": str(path), "reason": f"cannot read: {exc.strerror or exc}"})
        return {}
    out: dict[str, Any] = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
            reason = f"line {number}: not JSON (torn write?)"
            skipped.append({"file": str(path), "reason": reason})
            continue
        tid = entry.get("id") if isinstance(entry, dict) else None
        if not is_thread_id(tid):
            reason = f"line {number}: id {tid!r} is not a lowercase UUIDv7"
            skipped.append({"file": str(path), "reason": reason})
            continue
        if only is None or tid == only:
            out[str(tid)] = entry
    return out


def _thread(thread_id: str, found: _Found) -> dict[str, Any]:
    """One thread dict (schema in ``thread_list``) from everything found for its id."""
    row = found.row or {}
    primary, duplicates = _primary(found.rollouts, row.get("rollout_path"))
    meta = (primary.meta if primary is not None else None) or {}
    notes = _rollout_notes(thread_id, primary, meta)
    thread: dict[str, Any] = {"id": thread_id, "name": _name(found.index, row)}
    for key in META_FIELDS:
        value = meta.get(key) if meta.get(key) is not None else row.get(key)
        if value is not None and not isinstance(value, str):
            value = json.dumps(value, sort_keys=True)  # e.g. a sub-agent's structured source
        thread[key] = value
    sources = [
        name
        for name, present in (
            ("index", found.index is not None),
            ("rollout", bool(found.rollouts)),
            ("state", found.row is not None),
        )
        if present
    ]
    if sources == ["index"]:
        notes.append("named in session_index.jsonl, but no rollout file or state row")
    thread.update(
        rollout_path=primary.path if primary is not None else row.get("rollout_path"),
        archived=_archived(primary, row, notes),
        updated_at=_updated_at(found, row),
        sources=sources,
        compressed=primary.compressed if primary is not None else False,
        duplicates=[r.path for r in duplicates],
        notes=notes,
    )
    return thread


def _rollout_notes(thread_id: str, primary: _Rollout | None, meta: dict[str, Any]) -> list[str]:
    """What a reader should know about the thread's rollout file."""
    notes: list[str] = []
    if primary is not None and primary.problem:
        unread = "" if primary.compressed else "line 1 unread: "
        notes.append(f"rollout {unread}{primary.problem}")
    if meta.get("id") not in (None, thread_id):
        notes.append(f"session_meta id {meta.get('id')!r} differs from the file name")
    return notes


def _archived(primary: _Rollout | None, row: dict[str, Any], notes: list[str]) -> bool:
    """The rollout's folder when there is a file (Codex moves the file to archive), else
    the state row's flag; a disagreement is noted."""
    flag = bool(row.get("archived")) if "archived" in row else None
    if primary is None:
        return bool(flag)
    if flag is not None and flag != primary.archived:
        place = "archived_sessions/" if primary.archived else "sessions/"
        notes.append(f"state row says archived={flag}; the rollout is in {place}")
    return primary.archived


def _primary(rollouts: list[_Rollout], db_path: object) -> tuple[_Rollout | None, list[_Rollout]]:
    """The rollout file that is the thread, and the other files that claim its id.

    The state row's path wins; then an uncompressed file (its meta is readable); then
    one under ``sessions/``. A compressed twin beside the chosen file (the same name plus
    ``.zst``: compression in progress) is not a duplicate.
    """
    if not rollouts:
        return None, []
    # Compressing leaves the state row naming the .jsonl that is now .jsonl.zst.
    named = {db_path, f"{db_path}.zst"} if isinstance(db_path, str) else set()
    ranked = sorted(rollouts, key=lambda r: (r.path not in named, r.compressed, r.archived, r.path))
    primary = ranked[0]
    twin = primary.path[: -len(".zst")] if primary.compressed else primary.path + ".zst"
    return primary, [r for r in ranked[1:] if r.path != twin]


def _name(index: dict[str, Any] | None, row: dict[str, Any]) -> str | None:
    """The user-given name: the index's last line, else the state row; "" means none."""
    for value in ((index or {}).get("thread_name"), row.get("name")):
        if isinstance(value, str) and value.strip():
            return value
    return None


def _updated_at(found: _Found, row: dict[str, Any]) -> float | None:
    """The latest of the state row's time, the index line's time and the file's mtime."""
    times: list[float] = []
    if isinstance(row.get("updated_at_ms"), int):
        times.append(row["updated_at_ms"] / 1000)
    elif isinstance(row.get("updated_at"), int):
        times.append(float(row["updated_at"]))
    if found.index is not None:
        parsed = _timestamp(found.index.get("updated_at"))
        if parsed is not None:
            times.append(parsed)
    times.extend(r.mtime for r in found.rollouts if r.mtime is not None)
    return round(max(times), 3) if times else None


def _timestamp(value: object) -> float | None:
    """Unix seconds from a number or an RFC 3339 string (nanoseconds allowed), else None.

    Parsed by hand: Python 3.10's ``fromisoformat`` rejects ``Z`` and nine digits."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if not isinstance(value, str):
        return None
    match = RFC3339.fullmatch(value.strip())
    if match is None:
        return None
    year, month, day, hour, minute, second = (int(match.group(i)) for i in range(1, 7))
    fraction = float("0." + match.group(7)) if match.group(7) else 0.0
    zone = (match.group(8) or "Z").upper()
    offset = timedelta(0)
    if zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        offset = sign * timedelta(hours=int(digits[:2]), minutes=int(digits[2:]))
    try:
        moment = datetime(year, month, day, hour, minute, second, tzinfo=timezone(offset))
    except ValueError:
        return None
    return moment.timestamp() + fraction
