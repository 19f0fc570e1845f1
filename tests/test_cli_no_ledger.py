"""A command that only reads the ledger, pointed at a home that holds none (a mistyped
`--home`, a Mac where Coop never ran), reads nothing and makes nothing: the empty answer
in the contract's shape and exit code, one warning line naming the home, and no folder
or ledger file left behind. Until this, it made the home and an empty ledger there, and
the empty listing said nothing of why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

READING = {
    "todo list": ("todo", "list"),
    "outbox": ("outbox",),
    "sessions": ("sessions",),
    "events": ("events",),
    "notifications": ("notifications",),
    "obligations": ("obligations",),
    "status": ("status",),
}


def coop(home: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COOP_HOME", "COOP_DATABASE_URL")}
    return subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", "--home", str(home), *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )


@pytest.mark.parametrize("command", READING)
@pytest.mark.parametrize("as_json", [True, False], ids=["json", "table"])
def test_reading_a_home_with_no_ledger_reads_nothing_and_makes_nothing(
    tmp_path: Path, command: str, as_json: bool
) -> None:
    typo = tmp_path / "typo" / "home"
    done = coop(typo, *READING[command], *(["--json"] if as_json else []))
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        f"coop: warning: no ledger in {typo} yet (the first command that writes makes it):"
        " nothing to read"
    ]
    assert not (tmp_path / "typo").exists()
    if command != "status":
        assert done.stdout == ("[]\n" if as_json else "(none)\n")
        return
    # The same answer as a home whose ledger is new: no coordinator, no envelopes.
    fresh = tmp_path / "fresh"
    assert coop(fresh, "todo", "add", "makes the ledger").returncode == 0
    made = coop(fresh, *READING[command], *(["--json"] if as_json else []))
    assert (made.returncode, made.stderr) == (0, "")
    if as_json:
        assert json.loads(done.stdout) == json.loads(made.stdout)
        assert json.loads(done.stdout)["coordinator"]["state"] == "none"
    else:
        assert done.stdout == made.stdout


def test_a_home_with_a_ledger_is_read_without_a_warning(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert coop(home, "todo", "add", "one todo").returncode == 0
    done = coop(home, "todo", "list", "--json")
    assert (done.returncode, done.stderr) == (0, "")
    assert [row["title"] for row in json.loads(done.stdout)] == ["one todo"]
