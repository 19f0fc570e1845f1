"""What every command that hands out work shares: enqueueing envelopes, taking a todo,
withdrawing rival invitations, and the ids of sessions and nonces."""

from __future__ import annotations

import secrets
import string
from typing import Any

from coop_engine import prompts
from coop_engine.errors import Conflict
from coop_engine.frame import CommandBase
from coop_engine.models import Dispatch, Outbox, Session, Todo

MANAGED_OUTCOME_DUE = 2 * 3600
LEGACY_OUTCOME_DUE = 3 * 3600
VENDORS = ("claude", "codex")
_NONCE_ALPHABET = string.ascii_letters + string.digits


def new_nonce() -> str:
    return "".join(secrets.choice(_NONCE_ALPHABET) for _ in range(10))


def parse_session_ref(ref: str) -> tuple[str, str]:
    """`claude:<id>` or `codex:<thread id>` -> (vendor, native id)."""
    vendor, _, native_id = ref.partition(":")
    if vendor not in VENDORS or not native_id.strip():
        raise Conflict(f"A session is named claude:<session id> or codex:<thread id>, not {ref!r}")
    return vendor, native_id.strip()


class DispatchCommands(CommandBase):
    def _enqueue(
        self,
        now: float,
        session: Session,
        dispatch: Dispatch | None,
        kind: str,
        payload: dict[str, Any],
    ) -> str:
        outbox_id = self.new_id()
        Outbox.create(
            id=outbox_id,
            session=session,
            generation=session.generation,
            dispatch=dispatch,
            kind=kind,
            payload=payload,
            created_at=now,
            updated_at=now,
        )
        self._event(now, "enqueue", f"outbox:{outbox_id}", None, "pending", {"kind": kind})
        return outbox_id

    def _work_payload(self, todo: Todo, source: str) -> dict[str, Any]:
        make = prompts.cli_take_work if source == "cli-take" else prompts.work
        return {
            "todo": todo.id,
            "title": todo.title,
            "text": make(todo.id, todo.title, todo.body),
            "scope": {"source": source, "project": todo.project},
        }

    def _cancel_rivals(self, now: float, todo: Todo, keep: Dispatch) -> None:
        """Once a todo is taken, other open invitations for it are withdrawn."""
        rivals = Dispatch.select().where(
            (Dispatch.todo == todo) & (Dispatch.state == "invited") & (Dispatch.id != keep.id)
        )
        for rival in rivals:
            Dispatch.update(state="cancelled").where(
                (Dispatch.id == rival.id) & (Dispatch.state == "invited")
            ).execute()
            withdrawn = Outbox.select(Outbox.id).where(
                (Outbox.dispatch == rival.id) & (Outbox.state == "pending")
            )
            for envelope in list(withdrawn):
                changed = (
                    Outbox.update(state="cancelled", updated_at=now)
                    .where((Outbox.id == envelope.id) & (Outbox.state == "pending"))
                    .execute()
                )
                if changed:
                    self._event(
                        now,
                        "cancel",
                        f"outbox:{envelope.id}",
                        "pending",
                        "cancelled",
                        {"taken_by": keep.id},
                    )
            self._event(
                now, "cancel", f"dispatch:{rival.id}", "invited", "cancelled", {"taken_by": keep.id}
            )

    def _move_todo(
        self, now: float, command: str, todo_id: int, from_state: str, to_state: str
    ) -> bool:
        """Compare-and-set a todo's state; a move that happens is recorded as an event."""
        changed = (
            Todo.update(state=to_state)
            .where((Todo.id == todo_id) & (Todo.state == from_state))
            .execute()
        )
        if changed:
            self._event(now, command, f"todo:{todo_id}", from_state, to_state)
        return changed == 1

    def _take_todo(self, now: float, todo: Todo) -> bool:
        changed = (
            Todo.update(state="taken")
            .where((Todo.id == todo.id) & Todo.state.in_(["open", "invited"]))
            .execute()
        )
        if changed == 1:
            self._event(now, "take", f"todo:{todo.id}", todo.state, "taken")
        return changed == 1

    @staticmethod
    def _invitation_dispatch(invitation: Outbox) -> Dispatch:
        dispatch: Dispatch | None = invitation.dispatch
        if dispatch is None:
            raise Conflict(f"Envelope {invitation.id} belongs to no dispatch")
        return dispatch

    def _find_or_record_session(
        self,
        now: float,
        vendor: str,
        native_id: str,
        host: str,
        *,
        mode: str,
        surface: str,
        name: str | None = None,
        cwd: str | None = None,
    ) -> Session:
        """The chat's row on that host, or a new one in `mode`: managed for a chat Dad
        invites, observed for a CLI taker. Its status starts unknown, never idle."""
        session = Session.get_or_none(
            (Session.vendor == vendor) & (Session.host == host) & (Session.native_id == native_id)
        )
        if session is not None:
            return session
        session = Session.create(
            vendor=vendor,
            host=host,
            native_id=native_id,
            mode=mode,
            surface=surface,
            status="unknown",
            name=name,
            cwd=cwd,
            created_at=now,
            updated_at=now,
        )
        command = "enroll" if mode == "managed" else "observe"
        evidence = {"session": session.ref, "host": host}
        self._event(now, command, f"session:{session.id}", None, mode, evidence)
        return session
