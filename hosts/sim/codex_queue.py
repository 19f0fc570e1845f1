"""Codex's durable message queue, ``CODEX_HOME/queue_1.sqlite``, as Codex CLI 0.171.0 keeps it.

The schema is the real one, statement for statement (``sqlite_master`` reads the same),
in WAL mode: ``queued_items`` (one row per queued message, ``queue_order`` counting up
per thread from 0 past the highest row left), ``queued_thread_revisions`` (bumped by
three triggers on every change) and sqlx's ``_sqlx_migrations``. A row's
``payload_json`` is ``{"UserInput":{"content":[...],"client_id":C}}``; its id a UUIDv7.

Every change is one statement in one short transaction: the order is chosen inside the
INSERT, and taking the next item is a single ``DELETE ... RETURNING``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hosts.sim.codex_rollout import uuid7
from hosts.sim.codex_state import transaction

QUEUE_DB = "queue_1.sqlite"

SCHEMA = (
    """CREATE TABLE _sqlx_migrations (
    version BIGINT PRIMARY KEY,
    description TEXT NOT NULL,
    installed_on TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
    success BOOLEAN NOT NULL,
    checksum BLOB NOT NULL,
    execution_time BIGINT NOT NULL
)""",
    """CREATE TABLE queued_items (
    id TEXT PRIMARY KEY NOT NULL,
    thread_id TEXT NOT NULL,
    payload_json TEXT NOT NULL,
    queue_order INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
)""",
    """CREATE UNIQUE INDEX queued_items_thread_order_idx
    ON queued_items(thread_id, queue_order)""",
    """CREATE TABLE queued_thread_revisions (
    revision INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT NOT NULL UNIQUE
)""",
    *(
        f"""CREATE TRIGGER queued_items_revision_after_{event.lower()}
AFTER {event} ON queued_items
BEGIN
    INSERT INTO queued_thread_revisions (thread_id)
    VALUES ({row}.thread_id)
    ON CONFLICT(thread_id) DO UPDATE
    SET revision = (SELECT COALESCE(MAX(revision), 0) + 1 FROM queued_thread_revisions);
END"""
        for event, row in (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))
    ),
)
# The two migrations the real file records (their checksums as measured).
MIGRATIONS = (
    (
        1,
        "queued items",
        "CEA113C9A74FE4ED12CF41951B57C66CA375A14A722AC28D41BC06A096ED3E1D"
        "777AC0710C5377E8CD75F645C99CA03C",
    ),
    (
        2,
        "queued thread revisions",
        "983A2B17B454FEB00D7C221D7F556E900E7F9ADE4AEF395E854ED9093FA21237"
        "FD3FD93F99C66758B489C0F376F56570",
    ),
)
COLUMNS = "id, thread_id, payload_json, queue_order, created_at_ms"


@dataclass(frozen=True)
class QueuedItem:
    """One queued message. ``content`` holds its parts as the row stores them:
    ``{"type": "text", "text", "text_elements"}``."""

    id: str
    thread_id: str
    client_id: str
    content: list[dict[str, Any]]
    queue_order: int
    created_at_ms: int

    @property
    def text(self) -> str:
        """The message's text parts, joined."""
        return "\n".join(str(part.get("text", "")) for part in self.content)

    def submission(self) -> dict[str, Any]:
        """The item as the app-server answers it (``queuedSubmission``, list entries)."""
        return {
            "id": self.id,
            "input": [part_to_api(part) for part in self.content],
            "clientUserMessageId": self.client_id,
            "responsesapiClientMetadata": None,
        }


