"""Fixtures of the door tests: a Door over simulated chats, or a Mac of simulated chats
for the CLI tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from doorkit import Door

from hosts.sim.launch import SimFleet


@pytest.fixture
def door(tmp_path: Path) -> Iterator[Door]:
    door = Door(tmp_path)
    try:
        yield door
    finally:
        door.fleet.stop_all()


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[SimFleet]:
    fleet = SimFleet(tmp_path / "claude")
    try:
        yield fleet
    finally:
        fleet.stop_all()
