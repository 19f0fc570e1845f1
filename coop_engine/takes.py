"""Commands that hand out work: invite, accept, decline, the CLI take, adoption, outcomes."""

from __future__ import annotations

import secrets
import string
from typing import Any

from coop_engine import texts
from coop_engine.commands import CommandBase, fresh_key
from coop_engine.errors import (
    ENROLLMENT_CLASH,
    ONLY_CLI_TAKER_ADOPTED,
    Conflict,
    NotAuthorized,
)
from coop_engine.models import Binding, Dispatch, Obligation, Outbox, Session, Todo

MANAGED_OUTCOME_DUE = 2 * 3600
LEGACY_OUTCOME_DUE = 3 * 3600
REPORTERS = ("dad", "chief", "worker")
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


class TakeCommands(CommandBase):
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
        make = texts.cli_take_work if source == "cli-take" else texts.work
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

    def invite(
        self,
        todo_id: int,
        session_ref: str,
        host: str,
        *,
        name: str | None = None,
        cwd: str | None = None,
        key: str | None = None,
    ) -> dict[str, Any]:
        """A dispatch `invited` with a fresh nonce, and its invitation envelope."""
        vendor, native_id = parse_session_ref(session_ref)

        def run(now: float) -> dict[str, Any]:
            todo = self._todo(todo_id)
            if todo.state not in ("open", "invited"):
                raise Conflict(f"Todo #{todo_id} is {todo.state}; it cannot be offered")
            session = self._managed_session(now, vendor, native_id, host, name, cwd)
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
                "text": texts.invitation(todo.id, todo.title, todo.body, nonce),
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
        session = Session.get_or_none(
            (Session.vendor == vendor) & (Session.host == host) & (Session.native_id == native_id)
        )
        if session is None:
            session = Session.create(
                vendor=vendor,
                host=host,
                native_id=native_id,
                mode="managed",
                surface="native",
                status="unknown",
                name=name,
                cwd=cwd,
                created_at=now,
                updated_at=now,
            )
            self._event(
                now,
                "enroll",
                f"session:{session.id}",
                None,
                "managed",
                {"session": session.ref, "host": host},
            )
        elif session.mode != "managed":
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

    def take_cli(
        self, todo_id: int, session_ref: str | None, host: str, *, key: str | None = None
    ) -> dict[str, Any]:
        """A take typed through the CLI (seed 003). Unknown chat: an observed
        compatibility row (status unknown), an accepted cli-take dispatch, a binding and a
        legacy obligation due in 3 h. No session: still a take, with the legacy
        obligation. A managed chat: the binding under it and the work envelope at once."""
        parsed = parse_session_ref(session_ref) if session_ref else None

        def run(now: float) -> dict[str, Any]:
            todo = self._todo(todo_id)
            if not self._take_todo(now, todo):
                raise Conflict(f"Todo #{todo_id} is {todo.state}; it cannot be taken")
            receipt = {"source": "cli-take", "session": session_ref, "host": host}
            session = self._taker_session(now, parsed, host) if parsed else None
            dispatch = Dispatch.create(
                todo=todo,
                session=session,
                state="accepted",
                receipt=receipt,
                created_at=now,
                accepted_at=now,
            )
            self._cancel_rivals(now, todo, dispatch)
            managed = session is not None and session.mode == "managed"
            due = MANAGED_OUTCOME_DUE if managed else LEGACY_OUTCOME_DUE
            Obligation.create(
                dispatch=dispatch, due_at=now + due, legacy=not managed, created_at=now
            )
            result: dict[str, Any] = {
                "dispatch": dispatch.id,
                "session": session.id if session else None,
            }
            if session is not None:
                Binding.create(
                    todo=todo,
                    dispatch=dispatch,
                    session=session,
                    generation=session.generation,
                    created_at=now,
                )
                if managed:
                    result["work"] = self._enqueue(
                        now, session, dispatch, "work", self._work_payload(todo, "cli-take")
                    )
            self._event(
                now, "take_cli", f"dispatch:{dispatch.id}", None, "accepted", receipt, who="worker"
            )
            return result

        args = {"todo": todo_id, "session": session_ref, "host": host}
        return self._command("take_cli", key or fresh_key(f"take:{todo_id}"), args, run)

    def _taker_session(self, now: float, parsed: tuple[str, str], host: str) -> Session:
        vendor, native_id = parsed
        session = Session.get_or_none(
            (Session.vendor == vendor) & (Session.host == host) & (Session.native_id == native_id)
        )
        if session is None:
            session = Session.create(
                vendor=vendor,
                host=host,
                native_id=native_id,
                mode="observed",
                surface="compatibility",
                status="unknown",
                created_at=now,
                updated_at=now,
            )
            self._event(
                now,
                "observe",
                f"session:{session.id}",
                None,
                "observed",
                {"session": session.ref, "host": host},
            )
        return session

    def adopt_take(self, session_id: int, identity: dict[str, Any]) -> dict[str, Any]:
        """Seed 003's adoption: the CLI taker's own row made managed in place at a new
        generation; bindings and pending envelopes move with it; each CLI dispatch gets the
        work envelope it never had. Nothing is claimed or released here; ownership was the
        chat's already."""
        host = str(identity["host"])

        def run(now: float) -> dict[str, Any]:
            session = self._session(session_id)
            if (
                session.mode != "observed"
                or session.surface != "compatibility"
                or not session.native_id
            ):
                raise Conflict(ONLY_CLI_TAKER_ADOPTED)
            clash = Session.get_or_none(
                (Session.vendor == session.vendor)
                & (Session.host == host)
                & (Session.native_id == session.native_id)
                & (Session.id != session_id)
            )
            if clash is not None:
                raise Conflict(ENROLLMENT_CLASH.format(host=host, id=clash.id))
            generation = session.generation + 1
            changed = (
                Session.update(
                    mode="managed",
                    surface="native",
                    enrollment="active",
                    generation=generation,
                    host=host,
                    status=identity.get("status") or "unknown",
                    name=identity.get("name") or session.name,
                    updated_at=now,
                )
                .where(
                    (Session.id == session_id)
                    & (Session.mode == "observed")
                    & (Session.surface == "compatibility")
                )
                .execute()
            )
            if changed != 1:
                raise Conflict(ONLY_CLI_TAKER_ADOPTED)
            active = Binding.select().where(
                (Binding.session == session_id) & (Binding.state == "active")
            )
            dispatch_ids = sorted({b.dispatch_id for b in active})
            Binding.update(generation=generation).where(
                (Binding.session == session_id) & (Binding.state == "active")
            ).execute()
            moved = (
                Outbox.update(generation=generation, updated_at=now)
                .where((Outbox.session == session_id) & (Outbox.state == "pending"))
                .execute()
            )
            session = self._session(session_id)
            work = []
            for dispatch_id in dispatch_ids:
                dispatch = self._dispatch(dispatch_id)
                receipt = {
                    **dispatch.receipt,
                    "adopted": {"at": now, "host": host, "generation": generation},
                }
                Dispatch.update(receipt=receipt).where(Dispatch.id == dispatch_id).execute()
                work.append(
                    self._enqueue(
                        now,
                        session,
                        dispatch,
                        "work",
                        self._work_payload(dispatch.todo, "cli-take"),
                    )
                )
            subject = f"session:{session_id}"
            self._event(
                now,
                "adopt_take",
                subject,
                "observed",
                "managed",
                {**identity, "generation": generation},
            )
            self._notify(
                now,
                "chat enrolled",
                f"chat enrolled: {session.ref} on {host} (generation {generation})",
                subject,
            )
            return {
                "session": session_id,
                "generation": generation,
                "dispatches": dispatch_ids,
                "work": work,
                "moved": moved,
            }

        args = {"session": session_id, "identity": identity}
        return self._command("adopt_take", f"adopt:{session_id}:{host}", args, run)

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
            owed = Obligation.select().where(
                (Obligation.dispatch == dispatch.id) & Obligation.state.in_(["open", "overdue"])
            )
            for obligation in list(owed):
                changed = (
                    Obligation.update(state="met", met_at=now)
                    .where(
                        (Obligation.id == obligation.id) & (Obligation.state == obligation.state)
                    )
                    .execute()
                )
                if changed:
                    self._event(
                        now,
                        "report_outcome",
                        f"obligation:{obligation.id}",
                        obligation.state,
                        "met",
                    )
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

    def sweep_obligations(self) -> dict[str, Any]:
        """Open obligations past their due time become overdue, and Dad is told."""

        def run(now: float) -> dict[str, Any]:
            due = list(
                Obligation.select().where((Obligation.state == "open") & (Obligation.due_at <= now))
            )
            for obligation in due:
                Obligation.update(state="overdue").where(
                    (Obligation.id == obligation.id) & (Obligation.state == "open")
                ).execute()
                subject = f"dispatch:{obligation.dispatch_id}"
                self._event(
                    now, "sweep_obligations", f"obligation:{obligation.id}", "open", "overdue"
                )
                self._notify(
                    now,
                    "obligation overdue",
                    f"Todo #{obligation.dispatch.todo_id} has no outcome yet",
                    subject,
                )
            return {"overdue": [o.id for o in due]}

        return self._command("sweep_obligations", fresh_key("sweep"), {}, run)