def connect(home: Path) -> sqlite3.Connection:
    """The home's queue database in WAL mode, its schema created when missing."""
    conn = sqlite3.connect(home / QUEUE_DB, timeout=10.0, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    if not _has_schema(conn):  # read first: an existing queue takes no write lock here
        with transaction(conn):
            if not _has_schema(conn):  # another process may have made it meanwhile
                _create_schema(conn)
    return conn


def add(
    conn: sqlite3.Connection, thread_id: str, client_id: str, content: list[dict[str, Any]]
) -> QueuedItem:
    """Queue a message at the end of the thread's queue. The same client id twice makes
    two rows: the real queue does not de-duplicate."""
    item_id = uuid7()
    millis = int(time.time() * 1000)
    payload = json.dumps(
        {"UserInput": {"content": content, "client_id": client_id}}, separators=(",", ":")
    )
    with transaction(conn):
        row = conn.execute(
            "INSERT INTO queued_items (id, thread_id, payload_json, queue_order, created_at_ms,"
            " updated_at_ms) SELECT ?, ?, ?, COALESCE(MAX(queue_order) + 1, 0), ?, ?"
            f" FROM queued_items WHERE thread_id = ? RETURNING {COLUMNS}",
            (item_id, thread_id, payload, millis, millis, thread_id),
        ).fetchall()[0]
    return _item(row)


def delete(conn: sqlite3.Connection, thread_id: str, item_id: str) -> bool:
    """Remove one queued item of the thread; False when there was none by that id."""
    with transaction(conn):
        cursor = conn.execute(
            "DELETE FROM queued_items WHERE id = ? AND thread_id = ?", (item_id, thread_id)
        )
    return cursor.rowcount > 0


def list_items(conn: sqlite3.Connection, thread_id: str) -> list[QueuedItem]:
    """The thread's queued items in ``queue_order``."""
    rows = conn.execute(
        f"SELECT {COLUMNS} FROM queued_items WHERE thread_id = ? ORDER BY queue_order",
        (thread_id,),
    ).fetchall()
    return [_item(row) for row in rows]


def has_items(conn: sqlite3.Connection, thread_id: str) -> bool:
    """Whether anything waits in the thread's queue (a read: no write lock)."""
    found = conn.execute(
        "SELECT 1 FROM queued_items WHERE thread_id = ? LIMIT 1", (thread_id,)
    ).fetchone()
    return found is not None


def take_next(conn: sqlite3.Connection, thread_id: str) -> QueuedItem | None:
    """Delete the thread's first item and return it (None when its queue is empty)."""
    with transaction(conn):
        rows = conn.execute(
            "DELETE FROM queued_items WHERE id = (SELECT id FROM queued_items"
            " WHERE thread_id = ? ORDER BY queue_order LIMIT 1)"
            f" RETURNING {COLUMNS}",
            (thread_id,),
        ).fetchall()
    return _item(rows[0]) if rows else None


def _has_schema(conn: sqlite3.Connection) -> bool:
    found = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'queued_items'"
    ).fetchone()
    return found is not None


def _create_schema(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA:
        conn.execute(statement)
    for version, description, checksum in MIGRATIONS:
        conn.execute(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum,"
            " execution_time) VALUES (?, ?, 1, ?, 500000)",
            (version, description, bytes.fromhex(checksum)),
        )


def _item(row: tuple[Any, ...]) -> QueuedItem:
    item_id, thread_id, payload_json, order, created = row
    payload = json.loads(payload_json)["UserInput"]
    return QueuedItem(
        item_id, thread_id, str(payload["client_id"]), payload["content"], order, created
    )


def part_to_api(part: dict[str, Any]) -> dict[str, Any]:
    """A stored text part as the API spells it: ``byte_range`` becomes ``byteRange``."""
    return _text_part(part, "byte_range", "byteRange")


def part_from_api(part: dict[str, Any]) -> dict[str, Any]:
    """An API text part as the row stores it: ``byteRange`` becomes ``byte_range``."""
    return _text_part(part, "byteRange", "byte_range")


def _text_part(part: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    elements = [
        {(new if key == old else key): value for key, value in element.items()}
        for element in part.get("text_elements") or []
    ]
    return {"type": "text", "text": part.get("text", ""), "text_elements": elements}
