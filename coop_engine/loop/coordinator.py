"""One coordinator pass: send pending envelopes, observe transcripts, run verdicts,
sweep obligations, refresh chat statuses. `coop tick` runs one pass; `coop serve`
runs passes until stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from functools import partial

from peewee import JOIN

from coop_engine.engine import Engine
from coop_engine.errors import CoopError
from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.models import Dispatch, Obligation, Outbox, Session
from hosts.mac.errors import HostsError
from hosts.mac.host import Host, HostError

Log = Callable[[str], None]


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

    def door(self, session: Session, only: Collection[str] | None = None) -> ClaudeDoor | None:
        if only is not None and session.host not in only:
            return None
        host = self.hosts.get(session.host)
        if host is None or session.vendor != "claude":
            return None
        return ClaudeDoor(self.engine, host, self.log)

    def _managed(self, query):  # type: ignore[no-untyped-def]
        """The rows, read in full before any is acted on: a SQLite read left open while
        a command begins its write fails at once (SQLITE_BUSY_SNAPSHOT, no busy wait)
        whenever another process committed in between."""
        return list(
            query.join(Session)
            .where((Session.mode == "managed") & (Outbox.generation == Session.generation))
            .order_by(Outbox.created_at, Outbox.id)
        )

    def reconcile(self) -> None:
        """At start, before anything is sent: every uncertain envelope is searched for by
        its id in the receiver's transcript. Never infer unsent."""
        for row in self._managed(Outbox.select(Outbox, Session).where(Outbox.state == "uncertain")):
            if (door := self.door(row.session)) is not None:
                self._step(row, "observe", door.observe)
        self.cancel_stale()

    def tick(self, only: Collection[str] | None = None, stop: Callable[[], bool] = _never) -> None:
        """One pass, as of the engine's clock, over the chats of `only` hosts (all when
        None). `stop` is asked between envelopes: a stopping coordinator finishes the
        command at hand and leaves the rest to the next run."""
        now = self.engine.clock()
        self.cancel_stale()
        # Each phase reads the ledger when it starts: what one phase sent, the next observes.
        phases = [
            (
                lambda: self._managed(
                    Outbox.select(Outbox, Session).where(Outbox.state == "pending")
                ),
                "deliver",
            ),
            (self._observable, "observe"),
            (
                lambda: self._managed(
                    Outbox.select(Outbox, Session).where(Outbox.state == "uncertain")
                ),
                "verdict",
            ),
        ]
        for rows, phase in phases:
            for row in rows():
                if stop():
                    return
                door = self.door(row.session, only)
                if door is None:
                    self._step(row, phase, partial(self._undeliverable, phase=phase, only=only))
                elif phase == "verdict":
                    self._step(row, phase, partial(door.verdict, now=now))
                else:
                    self._step(row, phase, getattr(door, phase))
        self.sweep_obligations(now)
        self.refresh_statuses(only)

    def _step(self, row: Outbox, phase: str, act: Callable[[Outbox], object]) -> None:
        """One envelope's step of a pass. A refusal of Coop's (the ledger's rules, a Mac
        that cannot be asked, the door) costs this envelope this pass, and the pass goes
        on; anything else is a bug and stops it."""
        try:
            act(row)
        except (CoopError, HostsError) as refusal:
            self._refused(row.id[:8], phase, refusal)

    def _undeliverable(self, row: Outbox, phase: str, only: Collection[str] | None) -> None:
        """Say why an envelope waits when no door can take it, rather than wait silently."""
        if phase != "deliver" or (only is not None and row.session.host not in only):
            return
        if row.session.vendor != "claude":
            reason = f"No delivery door to {row.session.vendor} chats yet: the envelope waits"
        elif row.session.host not in self.hosts:
            reason = f"{row.session.host} is not in the fleet (fleet.toml)"
        else:
            return
        self.engine.record_refusal(row.id, reason)

    def _observable(self) -> list[Outbox]:
        """Uncertain sends, invitations awaiting an answer, and work being done (a second
        sighting of it is a conflict)."""
        query = (
            Outbox.select(Outbox, Session, Dispatch)
            .join(Session)
            .switch(Outbox)
            .join(Dispatch, join_type=JOIN.LEFT_OUTER)  # a reply has no dispatch
            .where(
                (Session.mode == "managed")
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
        return list(query)

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

    def refresh_statuses(self, only: Collection[str] | None = None) -> None:
        """Each managed Claude chat's status as its registry says (exited when gone)."""
        managed = Session.select().where((Session.mode == "managed") & (Session.vendor == "claude"))
        for session in list(managed):
            host = self.hosts.get(session.host)
            if host is None or (only is not None and session.host not in only):
                continue
            try:
                entry = host.registry_entry(session.native_id)
            except HostError as error:
                self.unreachable[session.host] = error.cause
                continue
            except HostsError:
                continue
            self.unreachable.pop(session.host, None)
            status = "exited" if entry is None else str(entry.get("status") or "unknown")
            if status != session.status:
                try:
                    self.engine.record_status(session.id, status)
                except CoopError as refusal:
                    self._refused(session.ref, "record_status", refusal)
