"""A home, a ledger or a database Coop cannot use, and a ledger that fails underneath a
command: one line naming it and the cause, exit 1, no traceback, and nothing lost.

The faults are real: a home that is a file, garbage bytes for a ledger, a URL no
database answers, PostgreSQL's driver hidden from the CLI, a 1 MiB tmpfs filled to the
last byte, and a read-only bind mount of a ledger. The last two need root (to mount);
elsewhere they are skipped, saying so.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prerequisites import missing

from .kit import dump

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def root() -> None:
    """Mounting a tmpfs and a read-only bind mount needs root (CI runs as root)."""
    if os.geteuid() != 0:
        missing("root, to mount a tmpfs and a read-only bind mount")


needs_root = pytest.mark.usefixtures("root")

# Big enough that SQLite must grow the -wal to hold it, and the most a body may hold
# (coop_engine/frame_text.py).
BIG_BODY = "x" * (64 * 1024)


def refused(done: subprocess.CompletedProcess[str]) -> str:
    """Exit 1, exactly one line on stderr, no traceback: the line."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr[-3000:])
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[-3000:]
    assert lines[0].startswith("coop: "), lines[0]
    return lines[0]


def listed(done: subprocess.CompletedProcess[str]) -> list[str]:
    """The titles `coop todo list` printed (exit 0, nothing on stderr)."""
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == ""
    return [line.split(None, 3)[-1] for line in done.stdout.splitlines()[1:]]


def files(folder: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in sorted(folder.iterdir())}


# --- the home, the file, the URL ---------------------------------------------------------


