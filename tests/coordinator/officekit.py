"""Several simulated Macs on this machine, each its own Claude config dir, and an engine
whose clock the test moves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from clock import Clock

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.loop.coordinator import Coordinator
from hosts.mac.local import LocalHost
from hosts.sim.launch import CODEX_EXECUTABLE, ROOT, SimFleet, SimHolder, codex_holder

MACS = ("office", "laptop", "studio")


class Office:
    def __init__(self, tmp: Path) -> None:
        self.home = tmp / "home"
        self.clock = Clock()
        self.engine = Engine(open_ledger(self.home), clock=self.clock)
        self.macs = {name: SimFleet(tmp / name) for name in MACS}
        for fleet in self.macs.values():
            fleet.config_dir.mkdir(parents=True)
        self.codex_homes = {name: tmp / f"{name}-codex" for name in MACS}
        self.hosts = {
            name: LocalHost(
                name,
                config_dir=fleet.config_dir,
                codex_home=self.codex_homes[name],
                codex=str(CODEX_EXECUTABLE),
            )
            for name, fleet in self.macs.items()
        }
        self.holders: list[SimHolder] = []
        self.log: list[str] = []
        self.coordinator = Coordinator(self.engine, self.hosts, self.log.append)
        self.adoption = AdoptionPass(self.engine, self.hosts, "office", self.log.append)

    def codex_thread(self, mac: str, *args: str) -> dict[str, Any]:
        """A saved Codex thread on that Mac, written by the Codex simulator."""
        command = [
            sys.executable,
            "-m",
            "hosts.sim",
            "codex",
            "--codex-home",
            str(self.codex_homes[mac]),
            *args,
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT)
        thread: dict[str, Any] = json.loads(result.stdout)
        return thread

    def holder(self, mac: str, thread_id: str, *args: str) -> SimHolder:
        """A process holding the thread open on that Mac (the Desktop app, say): it
        polls Codex's queue every 0.2 s unless `args` say otherwise."""
        holder = codex_holder(self.codex_homes[mac], thread_id, "--poll", "0.2", *args)
        self.holders.append(holder)
        return holder

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
        for holder in self.holders:
            holder.kill()
        for host in self.hosts.values():
            host.close()  # and the `codex app-server` each may have started
        for fleet in self.macs.values():
            fleet.stop_all()
