"""A Coop engine and coordinator over simulated chats on this machine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from clock import Clock
from waiting import HANG, wait_until

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox
from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.sim.launch import SimChat, SimFleet


class Door:
    def __init__(self, tmp: Path) -> None:
        self.clock = Clock()
        self.engine = Engine(open_ledger(tmp / "home"), clock=self.clock)
        self.fleet = SimFleet(tmp / "claude")
        self.managed_dir = tmp / "managed"
        self.host: Host = LocalHost(
            "office", config_dir=self.fleet.config_dir, managed_dir=self.managed_dir
        )
        self.log: list[str] = []
        self.coordinator = Coordinator(self.engine, {"office": self.host}, self.log.append)

    def use_host(self, host: Host) -> None:
        self.host = host
        self.coordinator = Coordinator(self.engine, {"office": host}, self.log.append)

    def chat(self, *args: str) -> SimChat:
        return self.fleet.start(*args)

    def invite(self, chat: SimChat, title: str = "Fix the flaky importer test") -> str:
        todo = self.engine.add_todo(title)["id"]
        return str(self.engine.invite(todo, chat.ref, "office")["outbox"])

    def tick(self) -> None:
        self.coordinator.tick()

    def row(self, outbox_id: str) -> dict[str, Any]:
        return queries.envelope(Outbox.get_by_id(outbox_id))

    def work_for(self, invitation_id: str) -> str | None:
        invitation = Outbox.get_by_id(invitation_id)
        work = (
            Outbox.select()
            .where((Outbox.dispatch == invitation.dispatch) & (Outbox.kind == "work"))
            .first()
        )
        return None if work is None else str(work.id)

    def tick_until(self, check: Callable[[], bool], timeout: float = HANG) -> None:
        """Run passes (real time passing for the chats) until `check` holds."""

        def passed() -> bool:
            self.tick()
            return check()

        wait_until(passed, "the passes' outcome", timeout, 0.1, detail=lambda: self.log[-10:])
