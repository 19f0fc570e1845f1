"""Engine fixtures: every test gets its own ledger file and a clock it controls."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import peewee as pw
import pytest

from coop_engine.db import open_ledger
from coop_engine.engine import Engine

from .support import FakeClock, Steps


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


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
