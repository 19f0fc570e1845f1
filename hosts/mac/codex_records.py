"""Reading the three records a Codex home keeps (DESIGN.md 5.9), one at a time: a
rollout's ``session_meta`` line, the newest ``state_<N>.sqlite`` ``threads`` table
(read-only, in place), and ``session_index.jsonl``. `codex.py` joins them into a Mac's
thread list. Nothing here writes to ``$CODEX_HOME``; standard library only.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

# A Codex thread id: a lowercase UUIDv7 (version nibble 7, RFC 4122 variant).
THREAD_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
STATE_DB = re.compile(r"state_(\d+)\.sqlite")
META_LIMIT = 16 << 20  # session_meta carries the base instructions: tens of KB, rarely more
DB_TIMEOUT = 2.0  # seconds to wait on a locked database before reporting it skipped
MAX_INDEX_READ = 16 << 20  # session_index.jsonl: a line per naming, about 200 bytes each
META_FIELDS = ("cwd", "originator", "source", "cli_version")
STATE_COLUMNS = ("id", "name", "rollout_path", "archived", "updated_at", "updated_at_ms")
RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)(?:\.(\d+))?(Z|[+-]\d\d:?\d\d)?", re.I
)


def is_thread_id(value: object) -> bool:
    """Whether a value is a Codex thread id (only these ever reach Codex)."""
    return isinstance(value, str) and THREAD_ID.fullmatch(value) is not None


def session_meta(path: Path) -> tuple[dict[str, Any] | None, str | None]:
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


def state_rows(
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


def index_entries(path: Path, only: str | None, skipped: list[dict[str, Any]]) -> dict[str, Any]:
    """The last ``session_index.jsonl`` line for each id (absent file: no names), read
    from the file's last MAX_INDEX_READ bytes: a thread named only before them has no
    name here, and an index grown without end costs no more than that."""
    try:
        data, cut = _tail(path, MAX_INDEX_READ)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        skipped.append({"file": str(path), "reason": f"cannot read: {exc.strerror or exc}"})
        return {}
    if cut:
        data = data.partition(b"\n")[2]  # the first line read is a part of one
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


def _tail(path: Path, most: int) -> tuple[bytes, bool]:
    """The file's last `most` bytes, and whether it held more."""
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size > most:
            file.seek(size - most)
        return file.read(most), size > most


def timestamp(value: object) -> float | None:
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
