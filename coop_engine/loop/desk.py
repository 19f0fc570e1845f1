"""What a running coordinator answers the CLI over the hub (loop/hub.py): whatever a
command must ask of the fleet, asked of the Macs through the coordinator's own warm
connections (the one fleet survey, loop/survey.py), so that every face of Coop asks the
same fleet. The CLI asks the same questions of a Desk over its own fleet when no
coordinator serves the home (coop_engine/cli/client.py).

Questions: `hello` (the fleet's Macs: a coordinator answers), `chats`, `hosts` and
`chat_show` (the listings), `live` and `locate` (where an invitation's chat is), `find`
(where a chief is), `look_again` (Send again's fresh look at the receiver). Commands,
answered only by a running coordinator: `withdraw` (through the Codex door, with the
ledger's steps around it, as the app's Withdraw), `tick` (a pass of the coordinator's
own on every Mac) and `adopt` (its adoption pass, now).

A Mac the coordinator knows to be unreachable is not asked again: its row says why at
once, so one hung Mac never makes a listing wait. A failure the command would have
raised itself (an unknown Mac, the one named Mac unreachable, a refusal by a rule) is
raised here and comes back as the reply's error, in the same words.
"""

from __future__ import annotations

from coop_engine.errors import Conflict, CoopError
from coop_engine.loop import survey
from hosts.fleet import Fleet
from hosts.mac.host import Host, HostError

TYPE_CHECKING = False  # typing costs milliseconds of every `coop hosts` and `coop chats`
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any, Protocol

    # The ledger is loaded only by a command: `coop chats` never opens it.
    from coop_engine.engine import Engine

    class Running(Protocol):
        """The running coordinator, as the commands answered here need it (loop/serve.py)."""

        engine: Engine

        def pass_now(self) -> dict[str, Any]:
            """A pass on every Mac, begun after the call and waited for."""

        def adopt_now(self) -> list[dict[str, Any]]:
            """The adoption pass, now."""


TICK_AT_REFUSED = (
    "a coordinator runs on this home and passes as of now: tick --at is for a home no"
    " coordinator serves"
)


class Desk:
    """`unreachable`: the running coordinator's Macs that did not answer, and why (the
    CLI asking directly knows of none). `running`: the coordinator whose commands are
    answered here (its ledger and clock, its passes); None for the CLI's own desk, which
    answers questions only."""

    def __init__(
        self,
        fleet: Fleet,
        unreachable: Mapping[str, str] | None = None,
        running: Running | None = None,
    ) -> None:
        self.fleet = fleet
        self.unreachable = unreachable if unreachable is not None else {}
        self.running = running

    def answer(self, op: str, args: dict[str, Any]) -> Any:
        """The answer to one hub request; what it raises is the reply's error."""
        if op == "hello":
            return {"office": self.fleet.office, "macs": list(self.fleet.hosts)}
        if op == "chats":
            return self.chats(args.get("host"))
        if op == "hosts":
            return self.hosts()
        if op == "chat_show":
            return self.chat_show(str(args["session_id"]), args.get("host"), int(args["lines"]))
        if op == "live":
            return self.live(args.get("host"))
        if op == "locate":
            ref = str(args["ref"])
            return self.locate(str(args["vendor"]), str(args["native_id"]), ref, args.get("host"))
        if op == "find":
            return self.find(str(args["vendor"]), str(args["native_id"]))
        if op == "look_again":
            return self.look_again(dict(args["envelope"]))
        if op == "withdraw":
            return self.withdraw(str(args["outbox"]), str(args["by"]))
        if op == "tick":
            return self.tick(args.get("at"))
        if op == "adopt":
            return self._running().adopt_now()
        raise ValueError(f"unknown question {op!r}")

    def _hosts(self, name: str | None) -> list[Host]:
        return [self.fleet.host(name)] if name else list(self.fleet.hosts.values())

    def _known_down(self, host: Host) -> HostError | None:
        reason = self.unreachable.get(host.name)
        return None if reason is None else HostError(host.name, reason)

    # --- the listings -----------------------------------------------------------------

    def chats(self, name: str | None) -> dict[str, Any]:
        """`coop chats` rows, the Macs that could not be asked (`{host, cause}`) and the
        Macs named (`asked`); the one Mac named failing is raised."""
        found = self.live(name)
        if name and found["failed"]:
            failed = found["failed"][0]
            raise HostError(failed["host"], failed["cause"])
        return found

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

    # --- where a chat is --------------------------------------------------------------

    def live(self, name: str | None) -> dict[str, Any]:
        """The live chats of the Mac named (an unknown name is refused) or of every Mac:
        `{rows, failed: [{host, cause}], asked: [every Mac named]}`; a Mac that could not
        be asked is in `failed`, never raised."""
        hosts = self._hosts(name)
        down = [error for error in map(self._known_down, hosts) if error is not None]
        asked = [host for host in hosts if self._known_down(host) is None]
        rows, failed = survey.live_chats(asked) if asked else ([], [])
        return {
            "rows": rows,
            "failed": [{"host": e.host, "cause": e.cause} for e in down + failed],
            "asked": [host.name for host in hosts],
        }

    def locate(self, vendor: str, native_id: str, ref: str, name: str | None) -> dict[str, Any]:
        """Where an invitation's chat is: `{host, entry, warning}` (survey.locate_live, or
        locate_thread for a Codex thread), on the Mac named or on any."""
        hosts = self._hosts(name)
        where = survey.locate_live if vendor == "claude" else survey.locate_thread
        return where(hosts, native_id, ref)

    def find(self, vendor: str, native_id: str) -> dict[str, Any]:
        """Which Macs have this chat now: survey.find_session over every Mac."""
        return survey.find_session(self._hosts(None), vendor, native_id)

    def look_again(self, envelope: dict[str, Any]) -> dict[str, Any]:
        """Send again's look at the receiver, now, from here (loop/resend.py)."""
        from coop_engine.loop.resend import look_again

        return look_again(self.fleet.hosts, envelope)

    # --- the commands only a coordinator answers --------------------------------------

    def _running(self) -> Running:
        if self.running is None:
            raise CoopError("this desk answers questions only: no coordinator runs here")
        return self.running

    def withdraw(self, outbox_id: str, by: str) -> dict[str, Any]:
        """Withdraw as the app does (loop/withdrawal.py), decided by `by`, on the
        coordinator's ledger and clock."""
        from coop_engine.engine import Engine
        from coop_engine.loop.withdrawal import withdraw_envelope

        ledger = self._running().engine
        engine = Engine(ledger.db, clock=ledger.clock, actor=by)
        return withdraw_envelope(engine, self.fleet, outbox_id, by)

    def tick(self, at: float | None) -> dict[str, Any]:
        """A pass of the coordinator's own on every Mac, begun after this request and
        waited for: `{macs: [{host, passed, reason}]}`. A pass as of another time is
        refused: the coordinator's clock is now."""
        if at is not None:
            raise Conflict(TICK_AT_REFUSED)
        return self._running().pass_now()
