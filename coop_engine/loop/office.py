"""The fleet as the app holds it: its Macs by name, and what the app may ask of them.

The app never touches a host: it keeps an `Office`, and every question it puts to a Mac
(the survey, a chat's inspection, an adoption, a withdrawal, the in-process coordinator)
goes through here and comes back as JSON-able values, a Mac that cannot be asked
included.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from coop_engine.engine import Engine
from coop_engine.loop import resend, survey, withdrawal
from coop_engine.loop.adoption import AdoptionPass
from coop_engine.loop.serve import Server
from coop_engine.models import Session
from hosts.fleet import Fleet, load_fleet

Clock = Callable[[], float]


class Office:
    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    @classmethod
    def of(cls, home: Path) -> Office:
        """The fleet `$COOP_HOME/fleet.toml` describes (FleetError when it cannot)."""
        return cls(load_fleet(home))

    @property
    def name(self) -> str:
        """This machine's name in the fleet."""
        return self.fleet.office

    @property
    def names(self) -> list[str]:
        """Every Mac, in the fleet's order."""
        return list(self.fleet.hosts)

    def survey(
        self,
        names: Iterable[str],
        report: Callable[[dict[str, Any]], None],
        clock: Clock = time.time,
        timer: Clock = time.perf_counter,
    ) -> None:
        """Survey these Macs concurrently; `report` gets each Mac's row as it comes."""
        hosts = [self.fleet.hosts[name] for name in names if name in self.fleet.hosts]
        if hosts:
            survey.survey(hosts, report, clock, timer)

    def inspect(self, name: str, session_id: str, tail_bytes: int) -> dict[str, Any]:
        """A chat's live registry entry and transcript tail, or `{"error": why}`."""
        host = self.fleet.hosts.get(name)
        if host is None:
            return {"error": f"{name} is not in the fleet"}
        return survey.inspect_chat(host, session_id, tail_bytes)

    def look_again(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Send again's second look at the receiver (loop/resend.py)."""
        return resend.look_again(self.fleet.hosts, envelope)

    def adopt(self, engine: Engine, session_id: int) -> dict[str, Any]:
        """Adoption's search and decision for one CLI taker, now."""
        adoption = AdoptionPass(engine, self.fleet.hosts, self.fleet.office, log=lambda line: None)
        return adoption.adopt_one(Session.get_by_id(session_id))

    def withdraw(self, engine: Engine, outbox_id: str, by: str) -> dict[str, Any]:
        """Withdraw as `coop withdraw` does (loop/withdrawal.py): a CoopError refuses it,
        a Mac that cannot be asked included."""
        return withdrawal.withdraw_envelope(engine, self.fleet, outbox_id, by)

    def coordinator(self, engine: Engine, home: Path, **options: Any) -> Server:
        """A coordinator over this fleet, for the app to run in a thread."""
        return Server(engine, self.fleet, home, log=lambda line: None, **options)

    def close(self) -> None:
        self.fleet.close()
