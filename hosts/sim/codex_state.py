"""The simulated Codex home's ``state_5.sqlite``: the ``threads`` table, in WAL mode.

The columns are those of the real Codex CLI 0.171.0's table (foreign keys to tables the
simulator does not keep are left out). Each change is one short transaction.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

STATE_DB = "state_5.sqlite"

THREADS = """
CREATE TABLE IF NOT EXISTS threads (
    id TEXT PRIMARY KEY,
    rollout_path TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    source TEXT NOT NULL,
    model_provider TEXT NOT NULL,
    cwd TEXT NOT NULL,
    title TEXT NOT NULL,
    sandbox_policy TEXT NOT NULL,
    approval_mode TEXT NOT NULL,
    tokens_used INTEGER NOT NULL DEFAULT 0,
    has_user_event INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    archived_at INTEGER,
    git_sha TEXT,
    git_branch TEXT,
    git_origin_url TEXT,
    cli_version TEXT NOT NULL DEFAULT '',
    first_user_message TEXT NOT NULL DEFAULT '',
    agent_nickname TEXT,
    agent_role TEXT,
    memory_mode TEXT NOT NULL DEFAULT 'enabled',
    model TEXT,
    reasoning_effort TEXT,
    agent_path TEXT,
    created_at_ms INTEGER,
    updated_at_ms INTEGER,
    thread_source TEXT,
    preview TEXT NOT NULL DEFAULT '',
    recency_at INTEGER NOT NULL DEFAULT 0,
    recency_at_ms INTEGER NOT NULL DEFAULT 0,
    history_mode TEXT NOT NULL DEFAULT 'legacy',
    name TEXT,
    is_pinned INTEGER NOT NULL DEFAULT 0,
    thread_section_id TEXT,
    section_position INTEGER,
    section_entered_at_ms INTEGER,
    project_id TEXT,
    originator TEXT,
    daybreak_enabled BOOLEAN,
    creator_user_id TEXT,
    creator_account_id TEXT,
    attached_thread_parent_id TEXT
)
"""


def connect(home: Path) -> sqlite3.Connection:
    """The home's state database, created in WAL mode with its table when missing."""
    conn = sqlite3.connect(home / STATE_DB, timeout=5.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(THREADS)
    return conn


def insert_thread(conn: sqlite3.Connection, row: dict[str, Any]) -> None:
    """A new thread's row (or a fresh one over a row with the same id)."""
    millis = int(row["now"] * 1000)
    values = {
        "id": row["id"],
        "rollout_path": row["rollout_path"],
        "created_at": millis // 1000,
        "updated_at": millis // 1000,
        "source": row["source"],
        "model_provider": row["model_provider"],
        "cwd": row["cwd"],
        "title": row["prompt"],
        "sandbox_policy": json.dumps({"type": "read-only"}),
        "approval_mode": "on-request",
        "cli_version": row["cli_version"],
        "first_user_message": row["prompt"],
        "model": row["model"],
        "created_at_ms": millis,
        "updated_at_ms": millis,
        "thread_source": "user",
        "preview": row["prompt"],
        "recency_at": millis // 1000,
        "recency_at_ms": millis,
        "history_mode": "paginated",
        "originator": row["originator"],
    }
    columns = ", ".join(values)
    marks = ", ".join("?" for _ in values)
    with transaction(conn):
        conn.execute(
            f"INSERT OR REPLACE INTO threads ({columns}) VALUES ({marks})", list(values.values())
        )


def touch_thread(conn: sqlite3.Connection, thread_id: str, now: float, tokens: int) -> None:
    """A turn happened: times and token count move on."""
    millis = int(now * 1000)
    with transaction(conn):
        conn.execute(
            "UPDATE threads SET updated_at = ?, updated_at_ms = ?, recency_at = ?,"
            " recency_at_ms = ?, tokens_used = tokens_used + ? WHERE id = ?",
            (millis // 1000, millis, millis // 1000, millis, tokens, thread_id),
        )


def set_name(conn: sqlite3.Connection, thread_id: str, name: str) -> None:
    """A rename: the real CLI sets ``name`` and leaves ``updated_at`` alone."""
    with transaction(conn):
        conn.execute("UPDATE threads SET name = ? WHERE id = ?", (name, thread_id))


def set_archived(conn: sqlite3.Connection, thread_id: str, path: str, now: float) -> None:
    """An archive: the flag, the time, and the rollout's new path."""
    with transaction(conn):
        conn.execute(
            "UPDATE threads SET archived = 1, archived_at = ?, rollout_path = ? WHERE id = ?",
            (int(now), path, thread_id),
        )


def set_unarchived(conn: sqlite3.Connection, thread_id: str, path: str) -> None:
    """An unarchive: the flag cleared, the rollout's path back in its dated folder."""
    with transaction(conn):
        conn.execute(
            "UPDATE threads SET archived = 0, archived_at = NULL, rollout_path = ? WHERE id = ?",
            (path, thread_id),
        )


class transaction:
    """``BEGIN IMMEDIATE`` ... ``COMMIT`` (``ROLLBACK`` on error) on an autocommit link."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        self.conn.execute("COMMIT" if kind is None else "ROLLBACK")
