"""Real `coop serve` processes on one ledger (SQLite in a Coop home, or a PostgreSQL
database), and `coop status` asked about them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from waiting import wait_until

COOP = str(Path(sys.executable).with_name("coop"))
REPO = Path(__file__).resolve().parents[2]
DEADLINE = 30.0


def code_under_test() -> dict[str, str]:
    """The test's own import path, when it has one: `coop` runs the code under test."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


def until(
    check: Callable[[], object],
    what: str,
    timeout: float = DEADLINE,
    detail: Callable[[], object] | None = None,
) -> None:
    """Wait until `check()` is true; fail naming `what` after a generous deadline."""
    wait_until(check, what, timeout, detail=detail)


@dataclass
class Ledger:
    """A Coop home and, on PostgreSQL, the database the ledger is in."""

    home: Path
    url: str | None = None

    def env(self) -> dict[str, str]:
        """What every `coop` of the test sees: this ledger, and no real chats."""
        env = {
            "COOP_HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.home.parent / "claude"),
            "PATH": os.environ["PATH"],
        }
        if self.url:
            env["COOP_DATABASE_URL"] = self.url
        return env | code_under_test()

    def coop(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [COOP, *args], capture_output=True, text=True, env=self.env(), timeout=DEADLINE
        )

    def status(self) -> dict[str, Any]:
        """`coop status --json`, which must exit 0 whatever the coordinator's state."""
        done = self.coop("status", "--json")
        assert done.returncode == 0, done.stderr
        found: dict[str, Any] = json.loads(done.stdout)
        return found

    def coordinator(self) -> dict[str, Any]:
        found: dict[str, Any] = self.status()["coordinator"]
        return found


class Serve:
    """One `coop serve` (or a Python program that ends in one), its output in a file."""

    def __init__(self, ledger: Ledger, log: Path, argv: Sequence[str] | None = None) -> None:
        self.log = log
        command = argv or [COOP, "serve", "--interval", "0.2"]
        with log.open("ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, env=ledger.env(), cwd=REPO
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return self.log.read_text()

    def wait_for(self, text: str) -> None:
        """Wait until serve has said `text`; fail at once if it exits first."""

        def said() -> bool:
            if text in self.output():
                return True
            assert self.process.poll() is None, f"serve exited: {self.output()}"
            return False

        wait_until(said, f"serve saying {text!r}", DEADLINE, detail=self.output)

    def started(self) -> Serve:
        """Once serve says it is serving, it holds the ledger's claim."""
        self.wait_for("serving")
        return self

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(DEADLINE)

    def stop(self) -> int:
        """SIGTERM (when still running) and its exit status."""
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(DEADLINE)
