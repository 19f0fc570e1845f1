"""The Engine: one method per command, one transaction each (DESIGN.md section 4)."""

from __future__ import annotations

from typing import Any

from coop_engine.authority import AuthorityCommands
from coop_engine.delivery import DeliveryCommands
from coop_engine.errors import CoopError
from coop_engine.frame import fresh_key
from coop_engine.invitations import InvitationCommands
from coop_engine.models import Session, Setting, Todo
from coop_engine.outcomes import OutcomeCommands
from coop_engine.takes import TakeCommands


class Engine(
    InvitationCommands, TakeCommands, OutcomeCommands, DeliveryCommands, AuthorityCommands
):
    """The ledger's rules. No I/O to chats or hosts happens here."""

    # --- todos --------------------------------------------------------------------------

    def add_todo(
        self, title: str, body: str = "", project: str | None = None, *, key: str | None = None
    ) -> dict[str, Any]:
        """A new open todo; its id is the next integer."""
        title = title.strip()
        if not title:
            raise CoopError("A todo needs a title")

        def run(now: float) -> dict[str, Any]:
            todo = Todo.create(title=title, body=body, project=project, created_at=now)
            self._event(now, "add_todo", f"todo:{todo.id}", None, "open", {"title": title})
            return {"id": todo.id}

        args = {"title": title, "body": body, "project": project}
        return self._command("add_todo", key or fresh_key("todo"), args, run)

    def todo(self, todo_id: int) -> dict[str, Any]:
        """One todo, or NotFound (`No todo #N`)."""
        todo = self._todo(todo_id)
        return {"id": todo.id, "title": todo.title, "state": todo.state}

    # --- settings -----------------------------------------------------------------------

    def setting(self, name: str) -> Any:
        row = Setting.get_or_none(Setting.name == name)
        return None if row is None else row.value

    # --- chats --------------------------------------------------------------------------

    def record_status(self, session_id: int, status: str) -> dict[str, Any]:
        """A chat's status as its registry last showed it (idle, busy, waiting, exited...)."""

        def run(now: float) -> dict[str, Any]:
            session = self._session(session_id)
            if session.status == status:
                return {"session": session_id, "status": status}
            Session.update(status=status, updated_at=now).where(Session.id == session_id).execute()
            self._event(now, "record_status", f"session:{session_id}", session.status, status)
            return {"session": session_id, "status": status}

        args = {"session": session_id, "status": status}
        return self._command("record_status", fresh_key(f"status:{session_id}"), args, run)
