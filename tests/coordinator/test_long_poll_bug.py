"""A bug in a Mac's long-poll stops the coordinator, as one in its worker does: never a
Mac left silently unwatched while `coop serve` looks alive."""

from __future__ import annotations

from typing import Any

from officekit import Office
from waiting import wait_until

from coop_engine.loop.serve import Server
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost


class BrokenWatch(LocalHost):
    """The laptop, whose long-poll meets a bug of Coop's own (not a HostError)."""

    def long_poller(self) -> LocalHost:
        return self

    def watch(self, paths: list[str], since: str | None, timeout: float) -> dict[str, Any]:
        raise RuntimeError("a bug in the long-poll")


def test_a_bug_in_the_long_poll_stops_the_coordinator_with_it(office: Office) -> None:
    laptop = BrokenWatch("laptop", config_dir=office.macs["laptop"].config_dir)
    fleet = Fleet("office", {"office": office.hosts["office"], "laptop": laptop})
    server = Server(office.engine, fleet, office.home, office.log.append, pass_interval=3600.0)
    thread = server.start_thread()
    try:
        wait_until(lambda: not thread.is_alive(), "the coordinator stopping on the bug")
    finally:
        server.stop()
        thread.join(15)
    assert isinstance(server.crash, RuntimeError)
    assert str(server.crash) == "a bug in the long-poll"
