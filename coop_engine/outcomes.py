"""Fact 5 and its backstop: outcomes reported or decided, obligations swept, and Dad's
replies to a chat about its work."""

from __future__ import annotations

from typing import Any

from coop_engine import prompts
from coop_engine.dispatching import DispatchCommands, parse_session_ref
from coop_engine.errors import Conflict, NotAuthorized
from coop_engine.formats import iso
from coop_engine.frame import fresh_key
from coop_engine.models import Binding, Dispatch, Obligation, Outbox, Setting

REPORTERS = ("dad", "chief", "worker")


class OutcomeCommands(DispatchCommands):
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
            overdue = []
            for obligation in due:
                changed = (
                    Obligation.update(state="overdue")
                    .where((Obligation.id == obligation.id) & (Obligation.state == "open"))
                    .execute()
                )
                if changed != 1:
                    continue  # another coordinator swept it first: it told Dad already
                overdue.append(obligation.id)
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
                if obligation.legacy:
                    self._chief_reviews(now, obligation)
            return {"overdue": overdue}

        return self._command("sweep_obligations", fresh_key("sweep"), {}, run)

    def _chief_reviews(self, now: float, obligation: Obligation) -> None:
        """A legacy take's overdue obligation goes to the chief, when one is enrolled, as
        one review envelope (once: only the sweep whose compare-and-set moved the
        obligation gets here). Without a chief, Dad's notice is all there is."""
        chief = Setting.get_or_none(Setting.name == "chief")
        host = (chief.value or {}).get("host") if chief is not None else None
        if chief is None or not host:
            return
        vendor, native_id = parse_session_ref(str(chief.value["session"]))
        session = self._find_or_record_session(
            now, vendor, native_id, str(host), mode="managed", surface="native"
        )
        dispatch = obligation.dispatch
        receipt = dispatch.receipt or {}
        text = prompts.legacy_review(
            dispatch.todo_id,
            dispatch.todo.title,
            str(iso(dispatch.accepted_at or dispatch.created_at, "seconds")),
            str(receipt.get("session") or "a chat Coop could not name"),
            str(receipt.get("host") or "an unknown Mac"),
            self._known_since(dispatch),
        )
        payload = {"text": text, "obligation": obligation.id, "todo": dispatch.todo_id}
        self._enqueue(now, session, None, "review", payload)

    @staticmethod
    def _known_since(dispatch: Dispatch) -> list[str]:
        """What the ledger recorded about a taken dispatch since the take."""
        known = []
        for binding in Binding.select().where(Binding.dispatch == dispatch.id):
            session = binding.session
            known.append(
                f"{session.ref} on {session.host}: {session.mode}, status {session.status}"
            )
            search = session.adoption or {}
            if search.get("result"):
                known.append(f"the last adoption search: {search['result']}")
        work = Outbox.select().where((Outbox.dispatch == dispatch.id) & (Outbox.kind == "work"))
        known += [f"its work envelope {row.id[:8]} is {row.state}" for row in work]
        return known or ["nothing: no chat was named, so nobody watches this work"]

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
