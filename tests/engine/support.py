"""Helpers for engine tests: an injectable clock and the common paths through the ledger."""

from __future__ import annotations

from typing import Any

from clock import Clock

from coop_engine.engine import Engine
from coop_engine.models import TABLES, Event, Outbox

# 2026-09-21T...Z: any fixed instant will do; nothing in a test waits for real time.
START = 1_790_000_000.0

CHAT = "claude:5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"
OTHER_CHAT = "claude:0e3b9a77-41c2-4f58-b6d0-8c5a2e917f30"
CODEX_CHAT = "codex:019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
HOST = "office"

HELD = "held-for-approval-then-expired"

FakeClock = Clock  # the engine tests' name for it


def cursor(host: str = HOST, offset: int = 0) -> dict[str, Any]:
    """What an adapter's checkpoint records before sending."""
    return {
        "host": host,
        "native_session": "5b7cf1d2",
        "offset": offset,
        "inbound": {"verdict": "hold", "source": "permission-mode-parity"},
    }


SENT = {"ok": True, "written": True}
NOT_WRITTEN = {"ok": False, "written": False, "error": "Native receiver changed before send"}
FAILED_AFTER_CONNECT = {"ok": False, "written": True, "error": "Broken pipe"}


def verdict(outbox_id: str, reason: str = HELD) -> dict[str, Any]:
    """Evidence of loss as `delivery_verdict()` returns it."""
    return {"reason": reason, "message_id": outbox_id, "sent_at": START, "observed_at": START}


def peer_entry(outbox_id: str) -> dict[str, Any]:
    """Receipt evidence: a peer entry with the exact id and provenance."""
    return {
        "shape": "user",
        "offset": 1024,
        "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": outbox_id},
    }


class Steps:
    """The usual ways through the ledger, so a test states only what it is about."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def todo(self, title: str = "Fix the importer", **kwargs: Any) -> int:
        return int(self.engine.add_todo(title, **kwargs)["id"])

    def invitation(self, todo: int | None = None, chat: str = CHAT, host: str = HOST) -> dict:
        """A pending invitation: {dispatch, outbox, session, nonce, todo}."""
        todo = self.todo() if todo is None else todo
        return {**self.engine.invite(todo, chat, host), "todo": todo}

    def send(self, outbox_id: str, result: dict[str, Any] = SENT) -> int:
        """Intent before I/O, then the host's answer. Returns the attempt number."""
        attempt = int(self.engine.mark_uncertain(outbox_id, cursor())["attempt"])
        self.engine.record_transport(outbox_id, attempt, result)
        return attempt

    def deliver(self, outbox_id: str) -> None:
        self.send(outbox_id)
        self.engine.record_receipt(outbox_id, peer_entry(outbox_id))

    def expire(self, outbox_id: str, reason: str = HELD) -> None:
        self.send(outbox_id)
        self.engine.expire(outbox_id, verdict(outbox_id, reason))

    def delivered_invitation(self, todo: int | None = None, chat: str = CHAT) -> dict:
        invitation = self.invitation(todo, chat)
        self.deliver(invitation["outbox"])
        return invitation

    def accepted(self, todo: int | None = None, chat: str = CHAT) -> dict:
        """A delivered invitation and its acceptance: {..., work}."""
        invitation = self.delivered_invitation(todo, chat)
        answer = {"final": f"COOP_ACCEPT {invitation['nonce']}"}
        result = self.engine.accept(invitation["outbox"], invitation["nonce"], answer)
        return {**invitation, "work": result["work"]}

    def cli_taker(self, todo: int | None = None, chat: str = CHAT, host: str = HOST) -> dict:
        """A CLI take by a chat the engine never enrolled: {dispatch, session, todo}."""
        todo = self.todo() if todo is None else todo
        return {**self.engine.take_cli(todo, chat, host), "todo": todo}


def row(outbox_id: str) -> Outbox:
    return Outbox.get_by_id(outbox_id)


def counts() -> dict[str, int]:
    """Rows per table: a command that writes nothing leaves this unchanged."""
    return {model._meta.table_name: model.select().count() for model in TABLES}


def events_for(subject: str) -> list[Event]:
    return list(Event.select().where(Event.subject == subject).order_by(Event.id))
