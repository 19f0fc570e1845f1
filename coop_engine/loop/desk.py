"""What a running coordinator answers the CLI's fleet commands over the hub (loop/hub.py):
`coop chats`, `coop hosts` and `coop chat show`, asked of the Macs through the
coordinator's own warm connections, by the one fleet survey (loop/survey.py).

A Mac the coordinator knows to be unreachable is not asked again: its row says why at
once, so one hung Mac never makes a listing wait. A failure the command would have
raised itself (an unknown Mac, the one named Mac unreachable) is raised here and comes
back as the reply's error, in the same words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coop_engine.loop import survey
from hosts.fleet import Fleet
from hosts.mac.host import Host, HostError


class Desk:
    """`unreachable`: the running coordinator's Macs that did not answer, and why (the
    CLI asking directly knows of none)."""

    def __init__(self, fleet: Fleet, unreachable: Mapping[str, str] | None = None) -> None:
        self.fleet = fleet
        self.unreachable = unreachable if unreachable is not None else {}

    def answer(self, op: str, args: dict[str, Any]) -> Any:
        if op == "chats":
            return self.chats(args.get("host"))
        if op == "hosts":
            return self.hosts()
        if op == "chat_show":
            return self.chat_show(str(args["session_id"]), args.get("host"), int(args["lines"]))
        raise ValueError(f"unknown question {op!r}")

    def _hosts(self, name: str | None) -> list[Host]:
        return [self.fleet.host(name)] if name else list(self.fleet.hosts.values())

    def _known_down(self, host: Host) -> HostError | None:
        reason = self.unreachable.get(host.name)
        return None if reason is None else HostError(host.name, reason)

    def chats(self, name: str | None) -> dict[str, Any]:
        """`coop chats` rows, and the Macs that could not be asked (`{host, cause}`)."""
        hosts = self._hosts(name)
        down = [error for error in map(self._known_down, hosts) if error is not None]
        asked = [host for host in hosts if self._known_down(host) is None]
        rows, failed = survey.live_chats(asked) if asked else ([], [])
        failed = down + failed
        if name and failed:
            raise failed[0]
        return {"rows": rows, "failed": [{"host": e.host, "cause": e.cause} for e in failed]}

    def hosts(self) -> list[dict[str, Any]]:
        """`coop hosts` rows, in the fleet's order."""
        hosts = self._hosts(None)

        def row(host: Host) -> dict[str, Any]:
            down = self._known_down(host)
            if down is None:
                return survey.health(host)
            return {**survey.health_row(host.name), "reason": down.cause}

        return survey.ask_each(hosts, row)

    def chat_show(self, session_id: str, name: str | None, lines: int) -> dict[str, Any]:
        """`coop chat show`'s view, or `{"missing": why}`; `warnings` for Macs not asked."""
        warnings: list[str] = []
        hosts = []
        for host in self._hosts(name):
            down = self._known_down(host)
            if down is not None and name:
                raise down
            if down is not None:
                warnings.append(str(down))
            else:
                hosts.append(host)
        found = survey.find_chat(hosts, session_id, named=bool(name), warn=warnings.append)
        if isinstance(found, str):
            return {"missing": found, "warnings": warnings}
        host, chat = found
        tail = survey.read_tail(host, session_id, lines)
        view = {"host": host.name, "session_id": session_id, "chat": chat, "transcript": tail}
        return {"view": view, "warnings": warnings}
