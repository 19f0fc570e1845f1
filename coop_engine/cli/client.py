"""The CLI beside a running coordinator is its client (DESIGN 13): while `coop serve`,
the app's coordinator or `coop demo` holds a home, whatever a command asks of the fleet
goes through that coordinator's hub (loop/hub.py, answered by loop/desk.py), so the CLI
asks the same Macs, through the same connections, as the app does. The CLI's own fleet
(fleet.toml) is only for a home nobody serves.

A listing asked and not answered in time is asked again over this process's own
connections, as before; a command's question sent and not answered is never asked again
here: the coordinator may have acted on it (hub.Unanswered, exit 1).
"""

from __future__ import annotations

import os

from coop_engine.errors import BadInput, CoopError
from coop_engine.home import coop_home, hub_path
from hosts.fleet import load_fleet

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from coop_engine.loop.desk import Desk
    from hosts.fleet import Fleet

    T = TypeVar("T")

SERVE, DIRECT = "serve", "direct"  # how an answer came: the `via` of fleet listings


class HubRefused(CoopError):
    """The coordinator answered with the command's own refusal: said as the command
    would, exit 1."""


class HubFailed(CoopError):
    """The coordinator failed to answer (a bug on its side): exit 1, naming it."""


class Side:
    """Who answers one command's questions of the fleet, decided by its first question
    (or by `choose`) and kept for the rest: the running coordinator (SERVE), or a Desk
    over this process's own fleet (DIRECT), loaded once. `command`: a question sent and
    not answered is Unanswered, and a coordinator gone between two questions is a
    refusal, never answered by another fleet."""

    def __init__(self, command: bool) -> None:
        self.command = command
        self.via: str | None = None
        self.fleet: Fleet | None = None

    def choose(self) -> Side:
        """Decide now (the coordinator, when one answers; else this process's fleet,
        whose fleet.toml is then read before anything else is done)."""
        if self.via is None and self._asked("hello", {}) is None:
            self._direct()
        return self

    def ask(self, op: str, args: dict[str, Any], direct: Callable[[Desk], T]) -> T:
        """The answer to `op`: the coordinator's, or `direct`'s given the own Desk. The
        coordinator's refusal is raised as the command's own: BadInput (exit 2) for
        input no command could take, else exit 1."""
        if self.via != DIRECT:
            answered = self._asked(op, args)
            if answered is not None:
                return answered[0]
            if self.via == SERVE and self.command:
                raise HubRefused(
                    "the running coordinator stopped while this command asked it; nothing"
                    " more was done here: see coop status and try again"
                )
            self._direct()
        from coop_engine.loop.desk import Desk

        assert self.fleet is not None
        return direct(Desk(self.fleet))

    def _asked(self, op: str, args: dict[str, Any]) -> tuple[Any] | None:
        answered = coordinator_answer(op, args, command=self.command)
        if answered is not None:
            self.via = SERVE
        return answered

    def _direct(self) -> None:
        self.via = DIRECT
        if self.fleet is None:
            self.fleet = load_fleet(coop_home())

    def close(self) -> None:
        if self.fleet is not None:
            self.fleet.close()

    def __enter__(self) -> Side:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


def ask(
    op: str, args: dict[str, Any], direct: Callable[[Desk], T], *, command: bool = False
) -> tuple[T, str]:
    """One question of the fleet and how it came (SERVE or DIRECT), as `Side.ask`."""
    with Side(command) as side:
        answer = side.ask(op, args, direct)
        assert side.via is not None
        return answer, side.via


def coordinator_answer(
    op: str, args: dict[str, Any], *, command: bool = False
) -> tuple[Any] | None:
    """The running coordinator's answer to `op`, in a 1-tuple (an answer may be None),
    or None when no coordinator listens on this home; its refusal raised as
    `Side.ask` says."""
    home = coop_home()
    if not os.path.lexists(hub_path(home)):
        return None  # nobody serves this home: not even the hub's module is loaded
    from coop_engine.loop import hub

    reply = hub.command(home, op, args) if command else hub.ask(home, op, args)
    if reply is None:
        return None
    if reply["ok"]:
        return (reply["result"],)
    error = str(reply.get("error") or "the coordinator gave no reason")
    kind = reply.get("kind")
    if kind == "bad-input":
        raise BadInput(error)
    if kind == "failed":
        raise HubFailed(f"the running coordinator failed to answer: {error}")
    raise HubRefused(error)
