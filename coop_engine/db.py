"""Opening the ledger: SQLite in WAL mode at $COOP_HOME/coop.db, or COOP_DATABASE_URL.

A ledger Coop cannot use is a LedgerError: one line naming the ledger and the cause. A
SQLite ledger on a read-only file system is opened read-only, so reading still works; a
full disk is not read-only but a passing fault (a coordinator started on a read-only
ledger would never write again once space is freed). `ledger_fault` words a failure
that strikes inside a command (the disk filling up, a write to that read-only ledger,
a lost server) the same way.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import peewee as pw

from coop_engine.errors import LedgerError, shown
from coop_engine.home import coop_home, ensure_home, shown_path
from coop_engine.models import TABLES, database

__all__ = ["coop_home", "open_ledger", "is_sqlite", "ledger_fault", "LEDGER_FILE"]

LEDGER_FILE = "coop.db"
# FULL makes every commit, the intent-before-I/O one included, survive a power cut:
# a send recorded as uncertain must still say so after any crash.
SQLITE_PRAGMAS = {
    "journal_mode": "wal",
    "synchronous": "full",
    "busy_timeout": 15000,
    "foreign_keys": 1,
}
# An immutable reader sets no journal mode (that is a write), and SQLite refuses it any write.
READ_ONLY_PRAGMAS = {"busy_timeout": 15000, "foreign_keys": 1, "query_only": 1}
# SQLite grows a WAL ledger's -shm index 32 KiB at a time: with less room than that, even
# opening the ledger fails, with an I/O error rather than SQLITE_FULL.
SHM_STEP = 32 * 1024
POSTGRES_DRIVER = "psycopg2"
POSTGRES_EXTRA = "pip install 'coop[postgres]'"
# Errors of the database underneath a command, as opposed to bugs in it (a constraint
# violated, SQL that does not parse), which keep their traceback.
FAULTS = (pw.OperationalError, pw.InterfaceError, sqlite3.OperationalError, sqlite3.InterfaceError)
# SQLite's "not a database" and "malformed" are plain DatabaseErrors.
PLAIN_FAULTS = (pw.DatabaseError, sqlite3.DatabaseError)
# Whatever a ledger call raises when the database refuses or is gone. peewee's
# InterfaceError is no DatabaseError: it is what every call on a server connection says
# after that connection was ended ("connection already closed") until it is closed here.
DATABASE_ERRORS = (pw.DatabaseError, pw.InterfaceError)

Db = TypeVar("Db", bound=pw.Database)


class SqliteLedger(pw.SqliteDatabase):
    """The SQLite ledger file at `path`; a `uri` opens that file another way (read-only)."""

    def __init__(self, path: Path, pragmas: Mapping[str, object], uri: str | None = None) -> None:
        super().__init__(uri or str(path), pragmas=dict(pragmas), uri=uri is not None)
        self.path = path

    def rollback(self) -> None:
        # SQLite rolls a transaction back by itself when the disk fills or an I/O error
        # strikes; a second ROLLBACK would fail ("no transaction is active") and hide the
        # error that says what happened.
        if not self.is_closed() and not self.connection().in_transaction:
            return
        super().rollback()


def open_ledger(home: Path, url: str | None = None) -> pw.Database:
    """Connect the models to the ledger and create missing tables (idempotent).

    Raises LedgerError when the ledger cannot be used. A SQLite ledger the file system
    will not let Coop write is opened read-only: reads work, and a write fails with an
    error `ledger_fault` words."""
    url = url if url is not None else os.environ.get("COOP_DATABASE_URL")
    return _server_ledger(url) if url else _sqlite_ledger(home)


def is_sqlite(db: pw.Database) -> bool:
    return isinstance(db, pw.SqliteDatabase)


def ledger_file(db: pw.Database) -> Path | None:
    """The SQLite ledger's file, however it was opened (a read-only one by URI); None
    for a ledger on a database server or in memory."""
    if not isinstance(db, pw.SqliteDatabase):
        return None
    path = getattr(db, "path", None) or Path(db.database)
    return None if str(path) == ":memory:" else Path(path)


def ledger_fault(error: BaseException) -> str | None:
    """The one line for the user when `error` is the ledger failing under a command (a
    full disk, a read-only file system, an I/O error, a lost server), naming the ledger
    and the cause; None for any other error."""
    if not isinstance(error, FAULTS) and type(error) not in PLAIN_FAULTS:
        return None
    db = database.obj
    path = _sqlite_path(db)
    if path is None:
        return f"cannot use the ledger {_server_name(db)}: {_first_line(error)}"
    verb, why = _cause(error, path, "use")
    return f"cannot {verb} the ledger {shown_path(path)}: {why}"


# --- SQLite ------------------------------------------------------------------------------


def _sqlite_ledger(home: Path) -> SqliteLedger:
    ensure_home(home)
    path = home / LEDGER_FILE
    _create(path)
    try:
        # On a read-only file system SQLite itself opens the file read-only, through the
        # -wal and -shm a writer elsewhere keeps: reads see every commit.
        return _ready(SqliteLedger(path, SQLITE_PRAGMAS))
    except pw.DatabaseError as error:
        if not _read_only_fs(path):
            raise LedgerError(_open_fault(error, path)) from None
    return _immutable(path)


def _create(path: Path) -> None:
    """The ledger file, created 0600 before SQLite does (its -wal and -shm inherit the
    mode) when it does not exist."""
    if path.exists():
        if not path.is_file():
            raise LedgerError(f"the ledger {shown_path(path)} is not a file")
        return
    try:
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    except OSError as error:
        why = "the file system is read-only" if _read_only_fs(path) else error.strerror
        raise LedgerError(f"cannot create the ledger {shown_path(path)}: {why}") from None


def _immutable(path: Path) -> SqliteLedger:
    """The ledger on a read-only file system with no -shm SQLite can use (so no one has it
    open for writing), opened as an immutable file. Commits left in a -wal could not be
    read without writing a -shm, and the file alone would hide them: that is refused."""
    if _has_wal(path):
        raise LedgerError(
            f"cannot open the ledger {shown_path(path)}: the file system is read-only, "
            "and SQLite cannot read the commits in its -wal file without writing"
        )
    try:
        return _ready(SqliteLedger(path, READ_ONLY_PRAGMAS, _uri(path, "mode=ro&immutable=1")))
    except pw.DatabaseError as error:
        raise LedgerError(_open_fault(error, path)) from None


def _ready(db: Db) -> Db:
    """`db` connected, the models bound to it, its tables created."""
    database.initialize(db)
    try:
        db.connect(reuse_if_open=True)
        db.create_tables(TABLES, safe=True)
        _grown(db)
    except BaseException:
        db.close()
        raise
    return db


def _grown(db: pw.Database) -> None:
    """A ledger made by an earlier Coop gains the columns added since: the ledger only
    ever grows by nullable columns, so an older file opens as it is and keeps its rows."""
    missing = []
    for model in TABLES:
        present = {column.name for column in db.get_columns(model._meta.table_name)}
        missing += [
            (model._meta.table_name, field)
            for field in model._meta.sorted_fields
            if field.null and field.column_name not in present
        ]
    if not missing:
        return
    from playhouse.migrate import SchemaMigrator, migrate

    migrator = SchemaMigrator.from_database(db)
    with db.atomic():
        migrate(*(migrator.add_column(table, f.column_name, f) for table, f in missing))


def _uri(path: Path, query: str) -> str:
    from urllib.parse import quote

    return f"file:{quote(str(path))}?{query}"


def _open_fault(error: BaseException, path: Path) -> str:
    _, why = _cause(error, path, "open")
    return f"cannot open the ledger {shown_path(path)}: {why}"


def _cause(error: BaseException, path: Path, verb: str) -> tuple[str, str]:
    """What could not be done to the SQLite ledger at `path`, and why, in the user's
    words; `verb` when the error says no more than that it failed."""
    code, message = _sqlite_code(error), _first_line(error)
    # An I/O error or a file SQLite cannot open (its -wal, its -shm) often means one of these.
    io = code.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN"))
    read_only = code.startswith("SQLITE_READONLY")  # or opened read-only for that reason
    if code == "SQLITE_FULL" or ((io or read_only) and _full(path)):
        return "write", "the disk is full"
    if (io or read_only) and _read_only_fs(path):
        return "write", "the file system is read-only"
    if read_only:
        return "write", f"it is read-only ({message})"
    if code.startswith(("SQLITE_NOTADB", "SQLITE_CORRUPT")):
        return "read", f"it is not a SQLite database, or it is damaged ({message})"
    if code.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")):
        return "write", f"another process held it locked past the busy timeout ({message})"
    return verb, message


def _sqlite_code(error: BaseException) -> str:
    """SQLite's name for the error (SQLITE_FULL, SQLITE_IOERR_WRITE, ...), found under
    peewee's wrapping; empty when there is none."""
    seen: BaseException | None = error
    for _ in range(8):  # a wrapped error, its cause and its context are enough
        if seen is None:
            break
        if isinstance(seen, sqlite3.Error):
            return str(getattr(seen, "sqlite_errorname", ""))
        inner = seen.args[0] if seen.args and isinstance(seen.args[0], BaseException) else None
        seen = inner or seen.__cause__ or seen.__context__
    return ""


