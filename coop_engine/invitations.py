"""Invitations: invite one exact chat, then its answer (COOP_ACCEPT or COOP_DECLINE)."""

from __future__ import annotations

import secrets
from typing import Any

from coop_engine import frame_text, identity, prompts
from coop_engine.dispatching import (
    MANAGED_OUTCOME_DUE,
    DispatchCommands,
    new_nonce,
    parse_session_ref,
)
from coop_engine.errors import Conflict
from coop_engine.frame import fresh_key
from coop_engine.models import Binding, Dispatch, Obligation, Outbox, Session, Todo


class InvitationCommands(DispatchCommands):
    def invite(
        self,
        todo_id: int,
        session_ref: str,
        host: str,
        *,
        name: str | None = None,
        cwd: str | None = None,
        entry: dict[str, Any] | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """A dispatch `invited` with a fresh nonce, and its invitation envelope. `entry`,
        the chat's registry entry where the caller read one, pins the chat's process at
        once (coop_engine/identity.py), so a conversation that changes before the first
        pass is still this chat's."""
        vendor, native_id = parse_session_ref(session_ref)

        def run(now: float) -> dict[str, Any]:
            todo = self._todo(todo_id)
            if todo.state not in ("open", "invited"):
                raise Conflict(f"Todo #{todo_id} is {todo.state}; it cannot be offered")
            # A ledger older than the door's check may hold what no frame may carry.
            frame_text.title(todo.title)
            frame_text.body(todo.body)
            session = self._managed_session(now, vendor, native_id, host, name, cwd)
            seen = identity.process(entry) if entry is not None else None
            if seen is not None and session.pid is None and seen.native_id == native_id:
                Session.update(pid=seen.pid, birth=seen.birth, tmux=seen.tmux).where(
                    Session.id == session.id
                ).execute()
            nonce = new_nonce()
            dispatch = Dispatch.create(
                todo=todo,
                session=session,
                state="invited",
                nonce=nonce,
                receipt={"source": "invitation"},
                created_at=now,
            )
            self._move_todo(now, "invite", todo_id, "open", "invited")
            payload = {
                "todo": todo.id,
                "title": todo.title,
                "nonce": nonce,
                "text": prompts.invitation(todo.id, todo.title, todo.body, nonce),
            }
            outbox_id = self._enqueue(now, session, dispatch, "invitation", payload)
            self._event(
                now,
                "invite",
                f"dispatch:{dispatch.id}",
                None,
                "invited",
                {"session": session.ref, "host": host},
            )
            return {
                "dispatch": dispatch.id,
                "outbox": outbox_id,
                "session": session.id,
                "nonce": nonce,
            }

        args = {"todo": todo_id, "session": session_ref, "host": host}
        return self._command("invite", key or fresh_key("invite"), args, run)

    def _managed_session(
        self, now: float, vendor: str, native_id: str, host: str, name: str | None, cwd: str | None
    ) -> Session:
        session = self._find_or_record_session(
            now, vendor, native_id, host, mode="managed", surface="native", name=name, cwd=cwd
        )
        if session.mode != "managed":
            raise Conflict(
                f"{session.ref} on {host} is a CLI taker's observed record; "
                "adopt it before inviting"
            )
        return session

    def accept(self, outbox_id: str, nonce: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """Fact 4, the one-transaction take: dispatch accepted, binding active, todo taken,
        an outcome obligation due in 2 h, and the work envelope enqueued."""

        def run(now: float) -> dict[str, Any]:
            invitation = self._outbox(outbox_id)
            if invitation.kind != "invitation":
                raise Conflict(f"Envelope {outbox_id} is {invitation.kind}, not an invitation")
            if invitation.state != "delivered":
                raise Conflict(f"Invitation {outbox_id} is {invitation.state}: no receipt yet")
            dispatch = self._invitation_dispatch(invitation)
            if not secrets.compare_digest(dispatch.nonce or "", nonce):
                raise Conflict("COOP_ACCEPT nonce does not match this invitation")
            changed = (
                Dispatch.update(state="accepted", accepted_at=now)
                .where((Dispatch.id == dispatch.id) & (Dispatch.state == "invited"))
                .execute()
            )
            subject = f"dispatch:{dispatch.id}"
            todo: Todo = dispatch.todo
            if changed != 1:
                # The winner's take already withdrew this invitation: a late answer is
                # recorded as one, not refused as if the chat had misbehaved.
                if dispatch.state == "cancelled" and todo.state in ("taken", "done"):
                    return self._too_late(now, invitation, dispatch, "cancelled")
                raise Conflict(f"Dispatch {dispatch.id} is {dispatch.state}, not invited")
            if not self._take_todo(now, todo):
                Dispatch.update(state="cancelled").where(Dispatch.id == dispatch.id).execute()
                return self._too_late(now, invitation, dispatch, "accepted")
            session: Session = invitation.session
            Binding.create(
                todo=todo,
                dispatch=dispatch,
                session=session,
                generation=session.generation,
                created_at=now,
            )
            Obligation.create(dispatch=dispatch, due_at=now + MANAGED_OUTCOME_DUE, created_at=now)
            Outbox.update(accepted_at=now, acceptance=evidence, updated_at=now).where(
                Outbox.id == outbox_id
            ).execute()
            work_id = self._enqueue(
                now, session, dispatch, "work", self._work_payload(todo, "invitation")
            )
            self._cancel_rivals(now, todo, dispatch)
            self._event(now, "accept", subject, "invited", "accepted", evidence)
            return {"accepted": True, "dispatch": dispatch.id, "work": work_id}

        args = {"outbox": outbox_id, "nonce": nonce}
        return self._command("accept", f"accept:{outbox_id}", args, run)

    def _too_late(
        self, now: float, invitation: Outbox, dispatch: Dispatch, from_state: str
    ) -> dict[str, Any]:
        """An acceptance that lost the race for its todo: the dispatch ends cancelled."""
        subject = f"dispatch:{dispatch.id}"
        todo_id = dispatch.todo_id
        self._event(
            now, "accept", subject, from_state, "cancelled", {"reason": "todo already taken"}
        )
        self._notify(
            now,
            "accept too late",
            f"Todo #{todo_id} was already taken; {invitation.session.ref} accepted too late",
            subject,
        )
        return {
            "accepted": False,
            "dispatch": dispatch.id,
            "reason": f"Todo #{todo_id} was already taken",
        }

    def decline(self, outbox_id: str, nonce: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """The chat answered COOP_DECLINE: the dispatch is declined, the todo open again."""

        def run(now: float) -> dict[str, Any]:
            invitation = self._outbox(outbox_id)
            if invitation.kind == "invitation" and invitation.state != "delivered":
                raise Conflict(f"Invitation {outbox_id} is {invitation.state}: no receipt yet")
            dispatch = self._invitation_dispatch(invitation)
            if invitation.kind != "invitation" or not secrets.compare_digest(
                dispatch.nonce or "", nonce
            ):
                raise Conflict("COOP_DECLINE nonce does not match this invitation")
            changed = (
                Dispatch.update(state="declined")
                .where((Dispatch.id == dispatch.id) & (Dispatch.state == "invited"))
                .execute()
            )
            if changed != 1:
                raise Conflict(f"Dispatch {dispatch.id} is {dispatch.state}, not invited")
            others = Dispatch.select().where(
                (Dispatch.todo == dispatch.todo) & (Dispatch.state == "invited")
            )
            if not others.exists():
                self._move_todo(now, "decline", dispatch.todo_id, "invited", "open")
            self._event(now, "decline", f"dispatch:{dispatch.id}", "invited", "declined", evidence)
            self._notify(
                now,
                "invitation declined",
                f"{invitation.session.ref} declined todo #{dispatch.todo_id}",
                f"dispatch:{dispatch.id}",
            )
            return {"declined": True, "dispatch": dispatch.id}

        args = {"outbox": outbox_id, "nonce": nonce}
        return self._command("decline", f"decline:{outbox_id}", args, run)
