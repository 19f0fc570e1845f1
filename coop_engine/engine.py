"""The Engine: one method per command, one transaction each (DESIGN.md section 4)."""

from __future__ import annotations

from typing import Any

from coop_engine import frame_text
from coop_engine.authority import AuthorityCommands
from coop_engine.delivery import DeliveryCommands
from coop_engine.errors import Conflict, CoopError
from coop_engine.frame import fresh_key
from coop_engine.identity import CHANGED, RESUMED, SEEN
from coop_engine.invitations import InvitationCommands
from coop_engine.models import Outbox, Session, Setting, Todo
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
        """A new open todo; its id is the next integer. Its title and body are checked
        at the door (frame_text): they are sent on to chats."""
        if not title.strip():
            raise CoopError("A todo needs a title")
        title, body = frame_text.title(title), frame_text.body(body)

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

    def record_process(self, session_id: int, seen: dict[str, Any], how: str) -> dict[str, Any]:
        """What the registry shows of a chat's process (`seen`: pid, birth, tmux,
        native_id): first seen, its conversation changed in the same process, or resumed
        in a new process in its pane. The chat stays one enrollment, at the same
        generation: a new conversation becomes its `native_id`, the earlier one joins
        its history, and each envelope being read in the earlier conversation's
        transcript reads the new one from its start (its own offset kept as evidence)."""
        if how not in (SEEN, CHANGED, RESUMED):
            raise CoopError(f"not a way a chat's process is seen: {how}")

        def run(now: float) -> dict[str, Any]:
            session = self._session(session_id)
            old, new = session.native_id, str(seen["native_id"])
            changes: dict[str, Any] = {
                "pid": seen["pid"],
                "birth": seen["birth"],
                "tmux": seen.get("tmux"),
                "updated_at": now,
            }
            if seen.get("name"):
                changes["name"] = seen["name"]
            moved: list[str] = []
            if new != old:
                clash = Session.get_or_none(
                    (Session.vendor == session.vendor)
                    & (Session.host == session.host)
                    & (Session.native_id == new)
                )
                if clash is not None:
                    raise Conflict(
                        f"{session.vendor}:{new} on {session.host} is enrollment {clash.id} "
                        f"already; enrollment {session_id} keeps its conversation {old}"
                    )
                history = [*(session.conversations or []), {"id": old, "until": now, "how": how}]
                changes.update(native_id=new, conversations=history)
                moved = self._read_in(session_id, old, new, now)
            Session.update(**changes).where(Session.id == session_id).execute()
            evidence = {**seen, "how": how, "envelopes": moved}
            if new != old:
                evidence["said"] = f"conversation changed from {old} to {new}"
            elif how == RESUMED:
                evidence["said"] = f"resumed in a new process (pid {seen['pid']})"
            self._event(now, "record_process", f"session:{session_id}", old, new, evidence)
            return {"session": session_id, "native_id": new, "how": how, "moved": moved}

        args = {"session": session_id, "seen": seen, "how": how}
        return self._command("record_process", fresh_key(f"process:{session_id}"), args, run)

    @staticmethod
    def _read_in(session_id: int, old: str, new: str, now: float) -> list[str]:
        """Move the envelopes being read in conversation `old` to the start of `new`."""
        moved = []
        for row in Outbox.select().where(
            (Outbox.session == session_id) & Outbox.state.in_(["uncertain", "delivered"])
        ):
            reading = row.observed_in or (row.cursor or {}).get("native_session")
            if reading == old:
                moved.append(row.id)
        if moved:
            Outbox.update(observed_in=new, observed_offset=0, updated_at=now).where(
                Outbox.id.in_(moved)
            ).execute()
        return moved
