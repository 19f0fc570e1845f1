"""Outcome obligations, fact 5's backstop (seed 003): each take owes an outcome, due 2 h
after a managed accept and 3 h after a legacy CLI take.

An obligation is `open` while its due time is ahead (due), `overdue` once it has passed
with no outcome (Dad is told; a legacy take's goes to the chief for review), `reviewed`
when Dad or the chief decided the work goes on (`wait`: still owed), `met` when the
outcome comes (report_outcome), and `closed` when Dad or the chief released the take
(`release`: nobody owes it; the todo is open again). Only an overdue obligation is
reviewed; a reviewed one may still be released. Nothing here decides on its own.
"""

from __future__ import annotations

from typing import Any

from coop_engine import prompts
from coop_engine.dispatching import DispatchCommands, parse_session_ref
from coop_engine.errors import BadInput, Conflict, NotAuthorized, NotFound
from coop_engine.formats import iso
from coop_engine.frame import fresh_key
from coop_engine.models import Binding, Dispatch, Obligation, Outbox, Session, Setting

# A decision on an overdue obligation, and the state it leaves the obligation in.
DECISIONS = {"wait": "reviewed", "release": "closed"}
# The states each decision may be taken from.
DECIDED_FROM = {"wait": ("overdue",), "release": ("overdue", "reviewed")}
REVIEWERS = ("dad", "chief")
OWED = ("open", "overdue", "reviewed")  # what an outcome report meets


