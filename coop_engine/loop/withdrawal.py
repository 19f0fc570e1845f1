"""Dad's (or the chief's) taking back of an envelope through its door.

A Codex envelope still waiting in Codex's own queue is deleted from it
(`thread/queue/delete`): only Codex's `deleted: true` proves it will never run, and the
row then expires `withdrawn-from-queue` (Send again may follow, once). `deleted: false`
changes nothing: Codex took it. The ask is recorded before it is made, so an answer
lost to a crash is never read as Codex's. A pending envelope, never sent, is cancelled
by the ledger alone (`Engine.withdraw`).
"""

from __future__ import annotations

from typing import Any

from coop_engine.delivery import WITHDRAWN_FROM_QUEUE as WITHDRAWN
from coop_engine.engine import Engine
from coop_engine.errors import Conflict
from coop_engine.models import Event, Outbox
from hosts.fleet import Fleet
from hosts.mac.host import Host, HostsError

TAKEN = "Codex already took it from its queue: watch for its receipt"


def withdraw(engine: Engine, host: Host, row: Outbox, by: str) -> dict[str, Any]:
    """Take a sent Codex envelope back out of Codex's queue (see the module's words)."""
    thread_id = row.session.native_id
    queued_id = (row.transport or {}).get("queued_id")
    if not isinstance(queued_id, str):
        waiting = host.codex_queued(thread_id)["queued"].get(row.id) or []
        if not waiting:
            raise Conflict(
                "Codex's queue holds no message with this envelope's id: watch for its receipt"
            )
        queued_id = str(waiting[0])
    asked_before = (
        Event.select()
        .where((Event.subject == f"outbox:{row.id}") & (Event.command == "ask_withdrawal"))
        .exists()
    )
    engine.ask_withdrawal(row.id, by, queued_id)
    answer = host.codex_queue_delete(thread_id, queued_id)
    if not answer["deleted"]:
        if asked_before:
            raise Conflict(
                "Codex's queue no longer holds it, and a withdrawal asked earlier got no "
                "answer: that withdrawal or Codex took it; watch for its receipt"
            )
        raise Conflict(TAKEN)
    evidence = {
        "reason": WITHDRAWN,
        "by": by,
        "native_session": thread_id,
        "queued_id": queued_id,
        "deleted": True,
        "observed_at": engine.clock(),
    }
    return engine.expire(row.id, evidence)


def withdraw_envelope(engine: Engine, fleet: Fleet, outbox_id: str, by: str) -> dict[str, Any]:
    """`coop withdraw` and the app's Withdraw: a Codex envelope in flight is taken out of
    Codex's queue on its Mac; any other goes to the ledger, which cancels one never sent
    and refuses the rest. A Mac that cannot be asked is a refusal naming it."""
    row = Outbox.get_by_id(outbox_id)
    if row.state != "uncertain" or row.session.vendor != "codex":
        return engine.withdraw(outbox_id, by)
    mac = row.session.host
    try:
        return withdraw(engine, fleet.host(mac), row, by)
    except HostsError as error:
        asked = f"{mac} could not be asked to withdraw it from Codex's queue"
        raise Conflict(f"{asked}: {error}") from None
