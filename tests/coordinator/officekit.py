"""Several simulated Macs on this machine, each its own Claude config dir, and an engine
whose clock the test moves."""

from __future__ import annotations

import os
import time
from pathlib import Path

from simchat import SimFleet

from coop_engine.adoption import AdoptionPass
from coop_engine.coordinator import Coordinator
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from hosts.local import LocalHost

MACS = ("office", "laptop", "studio")


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class Office:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.clock = Clock()
        self.engine = Engine(open_ledger(self.home), clock=self.clock)
        self.macs = {name: SimFleet(tmp / name) for name in MACS}
        for fleet in self.macs.values():
            fleet.config_dir.mkdir(parents=True)
        self.hosts = {
            name: LocalHost(name, config_dir=fleet.config_dir) for name, fleet in self.macs.items()
        }
        self.log: list[str] = []
        self.coordinator = Coordinator(self.engine, self.hosts, self.log.append)
        self.adoption = AdoptionPass(self.engine, self.hosts, "office", self.log.append)

    def env(self, mac: str = "office", **extra: str) -> dict[str, str]:
        """The environment a `coop` command on that Mac sees."""
        env = {
            "COOP_HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.macs[mac].config_dir),
            "PATH": os.environ["PATH"],
        }
        env.update(extra)
        return env

    def stop(self) -> None:
        for fleet in self.macs.values():
            fleet.stop_all()
