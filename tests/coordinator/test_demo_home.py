"""`coop demo` on the home a person names (`--home`, before or after `demo`, or
`$COOP_HOME`), said first and last, so that the CLI can be tried on it; a home that
holds a ledger already is refused in one line, and nothing is staged into it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from servekit import code_under_test

COOP = str(Path(sys.executable).with_name("coop"))


def coop(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {"PATH": os.environ["PATH"], "TMPDIR": os.environ.get("TMPDIR", "/tmp")}
    return subprocess.run(
        [COOP, *args],
        capture_output=True,
        text=True,
        env={**base, **code_under_test(), **(env or {})},
        timeout=180,
    )


def test_demo_uses_and_says_the_home_named_after_it_and_keeps_its_ledger(tmp_path: Path) -> None:
    home = tmp_path / "demo home"  # a space: the command it suggests quotes it
    done = coop("demo", "--no-tui", "--home", str(home))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"coop demo: its home is {home} (kept after the demo); try the CLI on it:"
        f" coop --home '{home}' outbox"
    )
    assert lines[-1] == f"coop demo: its ledger stays in {home}; its chats have stopped"
    outbox = coop("--home", str(home), "outbox", "--json")
    assert outbox.returncode == 0, outbox.stderr
    states = {row["state"] for row in json.loads(outbox.stdout)}
    assert "expired" in states and len(json.loads(outbox.stdout)) >= 8


def test_demo_on_a_home_holding_a_ledger_is_refused_in_one_line_and_stages_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "mine"
    added = coop("--home", str(home), "todo", "add", "My own todo")
    assert added.returncode == 0, added.stderr
    ledger = (home / "coop.db").read_bytes()
    done = coop("demo", "--no-tui", env={"COOP_HOME": str(home)})  # $COOP_HOME is honoured
    assert done.returncode == 1
    assert (done.stdout, done.stderr) == (
        "",
        f"coop: the Coop home {home} holds a ledger (coop.db) already: the demo stages its"
        " own; name a new or empty folder with --home\n",
    )
    assert (home / "coop.db").read_bytes() == ledger
    todos = json.loads(coop("--home", str(home), "todo", "list", "--json").stdout)
    assert [todo["title"] for todo in todos] == ["My own todo"]
