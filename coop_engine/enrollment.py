"""Commands about chats themselves: the chief, adoption searches, refused decisions,
and Dad's replies queued for a chat."""

from __future__ import annotations

from typing import Any

from coop_engine.dispatching import parse_session_ref
from coop_engine.errors import NotAuthorized
from coop_engine.frame import CommandBase, fresh_key
from coop_engine.models import Outbox, Session, Setting

ADOPTION_RETRY_SECONDS = 10 * 60
REFUSED_ADOPTION_HOLD_SECONDS = 48 * 3600


class EnrollmentCommands(CommandBase):
    def set_chief(self, session_ref: str, by: str) -> dict[str, Any]:
        """Name the chat that acts as Dad's proxy. Only Dad names the chief."""
        parse_session_ref(session_ref)

        def run(now: float) -> dict[str, Any]:
            previous = Setting.get_or_none(Setting.name == "chief")
            value = {"session": session_ref}
            Setting.insert(name="chief", value=value, updated_at=now).on_conflict(
                conflict_target=[Setting.name],
                update={Setting.value: value, Setting.updated_at: now},
            ).execute()
            old = previous.value["session"] if previous else None
            self._event(now, "set_chief", "setting:chief", old, session_ref, who=by)
            return {"chief": session_ref}

        return self._command("set_chief", fresh_key("chief"), {"session": session_ref}, run)

    def chief(self) -> str | None:
        row = Setting.get_or_none(Setting.name == "chief")
        return None if row is None else str(row.value["session"])

    def record_refused_decision(
        self, command: str, by: str, caller: str | None, reason: str
    ) -> None:
        """A decision attempted by someone who may not make it: kept as history."""

        def run(now: float) -> dict[str, Any]:
            evidence = {"claimed": by, "caller": caller, "reason": reason}
            self._event(
                now,
                "refused_decision",
                f"command:{command}",
                None,
                None,
                evidence,
                who=caller or "unknown",
            )
            return {}

        args = {"command": command, "by": by, "caller": caller}
        self._command("refused_decision", fresh_key("refused"), args, run)

    def record_adoption_search(
        self, session_id: int, search: dict[str, Any], refused: bool = False
    ) -> dict[str, Any]:
        """Where a CLI taker was searched and what each Mac answered. A refused
        adoption is not tried again for 48 hours; any other answer waits 10 minutes."""

        def run(now: float) -> dict[str, Any]:
            self._session(session_id)
            refused_until = now + REFUSED_ADOPTION_HOLD_SECONDS if refused else None
            Session.update(
                adoption={**search, "at": now}, last_tried_at=now, refused_until=refused_until
            ).where(Session.id == session_id).execute()
            self._event(now, "adoption_search", f"session:{session_id}", None, None, search)
            return {"session": session_id, "refused_until": refused_until}

        args = {"session": session_id, "search": search, "refused": refused}
        return self._command("record_adoption_search", fresh_key(f"search:{session_id}"), args, run)

    def queue_reply(self, session_id: int, text: str, by: str) -> dict[str, Any]:
        """Dad's (or the chief's) reply to a chat, queued as a reply-review envelope at
        the chat's current generation. It waits, pending, until the chat is managed."""
        if by not in ("dad", "chief"):
            raise NotAuthorized("A reply to a chat is Dad's, or the chief's")
        if not text.strip():
            raise ValueError("A reply needs text")

        def run(now: float) -> dict[str, Any]:
            session = self._session(session_id)
            outbox_id = self.new_id()
            Outbox.create(
                id=outbox_id,
                session=session,
                generation=session.generation,
                kind="reply-review",
                payload={"text": text, "by": by},
                created_at=now,
                updated_at=now,
            )
            self._event(
                now, "queue_reply", f"outbox:{outbox_id}", None, "pending", {"by": by}, who=by
            )
            return {"outbox": outbox_id}

        args = {"session": session_id, "text": text, "by": by}
        return self._command("queue_reply", fresh_key(f"reply:{session_id}"), args, run)
