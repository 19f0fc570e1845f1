"""cli_list's floor (tests/bench/listing_floor.py) reads what `coop chats` reads: the same
chats, each live, with the name, status and mode Coop finds, in the middle of a long
turn as well. A floor that read less would make any bound look out of reach."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.bench.common import LiveRegistry

REPO = Path(__file__).resolve().parent.parent


def _listed(argv: list[str], registry: LiveRegistry) -> list[dict[str, object]]:
    env = {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(registry.config),
        "COOP_HOME": str(registry.root / "home"),
    }
    done = subprocess.run(argv, env=env, cwd=REPO, capture_output=True, check=True)
    return list(json.loads(done.stdout))


@pytest.mark.parametrize("turn_bytes", [0, 300 << 10])
def test_the_floor_reads_what_the_listing_reads(turn_bytes: int) -> None:
    registry = LiveRegistry(3, turn_bytes=turn_bytes)
    try:
        floor = _listed([sys.executable, "-m", "tests.bench.listing_floor"], registry)
        coop = _listed([sys.executable, "-m", "coop_engine.cli", "chats", "--json"], registry)
    finally:
        registry.close()
    fields = ("session_id", "pid", "name", "status")
    assert sorted(tuple(row[f] for f in fields) for row in floor) == sorted(
        tuple(row[f] for f in fields) for row in coop
    )
    assert all(row["live"] for row in floor)
    assert all(row["socket"] for row in floor)
    assert all(row["argv"] == 2 for row in floor)  # `sleep 3600`
    assert [row["mode"] for row in floor] == ["auto"] * 3
    # Coop found the same mode (auto accepts); a mode it could not know would be unknown.
    assert [row["inbound"] for row in coop] == ["accept"] * 3
