"""The app's coordinator: run one here under the ledger's claim (auto), or watch whoever
holds it, and say which in the status line and, in a few words, in the header (running,
with its last pass; stopped, and since when; or none). The claim is asked again every
few seconds, so neither names a coordinator that is gone, and an app in auto takes over
a claim its holder let go. Claims are asked in thread workers: on a database server a
claim is a connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App

from coop_engine import lease
from coop_engine.db import ledger_fault
from coop_engine.engine import Engine
from coop_engine.errors import CoopError
from coop_engine.formats import one_line
from coop_engine.loop.claim import (
    NONE,
    RUNNING,
    STOPPED,
    WHO,
    Claimed,
    Look,
    ago,
    ledger_claim,
)
from coop_engine.loop.office import Office


class Coordination(App[None]):
    """The part of the app that coordinates, or watches the coordinator."""

    home: Path
    office: Office
    engine: Engine | None
    clock: Callable[[], float]
    coordinator_mode: str
    first_adoption_after: float
    _server: Any
    _coordinator: threading.Thread | None

    CLAIM_CHECK_SECONDS: ClassVar[float] = 3.0
    # The claim's state in the app, kept by the claim checks (see `_claim_line`): one
    # guard for all apps of a process is enough, since a check is short.
    _claim_guard: ClassVar[threading.Lock] = threading.Lock()
    _checking_claim = False
    _closing = False
    _attached_to: str | None = None  # the coordinator the status line says it watches
    claim_told = False  # the status line has said who coordinates, at least once
    coordinator_state = NONE  # running, stopped or none, as the header says it
    # The header's words for it, longest first, for narrower terminals (Truth.forms).
    coordinator_words = ("coordinator: asking the ledger", "asking the ledger", "asking")

    def _start_coordinator(self) -> None:
        """Coordinate here (auto) under the ledger's claim, or watch whoever holds it;
        asked again every few seconds, so the status line never names a coordinator
        that is gone, and an app in auto takes over a claim its holder let go."""
        self._check_claim()
        self.set_interval(self.CLAIM_CHECK_SECONDS, self._check_claim)

    @work(thread=True, group="claim", exit_on_error=False)
    def _check_claim(self) -> None:
        if self._checking_claim:
            return  # a database server slow to answer costs one waiting thread, not more
        self._checking_claim = True
        truth: Truth | None = None
        try:
            line = self._claim_line()
            truth = self._truth()
        except Exception as error:
            why = ledger_fault(error) or (str(error) if isinstance(error, CoopError) else None)
            if why is None:
                raise  # a bug: the worker's failure is shown as such
            line = f"cannot tell who coordinates this ledger: {why}"
        finally:
            self._checking_claim = False
        if line is not None:
            self.call_from_thread(self._claim_told, line)
        if truth is not None:
            self.call_from_thread(self._coordinator_told, truth)

    def _truth(self) -> Truth | None:
        """The header's state and words for the coordinator, asked now: this app's own
        coordinator from its claim, any other from the ledger's claim and heartbeat."""
        with self._claim_guard:
            if self._closing:
                return None
            now = time.time()
            if self._coordinator is not None and self._server is not None:
                holder = self._server.claim.holder
                if self._coordinator.is_alive() and holder is not None:
                    leased = lease.read(self._server.engine.db)
                    return truth_of(Look(RUNNING, holder, leased), self.office.name, now)
                return Truth(
                    STOPPED,
                    "coordinator in this app stopped: deliveries are not moving",
                    "STOPPED: not moving",
                    "STOPPED",
                )
            assert self.engine is not None
            return truth_of(ledger_claim(self.engine.db).look(), self.office.name, now)

    def _coordinator_told(self, truth: Truth) -> None:
        self.coordinator_state = truth.state
        self.coordinator_words = truth.forms
        if self._showing():
            self._header()

    def _claim_line(self) -> str | None:
        """What the status line says of the coordinator now (None: nothing new). Runs in
        a worker: a claim on a database server is a connection to it."""
        with self._claim_guard:
            if self._closing:
                return None
            if self._coordinator is not None:
                return self._own_coordinator_line()
            assert self.engine is not None
            look = ledger_claim(self.engine.db).look()
            if self.coordinator_mode == "auto" and look.state != RUNNING:
                taken = self._take_over()
                if taken is not None:
                    return taken
                look = ledger_claim(self.engine.db).look()
            return self._watching_line(look)

    def _take_over(self) -> str | None:
        """Run the coordinator here, under the claim; None when another process took
        the claim first."""
        assert self.engine is not None
        # The coordinator's transitions are Coop's; the keys pressed here are Dad's.
        coordinator = Engine(self.engine.db, clock=self.clock, actor="coop")
        server = self.office.coordinator(
            coordinator, self.home, first_adoption_after=self.first_adoption_after
        )
        try:
            server.take("app")
        except Claimed:
            return None
        self._server = server
        self._coordinator = server.start_thread()
        gone, self._attached_to = self._attached_to, None
        if gone is None:
            return "coordinator running in this app"
        return f"{gone} stopped: coordinator running in this app instead"

    def _own_coordinator_line(self) -> str | None:
        assert self._coordinator is not None
        if self._coordinator.is_alive() or self._server is None:
            return None
        failure = (self._server.failure or "").strip().splitlines() or ["it stopped"]
        return f"the coordinator in this app stopped: {failure[-1]}: deliveries are not moving"

    def _watching_line(self, look: Look) -> str:
        # Remembered, so that taking the claim over can say whom it took it from.
        holder = look.holder if look.state == RUNNING else None
        self._attached_to = holder.named(self.office.name) if holder else None
        return look.watching(self.office.name, time.time())

    def _claim_told(self, line: str) -> None:
        self.claim_told = True
        if self._showing():
            self._status(line)

    if TYPE_CHECKING:  # the rest of the app answers these

        def _showing(self) -> bool: ...

        def _header(self, width: int | None = None) -> None: ...

        def _status(self, text: str) -> None: ...