def test_a_home_that_is_a_file_is_one_line_naming_it(run_coop: Any, tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.write_bytes(b"not a folder")
    through_flag = run_coop("todo", "list", home=home)
    through_env = run_coop("todo", "add", "x", home=None, env={"COOP_HOME": str(home)})
    for done in (through_flag, through_env):
        assert refused(done) == f"coop: the Coop home {home} is not a directory"
    assert home.read_bytes() == b"not a folder"


def test_a_home_under_a_file_names_the_file_in_the_way(run_coop: Any, tmp_path: Path) -> None:
    (tmp_path / "file").write_bytes(b"")
    home = tmp_path / "file" / "home"
    line = refused(run_coop("todo", "add", "x", home=home))
    assert line == f"coop: cannot create the Coop home {home}: {tmp_path / 'file'} is a file"


def test_a_home_that_cannot_be_created_is_one_line(run_coop: Any) -> None:
    # /proc takes no new folders.
    line = refused(run_coop("todo", "list", home=Path("/proc/coop-home")))
    assert line.startswith("coop: cannot create the Coop home /proc/coop-home: ")


def test_a_ledger_of_garbage_bytes_is_one_line_and_stays_as_it_was(
    run_coop: Any, coop_home: Path
) -> None:
    coop_home.mkdir()
    (coop_home / "coop.db").write_bytes(os.urandom(8192))
    before = files(coop_home)
    for argv in (("todo", "list"), ("todo", "add", "x"), ("outbox", "--json"), ("tick",)):
        line = refused(run_coop(*argv))
        assert line.startswith(f"coop: cannot open the ledger {coop_home / 'coop.db'}: ")
        assert "not a SQLite database" in line
    assert files(coop_home) == before


def test_a_folder_in_place_of_the_ledger_is_one_line(run_coop: Any, coop_home: Path) -> None:
    (coop_home / "coop.db").mkdir(parents=True)
    line = refused(run_coop("todo", "list"))
    assert line == f"coop: the ledger {coop_home / 'coop.db'} is not a file"


@pytest.mark.parametrize(
    "url", ["mongodb://localhost/coop", "not a url at all", "://"], ids=["mongodb", "words", "bare"]
)
def test_a_database_url_of_an_unknown_kind_is_one_line(
    run_coop: Any, coop_home: Path, url: str
) -> None:
    line = refused(run_coop("todo", "list", env={"COOP_DATABASE_URL": url}))
    assert line.startswith(f"coop: COOP_DATABASE_URL {url!r} names no kind of database")
    assert not coop_home.exists()


def test_an_unreachable_server_is_one_line_without_the_password(
    run_coop: Any, coop_home: Path
) -> None:
    url = "postgresql://dad:s3cret@127.0.0.1:1/coop"  # port 1: nothing listens
    line = refused(run_coop("todo", "add", "x", env={"COOP_DATABASE_URL": url}))
    assert line.startswith("coop: cannot reach the ledger 'postgresql://dad:***@127.0.0.1:1/coop'")
    assert "s3cret" not in line
    assert not coop_home.exists()


def test_postgresql_without_its_driver_names_the_extra_to_install(
    run_coop: Any, coop_home: Path, tmp_path: Path
) -> None:
    hidden = tmp_path / "no-driver" / "psycopg2"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('psycopg2 is hidden by the test')\n")
    env = {"COOP_DATABASE_URL": "postgresql://127.0.0.1/coop", "PYTHONPATH": str(hidden.parent)}
    line = refused(run_coop("todo", "list", env=env))
    assert "names PostgreSQL, but its driver (psycopg2) is not installed" in line
    assert line.endswith("pip install 'coop[postgres]'")
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["optional-dependencies"]["postgres"] == ["psycopg2-binary"]


# --- a full disk (a real tmpfs) ----------------------------------------------------------


def mount(*args: str) -> None:
    done = subprocess.run(["mount", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        missing(f"mounting is not permitted here: {done.stderr.strip()}")


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True, timeout=30, check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs: a disk that fills up for real."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mount("-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder))
    try:
        yield folder
    finally:
        unmount(folder)


def fill(disk: Path) -> Path:
    """Write a file until the disk says it is full; the file, to free the space again."""
    filler = disk / "filler"
    with open(filler, "wb", buffering=0) as out:
        try:
            while True:
                out.write(b"\0" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC
    return filler


@needs_root
def test_a_full_disk_refuses_a_write_in_one_line_and_keeps_every_commit(
    run_coop: Any, small_disk: Path
) -> None:
    """A coordinator has the ledger open (its -wal and -shm exist), so reads still work;
    a command that must write says so, and what was committed stays."""
    home = small_disk / "home"
    assert run_coop("todo", "add", "Committed before the disk filled", home=home).returncode == 0
    ledger = home / "coop.db"
    running = sqlite3.connect(ledger, isolation_level=None)  # as `coop serve` would
    try:
        running.execute("SELECT count(*) FROM engine_todos").fetchall()
        before = dump(ledger)
        filler = fill(small_disk)
        line = refused(run_coop("todo", "add", "Too big", "--body", BIG_BODY, home=home))
        assert line == f"coop: cannot write the ledger {ledger}: the disk is full"
        assert listed(run_coop("todo", "list", home=home)) == ["Committed before the disk filled"]
        assert dump(ledger) == before
        filler.unlink()
        assert run_coop("todo", "add", "After space was freed", home=home).returncode == 0
    finally:
        running.close()
    titles = listed(run_coop("todo", "list", home=home))
    assert titles == ["Committed before the disk filled", "After space was freed"]


@needs_root
def test_a_full_disk_with_the_ledger_closed_is_one_line_for_reads_and_writes(
    run_coop: Any, small_disk: Path
) -> None:
    """No -shm can be made, so SQLite cannot even open the ledger; each command says so."""
    home = small_disk / "home"
    assert run_coop("todo", "add", "Committed before the disk filled", home=home).returncode == 0
    ledger = home / "coop.db"
    before = dump(ledger)
    filler = fill(small_disk)
    for argv in (("todo", "add", "x"), ("todo", "list"), ("outbox", "--json"), ("tick",)):
        line = refused(run_coop(*argv, home=home))
        assert line == f"coop: cannot open the ledger {ledger}: the disk is full"
    filler.unlink()
    assert dump(ledger) == before
    assert listed(run_coop("todo", "list", home=home)) == ["Committed before the disk filled"]


# --- a read-only file system (a real read-only bind mount) -------------------------------


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """(source, view): `view` shows the folder `source` read-only."""
    source, view = tmp_path / "source", tmp_path / "view"
    source.mkdir()
    view.mkdir()
    mount("--bind", str(source), str(view))
    try:
        mount("-o", "remount,bind,ro", str(view))
        yield source, view
    finally:
        unmount(view)


@needs_root
def test_a_read_only_file_system_still_lists_and_refuses_each_write_in_one_line(
    run_coop: Any, read_only_view: tuple[Path, Path]
) -> None:
    source, view = read_only_view
    assert run_coop("todo", "add", "Written before", home=source / "home").returncode == 0
    before = files(source / "home")
    home = view / "home"
    assert listed(run_coop("todo", "list", home=home)) == ["Written before"]
    assert run_coop("outbox", "--json", home=home).stdout.strip() == "[]"
    assert run_coop("events", "--json", home=home).returncode == 0
    for argv in (("todo", "add", "x"), ("todo", "take", "1")):
        line = refused(run_coop(*argv, home=home))
        assert (
            line
            == f"coop: cannot write the ledger {home / 'coop.db'}: the file system is read-only"
        )
    assert files(source / "home") == before


@needs_root
def test_a_read_only_mount_reads_the_commits_a_writer_elsewhere_holds_in_the_wal(
    run_coop: Any, read_only_view: tuple[Path, Path]
) -> None:
    """SQLite reads through the -wal and -shm a writer keeps (an immutable file would
    show the ledger as it was at the last checkpoint)."""
    source, view = read_only_view
    assert run_coop("todo", "add", "Checkpointed", home=source / "home").returncode == 0
    writer = sqlite3.connect(source / "home" / "coop.db", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(
            "INSERT INTO engine_todos (title, body, state, created_at) "
            "VALUES ('Only in the wal', '', 'open', 1)"
        )
        titles = listed(run_coop("todo", "list", home=view / "home"))
    finally:
        writer.close()
    assert titles == ["Checkpointed", "Only in the wal"]


@needs_root
def test_a_wal_a_read_only_mount_cannot_replay_is_one_line_not_stale_rows(
    run_coop: Any, read_only_view: tuple[Path, Path], tmp_path: Path
) -> None:
    """A ledger left with commits in its -wal and no -shm (a crash, then a read-only
    remount): SQLite cannot read them without writing, and must not show the older file."""
    live = tmp_path / "live"
    assert run_coop("todo", "add", "Checkpointed", home=live).returncode == 0
    writer = sqlite3.connect(live / "coop.db", isolation_level=None)
    try:
        writer.execute("PRAGMA wal_autocheckpoint = 0")
        writer.execute(
            "INSERT INTO engine_todos (title, body, state, created_at) "
            "VALUES ('Only in the wal', '', 'open', 1)"
        )
        home = read_only_view[0] / "home"
        home.mkdir()
        for name in ("coop.db", "coop.db-wal"):  # as a crash leaves them, without the -shm
            (home / name).write_bytes((live / name).read_bytes())
    finally:
        writer.close()
    line = refused(run_coop("todo", "list", home=read_only_view[1] / "home"))
    assert line.startswith(f"coop: cannot open the ledger {read_only_view[1] / 'home' / 'coop.db'}")
    assert "the file system is read-only" in line


@needs_root
def test_no_ledger_on_a_read_only_file_system_is_one_line(
    run_coop: Any, read_only_view: tuple[Path, Path]
) -> None:
    source, view = read_only_view
    (source / "home").mkdir()
    line = refused(run_coop("todo", "list", home=view / "home"))
    ledger = view / "home" / "coop.db"
    assert line == f"coop: cannot create the ledger {ledger}: the file system is read-only"
    line = refused(run_coop("todo", "list", home=view / "elsewhere"))
    assert line.startswith(f"coop: cannot create the Coop home {view / 'elsewhere'}: ")
    assert list(source.iterdir()) == [source / "home"]