def _read_only_fs(path: Path) -> bool:
    try:
        return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _full(path: Path) -> bool:
    try:
        found = os.statvfs(path.parent)
    except OSError:
        return False
    return found.f_bavail * found.f_frsize < SHM_STEP


def _has_wal(path: Path) -> bool:
    """Whether a -wal file holds anything (commits the main file may not have yet)."""
    try:
        return Path(f"{path}-wal").stat().st_size > 0
    except OSError:
        return False


def _sqlite_path(db: pw.Database | None) -> Path | None:
    if isinstance(db, SqliteLedger):
        return db.path
    if isinstance(db, pw.SqliteDatabase):
        return Path(str(db.database))
    return None


# --- a database server (COOP_DATABASE_URL) -----------------------------------------------


IDLE_IN_TRANSACTION_MS = 5000


def _server_ledger(url: str) -> pw.Database:
    """The ledger COOP_DATABASE_URL names, connected; LedgerError, naming it without its
    password, when the URL, the driver or the server fails."""
    from urllib.parse import urlsplit

    from playhouse.db_url import connect, schemes

    named = repr(_redacted(url))
    try:
        scheme = urlsplit(url).scheme
    except ValueError:
        scheme = ""
    if scheme not in schemes:
        raise LedgerError(
            f"COOP_DATABASE_URL {named} names no kind of database Coop knows: leave it unset "
            "for the SQLite ledger in the Coop home, or give postgresql://USER@HOST/NAME"
        )
    try:
        db = connect(url)
    except (ValueError, TypeError) as error:
        # The message may quote the URL, password and all.
        why = str(error).replace(url, _redacted(url))
        raise LedgerError(f"COOP_DATABASE_URL {named} is not a database URL: {why}") from None
    if isinstance(db, pw.PostgresqlDatabase):
        # A process that hangs inside a transaction (SIGSTOP, a laptop asleep) would keep
        # its row locks (the fence's FOR SHARE on the lease), and stall the standby that
        # takes its lease: the server ends such a session. Only the time a client sits
        # between statements of an open transaction counts; a statement that runs long
        # (a migration's ALTER, a big pass's UPDATE, a wait for a lock) is active, not
        # idle. Coop's transactions are its commands' bodies and the migration in
        # _grown: SQL and Python between them, never I/O to a Mac or a wait on a person.
        # Every process gets it: a `coop` stopped by Ctrl-Z mid-command stalls a
        # coordinator just as well, and its command, one transaction, is rolled back whole.
        options = str(db.connect_params.get("options", ""))
        idle = f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
        db.connect_params["options"] = f"{options} {idle}".strip()
    try:
        return _ready(db)
    except pw.ImproperlyConfigured as error:
        raise LedgerError(_missing_driver(scheme, named, error)) from None
    except FAULTS as error:
        raise LedgerError(f"cannot reach the ledger {named}: {_first_line(error)}") from None


def _missing_driver(scheme: str, named: str, error: Exception) -> str:
    if scheme.startswith("postgres"):
        return (
            f"COOP_DATABASE_URL {named} names PostgreSQL, but its driver ({POSTGRES_DRIVER}) "
            f"is not installed: {POSTGRES_EXTRA}"
        )
    return f"COOP_DATABASE_URL {named} names a database whose driver is missing: {error}"


def _redacted(url: str) -> str:
    """The URL as a message shows it: without its password, and short."""
    head, sep, rest = url.partition("://")
    userinfo, at, place = rest.rpartition("@")
    if sep and at and ":" in userinfo:
        url = f"{head}://{userinfo.partition(':')[0]}:***@{place}"
    return shown(url)


def _server_name(db: pw.Database | None) -> str:
    """The server's database as a message names it (its URL is not kept)."""
    if db is None:
        return "(none open)"
    kind = "PostgreSQL" if isinstance(db, pw.PostgresqlDatabase) else type(db).__name__
    params = db.connect_params
    place = params.get("host") or "localhost"
    if params.get("port"):
        place = f"{place}:{params['port']}"
    return f"{kind} database {db.database!r} on {place}"


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return lines[0].strip() if lines else type(error).__name__
