"""Fact 5: outcomes reported or decided (meeting the obligations owed, obligations.py),
and Dad's replies to a chat about its work."""

from __future__ import annotations

from typing import Any

from coop_engine.errors import Conflict, NotAuthorized
from coop_engine.frame import fresh_key
from coop_engine.models import Binding, Dispatch, Outbox
from coop_engine.obligations import ObligationCommands

REPORTERS = ("dad", "chief", "worker")


class OutcomeCommands(ObligationCommands):
    def report_outcome(
        self, todo_id: int, outcome: str, by: str, *, key: str | None = None
    ) -> dict[str, Any]:
        """Fact 5: a report from the bound worker, or a decision by Dad or the chief."""
        if by not in REPORTERS:
            raise NotAuthorized("An outcome is reported by worker, or decided by dad or chief")
        if not outcome.strip():
            raise Conflict("An outcome needs text")

        def run(now: float) -> dict[str, Any]:
            todo = self._todo(todo_id)
            dispatch = (
                Dispatch.select()
                .where((Dispatch.todo == todo_id) & (Dispatch.state == "accepted"))
                .order_by(Dispatch.id.desc())
                .first()
            )
            if dispatch is None:
                raise Conflict(f"Todo #{todo_id} is {todo.state}: no accepted work to report on")
            changed = (
                Dispatch.update(state="done", outcome=outcome, outcome_by=by, outcome_at=now)
                .where((Dispatch.id == dispatch.id) & (Dispatch.state == "accepted"))
                .execute()
            )
            if changed != 1:
                raise Conflict(f"Dispatch {dispatch.id} already has an outcome")
            self._move_todo(now, "report_outcome", todo_id, "taken", "done")
            self._meet_obligations(now, dispatch.id, "report_outcome")
            Binding.update(state="released").where(
                (Binding.dispatch == dispatch.id) & (Binding.state == "active")
            ).execute()
            self._event(
                now,
                "report_outcome",
                f"dispatch:{dispatch.id}",
                "accepted",
                "done",
                {"outcome": outcome},
                who=by,
            )
            return {"todo": todo_id, "dispatch": dispatch.id, "state": "done"}

        args = {"todo": todo_id, "outcome": outcome, "by": by}
        return self._command("report_outcome", key or fresh_key(f"report:{todo_id}"), args, run)

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