class ObligationCommands(DispatchCommands):
    def sweep_obligations(self) -> dict[str, Any]:
        """Open obligations past their due time become overdue, and Dad is told, once
        each: the notice says who is asked to review it, or how to decide it."""

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
                asked = self._chief_reviews(now, obligation) if obligation.legacy else None
                decide = asked or f"decide: {prompts.review_command(obligation.id, 'dad')}"
                self._notify(
                    now,
                    "obligation overdue",
                    f"Todo #{obligation.dispatch.todo_id} has no outcome yet; {decide}",
                    subject,
                )
            return {"overdue": overdue}

        return self._command("sweep_obligations", fresh_key("sweep"), {}, run)

    def _chief_reviews(self, now: float, obligation: Obligation) -> str | None:
        """A legacy take's overdue obligation goes to the chief as one review envelope
        (once: only the sweep whose compare-and-set moved the obligation gets here), when
        Coop can deliver to the chief: a chief Coop only observes (a CLI taker not yet
        adopted) is sent nothing, since nothing would ever deliver it. Returns what Dad's
        notice says of the review; None without a chief (Dad decides)."""
        chief = Setting.get_or_none(Setting.name == "chief")
        host = (chief.value or {}).get("host") if chief is not None else None
        if chief is None or not host:
            return None
        ref = str(chief.value["session"])
        vendor, native_id = parse_session_ref(ref)
        known = Session.get_or_none(
            (Session.vendor == vendor) & (Session.host == host) & (Session.native_id == native_id)
        )
        if known is not None and known.mode != "managed":
            return (
                f"the chief ({ref}) is a chat Coop only observes, so no review is sent to it;"
                f" decide: {prompts.review_command(obligation.id, 'dad')}"
            )
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
            obligation.id,
        )
        payload = {"text": text, "obligation": obligation.id, "todo": dispatch.todo_id}
        self._enqueue(now, session, None, "review", payload)
        return f"the chief ({ref}) is asked to review it"

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

    def review_obligation(
        self, obligation_id: int, decision: str, by: str, *, key: str | None = None
    ) -> dict[str, Any]:
        """Dad's or the chief's decision on an overdue obligation, recorded: `wait` (the
        work goes on: overdue -> reviewed, still owed until its outcome) or `release`
        (nobody does it: overdue or reviewed -> closed; the dispatch is cancelled, its
        binding released, its envelopes not yet sent cancelled, and the todo is open
        again). Either way a review still waiting to be sent to the chief is cancelled."""
        if by not in REVIEWERS:
            raise NotAuthorized("An obligation is reviewed by dad or chief")
        if decision not in DECISIONS:
            raise BadInput(f"A review decides wait or release, not {decision!r}")

        def run(now: float) -> dict[str, Any]:
            obligation = Obligation.get_or_none(Obligation.id == obligation_id)
            if obligation is None:
                raise NotFound(f"No obligation {obligation_id}")
            allowed = DECIDED_FROM[decision]
            to_state = DECISIONS[decision]
            changed = (
                Obligation.update(state=to_state, decision=decision, decided_by=by, decided_at=now)
                .where((Obligation.id == obligation_id) & Obligation.state.in_(allowed))
                .execute()
            )
            if changed != 1:
                raise Conflict(_not_reviewable(Obligation.get_by_id(obligation_id)))
            todo = obligation.dispatch.todo_id
            evidence = {"decision": decision, "todo": todo}
            subject = f"obligation:{obligation_id}"
            self._event(
                now, "review_obligation", subject, obligation.state, to_state, evidence, who=by
            )
            if decision == "release":
                self._release(now, obligation.dispatch, by)
            self._withdraw_reviews(now, obligation_id, decision)
            return {"obligation": obligation_id, "todo": todo, "state": to_state, "by": by}

        args = {"obligation": obligation_id, "decision": decision, "by": by}
        key = key or fresh_key(f"review:{obligation_id}")
        return self._command("review_obligation", key, args, run)

    def _release(self, now: float, dispatch: Dispatch, by: str) -> None:
        """A take given up by decision: the dispatch cancelled, its binding released, its
        envelopes not yet sent cancelled, the todo open again (it may be invited anew)."""
        changed = (
            Dispatch.update(state="cancelled")
            .where((Dispatch.id == dispatch.id) & (Dispatch.state == "accepted"))
            .execute()
        )
        if changed != 1:
            raise Conflict(f"Dispatch {dispatch.id} is {dispatch.state}: nothing to release")
        Binding.update(state="released").where(
            (Binding.dispatch == dispatch.id) & (Binding.state == "active")
        ).execute()
        pending = Outbox.select(Outbox.id).where(
            (Outbox.dispatch == dispatch.id) & (Outbox.state == "pending")
        )
        for envelope in list(pending):
            self._cancel_pending(now, envelope.id, {"released_by": by})
        self._event(
            now,
            "review_obligation",
            f"dispatch:{dispatch.id}",
            "accepted",
            "cancelled",
            {"released_by": by},
            who=by,
        )
        self._move_todo(now, "review_obligation", dispatch.todo_id, "taken", "open")

    def _meet_obligations(self, now: float, dispatch_id: int, command: str) -> None:
        """The outcome came: whatever the dispatch still owes is met, and a review not
        yet sent to the chief is no longer asked for."""
        owed = Obligation.select().where(
            (Obligation.dispatch == dispatch_id) & Obligation.state.in_(OWED)
        )
        for obligation in list(owed):
            changed = (
                Obligation.update(state="met", met_at=now)
                .where((Obligation.id == obligation.id) & (Obligation.state == obligation.state))
                .execute()
            )
            if changed:
                self._event(now, command, f"obligation:{obligation.id}", obligation.state, "met")
                self._withdraw_reviews(now, obligation.id, "outcome")

    def _withdraw_reviews(self, now: float, obligation_id: int, decided: str) -> None:
        """Review envelopes about this obligation that were never sent: cancelled, the
        decision they asked for being made (`decided`: wait, release or outcome)."""
        pending = Outbox.select(Outbox.id, Outbox.payload).where(
            (Outbox.kind == "review") & (Outbox.state == "pending")
        )
        for envelope in list(pending):
            if (envelope.payload or {}).get("obligation") == obligation_id:
                evidence = {"obligation": obligation_id, "decided": decided}
                self._cancel_pending(now, envelope.id, evidence)

    def _cancel_pending(self, now: float, outbox_id: str, evidence: dict[str, Any]) -> None:
        """A pending envelope no longer needed: cancelled (compare-and-set), with its
        event (`cancel`, as a todo's rival invitations are)."""
        changed = (
            Outbox.update(state="cancelled", updated_at=now)
            .where((Outbox.id == outbox_id) & (Outbox.state == "pending"))
            .execute()
        )
        if changed:
            self._event(now, "cancel", f"outbox:{outbox_id}", "pending", "cancelled", evidence)


def _not_reviewable(obligation: Obligation) -> str:
    """Why the decision asked for cannot be taken on the obligation as it is, in one
    line (a wait on a reviewed one, or any decision on one not overdue)."""
    todo = obligation.dispatch.todo_id
    name = f"Obligation {obligation.id} (todo #{todo})"
    if obligation.state == "open":
        return f"{name} is due at {iso(obligation.due_at, 'seconds')}: it is reviewed once overdue"
    if obligation.state == "met":
        return f"{name} is met: todo #{todo} has its outcome"
    if obligation.state == "closed":
        return f"{name} is closed: {obligation.decided_by} released the take"
    return f"{name} is reviewed already: {obligation.decided_by} decided the work goes on"
