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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hosts.mac.codex_home import no_home_listing
from hosts.mac.codex_records import (
    META_FIELDS,
    index_entries,
    is_thread_id,
    session_meta,
    state_rows,
    timestamp,
)

ROLLOUT_NAME = re.compile(r"rollout-(\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d)-(.+?)\.jsonl(\.zst)?")
INDEX = "session_index.jsonl"


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
    absent = no_home_listing(home)
    if absent is not None:
        return absent
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
    for tid, row in state_rows(home, only, skipped).items():
        found.setdefault(tid, _Found()).row = row
    for tid, entry in index_entries(home / INDEX, only, skipped).items():
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
    rollout.meta, rollout.problem = session_meta(path)
    if rollout.problem is not None:
        skipped.append({"file": str(path), "reason": f"line 1: {rollout.problem}"})
    return rollout


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
        parsed = timestamp(found.index.get("updated_at"))
        if parsed is not None:
            times.append(parsed)
    times.extend(r.mtime for r in found.rollouts if r.mtime is not None)
    return round(max(times), 3) if times else None
