"""Fixtures of the door tests: a Door over simulated chats."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from doorkit import Door


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    door = Door(tmp_path)
    try:
        yield door
    finally:
        door.fleet.stop_all()
