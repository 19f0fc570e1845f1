"""The CLI take and its adoption (seed 003): a take typed inside a chat is recorded as it
happened, and the chat behind it is enrolled in place once it is found."""

from __future__ import annotations

from typing import Any

from coop_engine.dispatching import (
    LEGACY_OUTCOME_DUE,
    MANAGED_OUTCOME_DUE,
    DispatchCommands,
    parse_session_ref,
)
from coop_engine.errors import ENROLLMENT_CLASH, ONLY_CLI_TAKER_ADOPTED, Conflict
from coop_engine.frame import fresh_key
from coop_engine.models import Binding, Dispatch, Obligation, Outbox, Session

ADOPTION_RETRY_SECONDS = 10 * 60
REFUSED_ADOPTION_HOLD_SECONDS = 48 * 3600


class TakeCommands(DispatchCommands):
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
        return self._find_or_record_session(
            now, vendor, native_id, host, mode="observed", surface="compatibility"
        )

    def adopt_take(self, session_id: int, identity: dict[str, Any]) -> dict[str, Any]:
        """Seed 003's adoption: the CLI taker's own row made managed in place at a new
        generation; bindings and pending envelopes move with it; each CLI dispatch gets the
        work envelope it never had. Nothing is claimed or released here; ownership was the
        chat's already."""
        host = str(identity["host"])

        def run(now: float) -> dict[str, Any]:
            session = self._adoptable(session_id, host)
            generation = session.generation + 1
            self._enroll_in_place(now, session, identity, generation)
            dispatch_ids, moved = self._carry_to(now, session_id, generation)
            session = self._session(session_id)
            adopted = {"at": now, "host": host, "generation": generation}
            work = [self._adopted_work(now, session, d, adopted) for d in dispatch_ids]
            subject = f"session:{session_id}"
            evidence = {**identity, "generation": generation}
            self._event(now, "adopt_take", subject, "observed", "managed", evidence)
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

    def _adoptable(self, session_id: int, host: str) -> Session:
        """The CLI taker's row, if it may be adopted on `host`; otherwise Conflict."""
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
        return session

    def _enroll_in_place(
        self, now: float, session: Session, identity: dict[str, Any], generation: int
    ) -> None:
        """Observed compatibility -> managed native, the same row (compare-and-set)."""
        changed = (
            Session.update(
                mode="managed",
                surface="native",
                enrollment="active",
                generation=generation,
                host=str(identity["host"]),
                status=identity.get("status") or "unknown",
                name=identity.get("name") or session.name,
                updated_at=now,
            )
            .where(
                (Session.id == session.id)
                & (Session.mode == "observed")
                & (Session.surface == "compatibility")
            )
            .execute()
        )
        if changed != 1:
            raise Conflict(ONLY_CLI_TAKER_ADOPTED)

    def _carry_to(self, now: float, session_id: int, generation: int) -> tuple[list[int], int]:
        """The chat's active bindings and pending envelopes move to the new generation:
        the luggage carried across the fence (seed 003, #326). Returns the bound
        dispatches and how many envelopes moved."""
        active = (Binding.session == session_id) & (Binding.state == "active")
        dispatch_ids = sorted({b.dispatch_id for b in Binding.select().where(active)})
        Binding.update(generation=generation).where(active).execute()
        moved = (
            Outbox.update(generation=generation, updated_at=now)
            .where((Outbox.session == session_id) & (Outbox.state == "pending"))
            .execute()
        )
        return dispatch_ids, int(moved)

    def _adopted_work(
        self, now: float, session: Session, dispatch_id: int, adopted: dict[str, Any]
    ) -> str:
        """A CLI dispatch's receipt marked adopted, and the work envelope it never had."""
        dispatch = self._dispatch(dispatch_id)
        receipt = {**dispatch.receipt, "adopted": adopted}
        Dispatch.update(receipt=receipt).where(Dispatch.id == dispatch_id).execute()
        payload = self._work_payload(dispatch.todo, "cli-take")
        return self._enqueue(now, session, dispatch, "work", payload)

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

    def dismiss_adoption(self, session_id: int, by: str = "dad") -> dict[str, Any]:
        """Dad has read this adoption's search record: the review stops showing it. The
        record itself stays on the session row (only `dismissed_at` is added)."""

        def run(now: float) -> dict[str, Any]:
            session = self._session(session_id)
            if not session.adoption:
                raise Conflict(f"Chat {session.ref} has no adoption search to dismiss")
            Session.update(adoption={**session.adoption, "dismissed_at": now}).where(
                Session.id == session_id
            ).execute()
            self._event(now, "dismiss_adoption", f"session:{session_id}", None, None, who=by)
            return {"session": session_id, "dismissed_at": now}

        args = {"session": session_id, "by": by}
        return self._command("dismiss_adoption", fresh_key(f"dismiss:{session_id}"), args, run)
