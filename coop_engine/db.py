"""Opening the ledger: SQLite in WAL mode at $COOP_HOME/coop.db, or COOP_DATABASE_URL."""

from __future__ import annotations

import os
from pathlib import Path

import peewee as pw

from coop_engine.home import coop_home, ensure_home
from coop_engine.models import TABLES, database

__all__ = ["coop_home", "open_ledger", "is_sqlite"]

# FULL makes every commit, the intent-before-I/O one included, survive a power cut:
# a send recorded as uncertain must still say so after any crash.
SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "full",
    "busy_timeout": 15000,
    "foreign_keys": 1,
}


def open_ledger(home: Path, url: str | None = None) -> pw.Database:
    """Connect the models to the ledger and create missing tables (idempotent)."""
    url = url if url is not None else os.environ.get("COOP_DATABASE_URL")
    if url:
        from playhouse.db_url import connect

        db: pw.Database = connect(url)
    else:
        ensure_home(home)
        path = home / "coop.db"
        if not path.exists():
            # Create the file 0600 before SQLite does; its -wal and -shm inherit the mode.
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        db = pw.SqliteDatabase(str(path), pragmas=SQLITE_PRAGMAS)
    database.initialize(db)
    db.connect(reuse_if_open=True)
    db.create_tables(TABLES, safe=True)
    return db


def is_sqlite(db: pw.Database) -> bool:
    return isinstance(db, pw.SqliteDatabase)
