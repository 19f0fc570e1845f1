"""A real PostgreSQL server for the tests, started in a temporary directory.

`make test` provides the server binaries the way it provides sshd
(scripts/ensure-system-programs). The server listens on 127.0.0.1 at a free port and on
a Unix socket in its own folder, trusts local connections, and skips fsync (the
durability under test is Coop's transactions, not the disk's). As root it runs as the
`postgres` user, since PostgreSQL refuses to run as root.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

SERVER_USER = "postgres"
DATABASE = "coop"


class Unavailable(Exception):
    """The server cannot run here; the message says why."""


def binaries() -> Path:
    """The folder holding initdb, pg_ctl and postgres."""
    found = shutil.which("pg_ctl")
    if found:
        return Path(os.path.realpath(found)).parent
    versions = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=_version)
    if versions:
        return Path(versions[-1]).parent
    raise Unavailable("no PostgreSQL server binaries (pg_ctl) on this machine")


def _version(path: str) -> float:
    try:
        return float(Path(path).parts[-3])
    except ValueError:
        return 0.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PgServer:
    """One throwaway server; `url` is a peewee db_url for its `coop` database."""

    def __init__(self) -> None:
        self.bin = binaries()
        self.dir = Path(tempfile.mkdtemp(prefix="coop-pg-"))
        self.data = self.dir / "data"
        self.sockets = self.dir / "sock"
        self.log = self.dir / "server.log"
        self.port = free_port()
        self.user: dict[str, Any] = {}
        if os.getuid() == 0:
            try:
                entry = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise Unavailable(f"running as root and there is no {SERVER_USER} user") from None
            self.user = {"user": entry.pw_uid, "group": entry.pw_gid}
            os.chown(self.dir, entry.pw_uid, entry.pw_gid)
        self.sockets.mkdir()
        if self.user:
            os.chown(self.sockets, self.user["user"], self.user["group"])
        self.started = False

    @property
    def url(self) -> str:
        return f"postgresql://coop@127.0.0.1:{self.port}/{DATABASE}"

    def _run(self, *argv: str, timeout: float = 60) -> None:
        done = subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=self.dir,
            env={**os.environ, "LC_ALL": "C"},
            **self.user,
        )
        if done.returncode != 0:
            log = self.log.read_text() if self.log.exists() else ""
            raise Unavailable(f"{argv[0]} failed: {done.stderr.strip()} {log[-2000:]}")

    def start(self) -> PgServer:
        self._run("initdb", "-D", str(self.data), "-U", "coop", "--auth=trust", "-E", "UTF8")
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.sockets} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=200"
        )
        self._run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        self.started = True
        self._run("createdb", "-h", "127.0.0.1", "-p", str(self.port), "-U", "coop", DATABASE)
        return self

    def connect(self) -> Any:
        import psycopg2

        return psycopg2.connect(host="127.0.0.1", port=self.port, user="coop", dbname=DATABASE)

    def reset(self) -> str:
        """Empty every table of the database (ids start at 1 again); returns the url."""
        conn = self.connect()
        try:
            conn.autocommit = True
            with conn.cursor() as cursor:
                # A connection a failed test left inside a transaction fails this, not hangs it.
                cursor.execute("SET lock_timeout = '10s'")
                cursor.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
                tables = [row[0] for row in cursor.fetchall()]
                if tables:
                    names = ", ".join(f'"{name}"' for name in tables)
                    cursor.execute(f"TRUNCATE {names} RESTART IDENTITY CASCADE")
        finally:
            conn.close()
        return self.url

    def stop(self) -> None:
        if self.started:
            try:
                self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except (Unavailable, subprocess.TimeoutExpired):
                pass
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)


def start_or_skip() -> PgServer:
    """A started server, or a pytest skip (a failure under CI's switch, which requires
    every prerequisite: tests/prerequisites.py) naming why it cannot run."""
    from prerequisites import missing

    try:
        import psycopg2  # noqa: F401
    except ImportError:
        missing("psycopg2 is not installed (pip install -e '.[test]')")
    server: PgServer | None = None
    try:
        server = PgServer()
        return server.start()
    except (Unavailable, OSError, subprocess.TimeoutExpired) as error:
        if server is not None:
            server.stop()
        missing(f"PostgreSQL cannot run here: {error}")
