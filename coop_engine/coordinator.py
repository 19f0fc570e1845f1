"""One coordinator pass: send pending envelopes, observe transcripts, run verdicts,
sweep obligations, refresh chat statuses. `coop tick` runs one pass; `coop serve`
runs passes until stopped.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from coop_engine.adapters.claude import ClaudeAdapter
from coop_engine.engine import Engine
from coop_engine.models import Dispatch, Obligation, Outbox, Session
from hosts.base import Host, HostError
from hosts.native import NativeRefusal

Log = Callable[[str], None]


def _print(line: str) -> None:
    print(line, flush=True)


class Coordinator:
    def __init__(self, engine: Engine, hosts: Mapping[str, Host], log: Log = _print) -> None:
        self.engine = engine
        self.hosts = hosts
        self.log = log

    def adapter(self, session: Session) -> ClaudeAdapter | None:
        host = self.hosts.get(session.host)
        if host is None or session.vendor != "claude":
            return None
        return ClaudeAdapter(self.engine, host, self.log)

    def _managed(self, query):  # type: ignore[no-untyped-def]
        return (
            query.join(Session)
            .where((Session.mode == "managed") & (Outbox.generation == Session.generation))
            .order_by(Outbox.created_at, Outbox.id)
        )

    def tick(self) -> None:
        """One pass, as of the engine's clock."""
        now = self.engine.clock()
        self.cancel_stale()
        for row in self._managed(Outbox.select(Outbox, Session).where(Outbox.state == "pending")):
            if (adapter := self.adapter(row.session)) is not None:
                adapter.deliver(row)
        for row in self._observable():
            if (adapter := self.adapter(row.session)) is not None:
                adapter.observe(row)
        for row in self._managed(Outbox.select(Outbox, Session).where(Outbox.state == "uncertain")):
            if (adapter := self.adapter(row.session)) is not None:
                adapter.verdict(row, now)
        self.sweep_obligations(now)
        self.refresh_statuses()

    def _observable(self) -> list[Outbox]:
        """Uncertain sends, invitations awaiting an answer, and work being done (a second
        sighting of it is a conflict)."""
        query = (
            Outbox.select(Outbox, Session, Dispatch)
            .join(Session)
            .switch(Outbox)
            .join(Dispatch)
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
            result = self.engine.cancel_stale()
            for outbox_id in result["cancelled"]:
                self.log(f"{outbox_id[:8]} cancelled: left pending by an older generation")

    def sweep_obligations(self, now: float) -> None:
        due = Obligation.select().where((Obligation.state == "open") & (Obligation.due_at <= now))
        if due.exists():
            for obligation_id in self.engine.sweep_obligations()["overdue"]:
                self.log(f"obligation {obligation_id} overdue")

    def refresh_statuses(self) -> None:
        """Each managed Claude chat's status as its registry says (exited when gone)."""
        for session in Session.select().where(
            (Session.mode == "managed") & (Session.vendor == "claude")
        ):
            host = self.hosts.get(session.host)
            if host is None:
                continue
            try:
                entry = host.registry_entry(session.native_id)
            except (HostError, NativeRefusal):
                continue
            status = "exited" if entry is None else str(entry.get("status") or "unknown")
            if status != session.status:
                self.engine.record_status(session.id, status)