@dataclass(frozen=True)
class Truth:
    """The coordinator as the header says it: its state, in a few words, and in fewer
    for a narrow terminal, and fewer still."""

    state: str
    words: str
    short: str
    shortest: str

    @property
    def forms(self) -> tuple[str, str, str]:
        return self.words, self.short, self.shortest


def truth_of(look: Look, office: str, now: float) -> Truth:
    """The coordinator in the header's few words: running (who, with the lease's epoch
    and how long since it was renewed when the ledger has one; last pass N s ago),
    stopped (who, N s ago: deliveries are not moving) or none (watch only)."""
    holder = look.holder
    # The record is a file anyone with the home can write: one line, whatever it says.
    named = one_line(holder.named(office)) if holder else "a coordinator"
    if look.state == RUNNING:
        passed = holder.last_pass_at if holder else None
        last = "no pass yet" if passed is None else f"last pass {ago(now, passed)}"
        held = look.lease
        if held is None:
            words = f"coordinator running: {named}, {last}"
            return Truth(RUNNING, words, f"running, {last}", "running")
        # The lease says who may send, and under which epoch: a takeover raises it.
        if holder is None or (holder.pid, holder.host) != (held.pid, held.host):
            where = "" if held.host == office else f" on {held.host}"
            named = one_line(f"{WHO.get(held.by, held.by)} (pid {held.pid}{where})")
        leased = f"epoch {held.epoch}, lease renewed {held.age:.0f} s ago"
        words = f"coordinator running: {named}, {last}, {leased}"
        return Truth(RUNNING, words, f"running, {last}, epoch {held.epoch}", "running")
    if look.state == STOPPED and holder is not None:
        seen = ago(now, look.last_sign_of_life() or holder.started_at)
        return Truth(
            STOPPED,
            f"coordinator stopped: {named}, last seen {seen}: deliveries are not moving",
            f"STOPPED {seen}: not moving",
            f"STOPPED {seen}",
        )
    return Truth(NONE, "no coordinator (watch only)", "watch only", "watch only")
