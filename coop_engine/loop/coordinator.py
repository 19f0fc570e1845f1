"""One coordinator pass: for each Mac, one survey, then its pending envelopes sent, its
in-flight envelopes observed and judged from the survey's answer, its chats' statuses
refreshed; then the ledger's chores (stale envelopes, obligations). `coop tick` runs one
pass over every Mac; `coop serve` runs each Mac's part on its own (loop/serve.py).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import partial
from typing import Any

from peewee import JOIN

from coop_engine import backoff, identity, pacing
from coop_engine.engine import Engine
from coop_engine.errors import CoopError, Fenced
from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.loop.doors.codex import CodexDoor
from coop_engine.loop.surveyed import Surveyed
from coop_engine.models import Dispatch, Obligation, Outbox, Session
from coop_engine.policy import verdict_due
from hosts.mac.errors import HostsError
from hosts.mac.host import Host, HostError

Log = Callable[[str], None]
Door = ClaudeDoor | CodexDoor
DOORS: dict[str, type[Door]] = {"claude": ClaudeDoor, "codex": CodexDoor}  # by vendor


def _print(line: str) -> None:
    print(line, flush=True)


def _never() -> bool:
    return False


class Coordinator:
    def __init__(self, engine: Engine, hosts: Mapping[str, Host], log: Log = _print) -> None:
        self.engine = engine
        self.hosts = hosts
        self.log = log
        self.unreachable: dict[str, str] = {}  # Mac -> why its last request failed
        self.views = {name: Surveyed(host) for name, host in hosts.items()}
        self._reconciled: set[str] = set()  # Macs whose uncertain envelopes were looked for
        self._refusals: dict[tuple[str, str], str] = {}  # (subject, step) -> last said

    def reachable(self, name: str) -> bool:
        """Whether the Mac answered the last request this coordinator made of it."""
        return name not in self.unreachable

    def _refused(self, subject: str, step: str, refusal: Exception) -> None:
        """A refusal costs that item, not the pass; said once per unchanged cause."""
        said = str(refusal)
        if self._refusals.get((subject, step)) != said:
            self._refusals[(subject, step)] = said
            self.log(f"{subject} {step} refused: {said}")

    def _managed(self, query):  # type: ignore[no-untyped-def]
        """The rows, read in full before any is acted on: a SQLite read left open while
        a command begins its write fails at once (SQLITE_BUSY_SNAPSHOT, no busy wait)
        whenever another process committed in between."""
        return list(
            query.join(Session)
            .where((Session.mode == "managed") & (Outbox.generation == Session.generation))
            .order_by(Outbox.created_at, Outbox.id)
        )

    def tick(self, only: Collection[str] | None = None, stop: Callable[[], bool] = _never) -> None:
        """One pass, as of the engine's clock, over the Macs of `only` (all when None),
        one Mac after another; the ledger's own chores (stale envelopes, envelopes no door
        takes, obligations) once. `stop` is asked between envelopes: a stopping
        coordinator finishes the command at hand and leaves the rest to the next run."""
        now = self.engine.clock()
        self.cancel_stale()
        for name in self.hosts:
            if stop():
                return
            if only is None or name in only:
                self.pass_mac(name, now, stop)
        self.chores(now)

    def chores(self, now: float) -> None:
        """What a pass does on the ledger alone, whichever Macs it asked."""
        for row in self._managed(Outbox.select(Outbox, Session).where(Outbox.state == "pending")):
            if row.session.host not in self.hosts or row.session.vendor not in DOORS:
                self._step(row, "deliver", self._undeliverable)
        self.sweep_obligations(now)

    def pass_mac(self, name: str, now: float, stop: Callable[[], bool] = _never) -> bool:
        """One Mac's part of a pass: its survey (one request), then its envelopes'
        steps from the survey's answer, then its chats' statuses. False, with the reason
        in `unreachable`, when the Mac could not be asked: its envelopes wait."""
        view = self.views[name]
        in_flight = self._observable(name)
        try:
            view.take(
                [DOORS[row.session.vendor].reading(row) for row in in_flight],
                ahead=self._first_send(name, now),
            )
        except HostError as error:
            self.unreachable[name] = error.cause
            return False
        self.unreachable.pop(name, None)
        doors = {vendor: door(self.engine, view, self.log) for vendor, door in DOORS.items()}
        if name not in self._reconciled:
            self.reconcile(doors, in_flight)
            self._reconciled.add(name)
        # Who each chat is now, before anything is sent to it: a conversation changed
        # since the last pass is recorded first, so a frame goes to the current one.
        self.refresh_statuses(name)

        def by_door(step: str) -> Callable[[Outbox], object]:
            def act(row: Outbox) -> object:
                door: Door = doors[row.session.vendor]
                if step == "verdict":
                    return door.verdict(row, now)
                if step == "deliver" and backoff.waits(row, now):
                    return None  # refused before sending: its next try is still to come
                return getattr(door, step)(row)

            return act

        phases: list[tuple[Callable[[], list[Outbox]], Callable[[Outbox], object], str]] = [
            (lambda: self._in_state("pending"), by_door("deliver"), "deliver"),
            (partial(self._observable, name), by_door("observe"), "observe"),
            (lambda: self._in_state("uncertain"), by_door("verdict"), "verdict"),
        ]
        # Each phase reads the ledger when it starts: what one phase sent, the next observes.
        for rows, act, phase in phases:
            for row in rows():
                if stop():
                    return True
                if self._ours(row, name):
                    self._step(row, phase, act)
        # An envelope sent (or settled) this pass changes what the Mac must watch: survey
        # it again now, so its transcript is watched before the receiver writes there.
        now_in_flight = {
            row_id for (row_id,) in self._observable_query(name).select(Outbox.id).tuples()
        }
        if now_in_flight != {row.id for row in in_flight}:
            view.more = True
        return True

    def _first_send(self, name: str, now: float) -> list[tuple[str, dict[str, Any]]]:
        """The readings the pass's first send to this Mac will ask before its intent, to
        ask with the survey (one round trip less on the way to the frame): the first
        envelope the deliver phase will try, past those waiting their turn or their next
        try, when it goes to a Claude chat. Only the first: what a frame written does to
        its chat is for a later send's own readings to find."""
        pending = (
            Outbox.select(Outbox, Session)
            .join(Session)
            .where(
                (Outbox.state == "pending")
                & (Session.host == name)
                & (Session.mode == "managed")
                & (Outbox.generation == Session.generation)
                & Session.vendor.in_(list(DOORS))
            )
            .order_by(Outbox.created_at, Outbox.id)
        )
        for row in list(pending):
            if backoff.waits(row, now) or pacing.pace(row, now) is not None:
                continue  # refused before sending: nothing is read for it
            return ClaudeDoor.before_send(row) if row.session.vendor == "claude" else []
        return []

    def due(self, name: str, now: float) -> float | None:
        """When this Mac next needs a pass though nothing in its records changed: a
        verdict's grace or dialog expiry ending, a paced envelope's turn; None when only a
        change can move its envelopes (a receipt, an answer, a status)."""
        times = []
        for row in self._in_state("uncertain"):
            if self._ours(row, name) and row.session.vendor == "claude":  # Codex: no verdict
                cursor = row.cursor or {}
                sent_at = float(cursor.get("sent_at") or 0)
                times.append(verdict_due(cursor.get("inbound"), sent_at, now, row.held))
        for row in self._in_state("pending"):
            if self._ours(row, name):
                times.append(backoff.retry_at(row) if backoff.waits(row, now) else None)
                times.append(pacing.goes_at(row, now))
        return min((at for at in times if at is not None), default=None)

    def has_pending(self, name: str) -> bool:
        """Whether an envelope to a chat on this Mac waits to be sent now (one refused
        before sending waits for its next try: its own refusal's write wakes nothing)."""
        pending = (
            Outbox.select(Outbox.id, Outbox.state, Outbox.refusals, Outbox.refused_at)
            .join(Session)
            .where(
                (Outbox.state == "pending")
                & (Session.host == name)
                & (Session.mode == "managed")
                & Session.vendor.in_(list(DOORS))
            )
        )
        now = self.engine.clock()
        return any(not backoff.waits(row, now) for row in pending)

    def _ours(self, row: Outbox, name: str) -> bool:
        return row.session.host == name and row.session.vendor in DOORS

    def _in_state(self, state: str) -> list[Outbox]:
        return self._managed(Outbox.select(Outbox, Session).where(Outbox.state == state))

    def reconcile(self, doors: Mapping[str, Door], in_flight: list[Outbox]) -> None:
        """Before a coordinator first sends anything to a Mac, every uncertain envelope
        there is looked for by its id in the receiver's records (a Codex one in Codex's
        queue as well). Never infer unsent."""
        for row in in_flight:
            if row.state == "uncertain":
                self._step(row, "observe", doors[row.session.vendor].observe)

    def _step(self, row: Outbox, phase: str, act: Callable[[Outbox], object]) -> None:
        """One envelope's step of a pass. A refusal of Coop's (the ledger's rules, a Mac
        that cannot be asked, the door) costs this envelope this pass, and the pass goes
        on; anything else is a bug and stops it."""
        try:
            act(row)
        except Fenced:
            raise  # a successor holds the ledger: this coordinator steps down
        except (CoopError, HostsError) as refusal:
            self._refused(row.id[:8], phase, refusal)

    def _undeliverable(self, row: Outbox) -> None:
        """Say why an envelope waits when no door can take it, rather than wait silently."""
        if row.session.vendor not in DOORS:
            reason = f"No delivery door to {row.session.vendor} chats yet: the envelope waits"
        else:
            reason = f"{row.session.host} is not in the fleet (fleet.toml)"
        self.engine.record_refusal(row.id, reason, tried=False)

    def _observable(self, name: str) -> list[Outbox]:
        """This Mac's uncertain sends, invitations awaiting an answer, and work being done
        (a second sighting of it is a conflict)."""
        return list(self._observable_query(name))

    def _observable_query(self, name: str):  # type: ignore[no-untyped-def]
        return (
            Outbox.select(Outbox, Session, Dispatch)
            .join(Session)
            .switch(Outbox)
            .join(Dispatch, join_type=JOIN.LEFT_OUTER)  # a reply has no dispatch
            .where(
                (Session.mode == "managed")
                & (Session.host == name)
                & Session.vendor.in_(list(DOORS))
                & (
                    (Outbox.state == "uncertain")
                    | (
                        (Outbox.state == "delivered")
                        & (Outbox.kind == "invitation")
                        & (Dispatch.state == "invited")
                    )
                    | (
                        (Outbox.state == "delivered")
                        & (Outbox.kind == "work")
                        & (Dispatch.state == "accepted")
                    )
                )
            )
            .order_by(Outbox.created_at, Outbox.id)
        )

    def cancel_stale(self) -> None:
        older = (
            Outbox.select(Outbox.id)
            .join(Session)
            .where((Outbox.state == "pending") & (Outbox.generation < Session.generation))
        )
        if older.exists():
            try:
                result = self.engine.cancel_stale()
            except CoopError as refusal:
                self._refused("pending envelopes", "cancel_stale", refusal)
                return
            for outbox_id in result["cancelled"]:
                self.log(f"{outbox_id[:8]} cancelled: left pending by an older generation")

    def sweep_obligations(self, now: float) -> None:
        due = Obligation.select().where((Obligation.state == "open") & (Obligation.due_at <= now))
        if due.exists():
            try:
                overdue = self.engine.sweep_obligations()["overdue"]
            except CoopError as refusal:
                self._refused("obligations", "sweep", refusal)
                return
            for obligation_id in overdue:
                self.log(f"obligation {obligation_id} overdue")

    def refresh_statuses(self, name: str) -> None:
        """Each managed Claude chat on this Mac as its survey saw it: which live process
        it is (coop_engine/identity.py), what changed of that process or its
        conversation, and its status (exited when no live process is it)."""
        view = self.views[name]
        managed = Session.select().where(
            (Session.mode == "managed") & (Session.vendor == "claude") & (Session.host == name)
        )
        live, processes = view.live(), view.processes()
        for session in list(managed):
            found = identity.match_among(session, processes)
            if found is None and identity.settling(session, live):
                continue
            if found is not None and found.how is not None:
                self._record_process(name, session, found, found.how)
            status = "exited" if found is None else str(found.entry.get("status") or "unknown")
            if status != session.status:
                try:
                    self.engine.record_status(session.id, status)
                except CoopError as refusal:
                    self._refused(session.ref, "record_status", refusal)

    def _record_process(self, name: str, session: Session, found: identity.Match, how: str) -> None:
        """Record what changed of a chat's process. Before its conversation changes, each
        envelope read in the old transcript is read to that transcript's end, afresh;
        from then on it is read in the new one (Engine.record_process)."""
        drifted = found.process.native_id != session.native_id
        if drifted:
            door = ClaudeDoor(self.engine, self.views[name], self.log)
            for row in self._observable(name):
                if row.session_id == session.id:
                    self._step(row, "observe", door.observe)
        try:
            self.engine.record_process(session.id, found.process.as_dict(), how)
        except CoopError as refusal:
            self._refused(session.ref, "record_process", refusal)
            return
        if drifted:
            self.log(f"{session.ref} {how}: now {found.process.native_id}")
            self.views[name].more = True  # read the new transcript at once
