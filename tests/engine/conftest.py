"""Engine fixtures: every test gets its own ledger and a clock it controls.

Every test that uses a Coop home runs twice: on SQLite (the default ledger, a file in
the home) and on a real PostgreSQL server (`COOP_DATABASE_URL`), started once per run in
a temporary directory. Tests of the SQLite file itself are marked `sqlite_only`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import peewee as pw
import pytest
from pgserver import PgServer

from coop_engine.db import open_ledger
from coop_engine.engine import Engine

from .support import START, FakeClock, Steps

BACKENDS = ("sqlite", "postgresql")
_OUTSIDE_STATE = ("COOP_HOME", "COOP_DATABASE_URL", "PIPPA_COOP_SESSION", "PIPPA_COOP_HOST")


@pytest.fixture(params=BACKENDS)
def database_url(request: pytest.FixtureRequest) -> str | None:
    """None for SQLite in the Coop home; otherwise the url of an emptied PostgreSQL
    database."""
    if request.param == "sqlite":
        return None
    if request.node.get_closest_marker("sqlite_only"):
        pytest.skip("a property of the SQLite ledger file")
    server: PgServer = request.getfixturevalue("postgresql_server")
    return server.reset()


@pytest.fixture
def coop_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database_url: str | None) -> Path:
    """A fresh Coop home; on PostgreSQL, COOP_DATABASE_URL names the emptied database,
    so the engine and every `coop` the test runs use it."""
    for name in _OUTSIDE_STATE:
        monkeypatch.delenv(name, raising=False)
    if database_url is not None:
        monkeypatch.setenv("COOP_DATABASE_URL", database_url)
    return tmp_path / "coop-home"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def ledger(coop_home: Path) -> Iterator[pw.Database]:
    db = open_ledger(coop_home)
    yield db
    db.close()


@pytest.fixture
def engine(ledger: pw.Database, clock: FakeClock) -> Engine:
    return Engine(ledger, clock=clock)


@pytest.fixture
def steps(engine: Engine) -> Steps:
    return Steps(engine)
