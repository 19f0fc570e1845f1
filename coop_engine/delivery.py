"""Delivery commands: intent before I/O, transport, receipts, conflicts, expiry, Send again.

An envelope moves pending -> uncertain (before the first byte) -> delivered (a receipt
from the receiver's transcript) or expired (evidence of loss, one of three reasons).
Nothing here retries: the only second attempt is `resend`, a decision by Dad or the chief.
"""

from __future__ import annotations

from typing import Any

import peewee as pw

from coop_engine import prompts
from coop_engine.dispatching import DispatchCommands
from coop_engine.errors import (
    ALREADY_SENT_AGAIN,
    HELD_NOT_LOST,
    NOT_ELIGIBLE_FOR_SEND,
    NOT_TAKEN_BACK,
    Conflict,
    NotAuthorized,
)
from coop_engine.frame import fresh_key
from coop_engine.lease import check_fence
from coop_engine.models import Binding, Dispatch, HostQueue, Outbox, QueueSighting, Session

HELD_THEN_EXPIRED = "held-for-approval-then-expired"
EXPIRY_REASONS = (
    "refused-by-receiver-policy",
    HELD_THEN_EXPIRED,
    "receiver-idle-without-entry",
)
# The Codex door's one proof of loss: Codex answered `deleted: true` to a withdrawal.
WITHDRAWN_FROM_QUEUE = "withdrawn-from-queue"
REASONS_BY_VENDOR = {"claude": EXPIRY_REASONS, "codex": (WITHDRAWN_FROM_QUEUE,)}
DECIDERS = ("dad", "chief")


class DeliveryCommands(DispatchCommands):
    def mark_uncertain(
        self, outbox_id: str, cursor: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Record the intent to send before any byte leaves: pending -> uncertain, plus
        the host-queue row, in one durable commit. Refuses anything not pending, and an
        envelope of an older generation than its session's; Fenced, writing nothing,
        when this process sends under a lease epoch that is no longer current."""

        def run(now: float) -> dict[str, Any]:
            if self.epoch is not None:
                check_fence(self.db, self.epoch)
            current = Session.select(Session.generation).where(Session.id == Outbox.session)
            changed = (
                Outbox.update(
                    state="uncertain",
                    cursor=cursor,
                    observed_offset=int(cursor.get("offset") or 0),
                    last_error=None,
                    updated_at=now,
                )
                .where(
                    (Outbox.id == outbox_id)
                    & (Outbox.state == "pending")
                    & (Outbox.generation == current)
                )
                .execute()
            )
            if changed != 1:
                self._outbox(outbox_id)
                raise Conflict(NOT_ELIGIBLE_FOR_SEND)
            attempt = HostQueue.select().where(HostQueue.outbox == outbox_id).count() + 1
            HostQueue.create(
                host=cursor.get("host", ""),
                outbox=outbox_id,
                attempt=attempt,
                state="intent",
                created_at=now,
                updated_at=now,
            )
            self._event(
                now, "mark_uncertain", f"outbox:{outbox_id}", "pending", "uncertain", cursor
            )
            return {"outbox": outbox_id, "attempt": attempt}

        # Each attempt is its own decision: a second coordinator must lose the
        # compare-and-set, not replay the first one's success and send again.
        args = {"outbox": outbox_id, "cursor": cursor}
        return self._command("mark_uncertain", key or fresh_key(f"send:{outbox_id}"), args, run)

    def record_transport(
        self, outbox_id: str, attempt: int, result: dict[str, Any], *, key: str | None = None
    ) -> dict[str, Any]:
        """Fact 2, from the host's answer to the send.

        `result["written"]` False means the host refused before connecting (its third
        registry read, or a connect that failed): nothing reached the chat, so the row
        goes back to pending with `last_error`. A write that failed after connecting
        leaves the row uncertain: bytes may have left."""
        ok = bool(result.get("ok"))
        written = bool(result.get("written"))

        def run(now: float) -> dict[str, Any]:
            subject = f"outbox:{outbox_id}"
            if ok:
                Outbox.update(
                    transport_at=now, transport=result, refusals=None, updated_at=now
                ).where((Outbox.id == outbox_id) & Outbox.transport_at.is_null()).execute()
                self._queue_state(outbox_id, attempt, "written", None, now)
                self._event(now, "record_transport", subject, None, None, result)
                return {"outbox": outbox_id, "state": "uncertain"}
            error = result.get("error")
            if not written:
                before = self._outbox(outbox_id)
                uncertain = (Outbox.id == outbox_id) & (Outbox.state == "uncertain")
                if self._count_refusal(uncertain, str(error), now, state="pending") != 1:
                    raise Conflict(f"Envelope {outbox_id} is not an uncertain send")
                self._queue_state(outbox_id, attempt, "refused", error, now)
                self._event(now, "record_transport", subject, "uncertain", "pending", result)
                if not before.refusals:
                    self._refused_first(now, outbox_id, str(error))
                return {"outbox": outbox_id, "state": "pending"}
            Outbox.update(transport=result, updated_at=now).where(Outbox.id == outbox_id).execute()
            self._queue_state(outbox_id, attempt, "failed", error, now)
            self._event(now, "record_transport", subject, None, None, result)
            return {"outbox": outbox_id, "state": "uncertain"}

        args = {"outbox": outbox_id, "attempt": attempt, "result": result}
        return self._command(
            "record_transport", key or f"transport:{outbox_id}:{attempt}", args, run
        )

    @staticmethod
    def _queue_state(outbox_id: str, attempt: int, state: str, detail: Any, now: float) -> None:
        HostQueue.update(state=state, detail=detail, updated_at=now).where(
            (HostQueue.outbox == outbox_id) & (HostQueue.attempt == attempt)
        ).execute()

    def record_refusal(self, outbox_id: str, error: str, *, tried: bool = True) -> dict[str, Any]:
        """An envelope that stays pending, `last_error` saying why. `tried`: a try that
        wrote nothing (no live match, receiver changed, socket not private): it counts
        towards the next try's wait (coop_engine/backoff.py), and the first one in a row
        is told to Dad once. Not `tried`: a wait Coop chose (pacing, a Mac not in the
        fleet), which repeats as a no-op while its reason is unchanged."""
        row = self._outbox(outbox_id)
        if not tried and row.last_error == error:
            return {"outbox": outbox_id, "state": row.state}

        def run(now: float) -> dict[str, Any]:
            pending = (Outbox.id == outbox_id) & (Outbox.state == "pending")
            if tried:
                changed = self._count_refusal(pending, error, now)
            else:
                # Compare-and-set on the old text too: a concurrent identical wait is a no-op.
                changed = (
                    Outbox.update(last_error=error, updated_at=now)
                    .where(pending & ((Outbox.last_error != error) | Outbox.last_error.is_null()))
                    .execute()
                )
            if changed != 1:
                state = self._outbox(outbox_id).state
                if state == "pending":
                    return {"outbox": outbox_id, "state": state}
                raise Conflict(f"Envelope {outbox_id} is no longer pending")
            if row.last_error != error:
                evidence = {"error": error}
                self._event(
                    now, "record_refusal", f"outbox:{outbox_id}", "pending", "pending", evidence
                )
            if tried and not row.refusals:
                self._refused_first(now, outbox_id, error)
            return {"outbox": outbox_id, "state": "pending"}

        args = {"outbox": outbox_id, "error": error, "tried": tried}
        return self._command("record_refusal", fresh_key(f"refusal:{outbox_id}"), args, run)

    @staticmethod
    def _count_refusal(where: Any, error: str, now: float, **also: Any) -> int:
        """One more try in a row that wrote nothing (compare-and-set on `where`)."""
        return int(
            Outbox.update(
                last_error=error,
                refusals=pw.fn.COALESCE(Outbox.refusals, 0) + 1,
                refused_at=now,
                updated_at=now,
                **also,
            )
            .where(where)
            .execute()
        )

    def _refused_first(self, now: float, outbox_id: str, error: str) -> None:
        """The first try in a row that wrote nothing: an alert, once."""
        subject = f"outbox:{outbox_id}"
        self._event(now, "refused_before_sending", subject, "pending", "pending", {"error": error})
        self._notify(now, "not sent", f"Envelope {outbox_id} could not be sent: {error}", subject)

    def record_receipt(self, outbox_id: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """Fact 3: a peer entry with the exact id and provenance. uncertain -> delivered."""

        def run(now: float) -> dict[str, Any]:
            changed = (
                Outbox.update(state="delivered", received_at=now, receipt=evidence, updated_at=now)
                .where((Outbox.id == outbox_id) & (Outbox.state == "uncertain"))
                .execute()
            )
            if changed != 1:
                state = self._outbox(outbox_id).state
                raise Conflict(f"Envelope {outbox_id} is {state}, not an uncertain send")
            self._event(
                now, "record_receipt", f"outbox:{outbox_id}", "uncertain", "delivered", evidence
            )
            return {"outbox": outbox_id, "state": "delivered"}

        return self._command(
            "record_receipt",
            f"receipt:{outbox_id}",
            {"outbox": outbox_id, "evidence": evidence},
            run,
        )

    def record_conflict(self, outbox_id: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """A sighting that is not a receipt: wrong provenance, or the same envelope again.
        The envelope's state does not move; the conflict is shown and Dad is told."""
        reason = str(evidence.get("reason") or "conflict")

        def run(now: float) -> dict[str, Any]:
            self._outbox(outbox_id)
            Outbox.update(conflict=reason, updated_at=now).where(Outbox.id == outbox_id).execute()
            self._event(now, "record_conflict", f"outbox:{outbox_id}", None, None, evidence)
            self._notify(
                now, "delivery conflict", f"Envelope {outbox_id}: {reason}", f"outbox:{outbox_id}"
            )
            return {"outbox": outbox_id, "conflict": reason}

        key = f"conflict:{outbox_id}:{evidence.get('offset')}:{reason}"
        return self._command(
            "record_conflict", key, {"outbox": outbox_id, "evidence": evidence}, run
        )

    def record_held(self, outbox_id: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """The receiver's held notice for this envelope: evidence, not a verdict."""

        def run(now: float) -> dict[str, Any]:
            Outbox.update(held=evidence, updated_at=now).where(
                (Outbox.id == outbox_id) & Outbox.held.is_null()
            ).execute()
            self._event(now, "record_held", f"outbox:{outbox_id}", None, None, evidence)
            return {"outbox": outbox_id}

        key = f"held:{outbox_id}"
        return self._command("record_held", key, {"outbox": outbox_id, "evidence": evidence}, run)

    def record_queue(self, outbox_id: str, seen: dict[str, Any]) -> dict[str, Any]:
        """What the survey saw of a Codex envelope in Codex's own queue (`queued`: its id
        still waits there; `open`: the thread is held open): an observation, never a
        transition. Recorded, with an event, only when it changed."""
        seen = {"queued": bool(seen.get("queued")), "open": bool(seen.get("open"))}
        known = QueueSighting.get_or_none(QueueSighting.outbox == outbox_id)
        if known is not None and {"queued": known.queued, "open": known.open} == seen:
            return {"outbox": outbox_id, "changed": False}

        def run(now: float) -> dict[str, Any]:
            self._outbox(outbox_id)
            QueueSighting.insert(outbox=outbox_id, seen_at=now, **seen).on_conflict(
                conflict_target=[QueueSighting.outbox], update={**seen, "seen_at": now}
            ).execute()
            self._event(now, "record_queue", f"outbox:{outbox_id}", None, None, seen)
            return {"outbox": outbox_id, "changed": True}

        args = {"outbox": outbox_id, "seen": seen}
        return self._command("record_queue", fresh_key(f"queue:{outbox_id}"), args, run)

    def ask_withdrawal(self, outbox_id: str, by: str, queued_id: str) -> dict[str, Any]:
        """The intent to take a Codex envelope back out of Codex's queue, recorded
        before Codex is asked: a crash before its answer leaves the ask on record."""
        if by not in DECIDERS:
            raise NotAuthorized("Withdrawing is decided by dad or chief")

        def run(now: float) -> dict[str, Any]:
            row = self._outbox(outbox_id)
            if row.state != "uncertain" or row.session.vendor != "codex":
                raise Conflict(
                    f"Envelope {outbox_id} is {row.state}: only a Codex envelope sent and "
                    "not yet received can be taken back out of Codex's queue"
                )
            evidence = {"by": by, "queued_id": queued_id}
            self._event(now, "ask_withdrawal", f"outbox:{outbox_id}", None, None, evidence, who=by)
            return {"outbox": outbox_id, "queued_id": queued_id}

        args = {"outbox": outbox_id, "by": by, "queued_id": queued_id}
        return self._command("ask_withdrawal", fresh_key(f"withdrawal:{outbox_id}"), args, run)

    def advance_cursor(self, outbox_id: str, offset: int) -> None:
        """Move the transcript bookmark forward (never back). A bookmark, not a transition;
        a write all the same, refused in a read-only process."""
        self._writable()
        Outbox.update(observed_offset=offset).where(
            (Outbox.id == outbox_id) & (Outbox.observed_offset < offset)
        ).execute()

    def expire(self, outbox_id: str, evidence: dict[str, Any]) -> dict[str, Any]:
        """uncertain -> expired, only with evidence carrying one of its door's reasons:
        the Claude door's three, or the Codex door's `withdrawn-from-queue`."""
        reason = evidence.get("reason")
        vendor = self._outbox(outbox_id).session.vendor
        allowed_reasons = REASONS_BY_VENDOR.get(vendor, ())
        if reason not in allowed_reasons:
            raise Conflict(
                f"Expiry of a {vendor} delivery needs evidence with one of the reasons "
                + ", ".join(allowed_reasons)
            )

        def run(now: float) -> dict[str, Any]:
            held = self._outbox(outbox_id).held
            if held is not None and not (
                reason == HELD_THEN_EXPIRED and held.get("cause") == "parity"
            ):
                # The receiver said it holds the frame and why: only a parity hold's
                # expiry proves it lost; neither silence nor the prediction does (an
                # explicit hold keeps the receiver idle).
                raise Conflict(HELD_NOT_LOST.format(id=outbox_id, reason=reason))
            # A held notice is recorded once and never changes: compare it as read.
            unchanged = Outbox.held.is_null() if held is None else Outbox.held == held
            allowed = (Outbox.state == "uncertain") & unchanged
            changed = (
                Outbox.update(state="expired", expiry=evidence, updated_at=now)
                .where((Outbox.id == outbox_id) & allowed)
                .execute()
            )
            if changed != 1:
                row = self._outbox(outbox_id)
                if row.state == "uncertain":  # a held notice was recorded meanwhile
                    raise Conflict(HELD_NOT_LOST.format(id=outbox_id, reason=reason))
                raise Conflict(f"Envelope {outbox_id} is {row.state}, not an uncertain send")
            subject = f"outbox:{outbox_id}"
            self._event(now, "expire", subject, "uncertain", "expired", evidence)
            self._notify(
                now,
                "delivery expired",
                f"Envelope {outbox_id} was not delivered: {reason}",
                subject,
            )
            return {"outbox": outbox_id, "state": "expired", "reason": reason}

        args = {"outbox": outbox_id, "evidence": evidence}
        return self._command("expire", f"expire:{outbox_id}", args, run)

    def resend(self, outbox_id: str, by: str, *, key: str | None = None) -> dict[str, Any]:
        """Send again (seed 001's `_resend`): only an expired row; only an invitation whose
        dispatch is still invited or a work envelope whose dispatch has an active binding;
        once. The decision is Dad's, or the chief's as his proxy."""
        if by not in DECIDERS:
            raise NotAuthorized("Send again is decided by dad or chief")

        def run(now: float) -> dict[str, Any]:
            old = self._outbox(outbox_id)
            if old.resent_as:
                raise Conflict(ALREADY_SENT_AGAIN)
            if old.state != "expired":
                raise Conflict(
                    f"Only an expired delivery can be sent again; this one is {old.state}"
                )
            self._check_resendable(old)
            reason = (old.expiry or {}).get("reason", "expired")
            new_id = self._second_attempt(now, old, reason)
            changed = (
                Outbox.update(resent_as=new_id, updated_at=now)
                .where(
                    (Outbox.id == outbox_id)
                    & Outbox.resent_as.is_null()
                    & (Outbox.state == "expired")
                )
                .execute()
            )
            if changed != 1:
                raise Conflict(ALREADY_SENT_AGAIN)
            evidence = {"resent_as": new_id, "reason": reason}
            self._event(
                now, "resend", f"outbox:{outbox_id}", "expired", "expired", evidence, who=by
            )
            self._event(
                now,
                "resend",
                f"outbox:{new_id}",
                None,
                "pending",
                {"resent_from": outbox_id},
                who=by,
            )
            return {"outbox": new_id, "resent_from": outbox_id}

        args = {"outbox": outbox_id, "by": by}
        return self._command("resend", key or fresh_key(f"resend:{outbox_id}"), args, run)

    def _second_attempt(self, now: float, old: Outbox, reason: str) -> str:
        """The new envelope: the same work, saying it is attempt N and why, so its text
        never equals the first (receivers drop an identical body within 30 s)."""
        new_id = self.new_id()
        original = old.payload.get("original_text", old.payload["text"])
        attempt = int(old.payload.get("attempt", 1)) + 1
        payload = {
            **old.payload,
            "attempt": attempt,
            "original_text": original,
            "text": prompts.another_attempt(attempt, old.id, reason, original),
        }
        Outbox.create(
            id=new_id,
            session=old.session,
            generation=old.session.generation,
            dispatch=old.dispatch,
            kind=old.kind,
            payload=payload,
            created_at=now,
            updated_at=now,
            resent_from=old.id,
        )
        return new_id

    @staticmethod
    def _check_resendable(old: Outbox) -> None:
        dispatch: Dispatch | None = old.dispatch
        if dispatch is None:
            raise Conflict("Only an invitation or a work envelope can be sent again")
        if old.kind == "invitation":
            if dispatch.state != "invited":
                raise Conflict(f"The invitation's dispatch is {dispatch.state}, no longer invited")
            return
        if old.kind == "work":
            active = Binding.select().where(
                (Binding.dispatch == dispatch) & (Binding.state == "active")
            )
            if not active.exists():
                raise Conflict("The work's dispatch no longer has an active binding")
            return
        raise Conflict("Only an invitation or a work envelope can be sent again")

    def withdraw(self, outbox_id: str, by: str) -> dict[str, Any]:
        """Take back an envelope no byte of which was sent: pending -> cancelled, recorded
        as Dad's (or the chief's) decision; an invitation's dispatch is cancelled with
        it. A sent frame cannot be taken back: it is watched until its receipt or its
        proof of loss."""
        if by not in DECIDERS:
            raise NotAuthorized("Withdrawing is decided by dad or chief")

        def run(now: float) -> dict[str, Any]:
            changed = (
                Outbox.update(state="cancelled", updated_at=now)
                .where((Outbox.id == outbox_id) & (Outbox.state == "pending"))
                .execute()
            )
            row = self._outbox(outbox_id)
            if changed != 1:
                if row.state == "uncertain":
                    raise Conflict(NOT_TAKEN_BACK)
                raise Conflict(
                    f"Envelope {outbox_id} is {row.state}: only a pending one can be withdrawn"
                )
            subject = f"outbox:{outbox_id}"
            self._event(now, "withdraw", subject, "pending", "cancelled", {"by": by}, who=by)
            if row.kind == "invitation" and row.dispatch_id is not None:
                self._withdraw_invitation(now, row.dispatch_id, by)
            return {"outbox": outbox_id, "state": "cancelled"}

        args = {"outbox": outbox_id, "by": by}
        return self._command("withdraw", fresh_key(f"withdraw:{outbox_id}"), args, run)

    def _withdraw_invitation(self, now: float, dispatch_id: int, by: str) -> None:
        dispatch = Dispatch.get_by_id(dispatch_id)
        changed = (
            Dispatch.update(state="cancelled")
            .where((Dispatch.id == dispatch_id) & (Dispatch.state == "invited"))
            .execute()
        )
        if changed != 1:
            return
        self._event(now, "withdraw", f"dispatch:{dispatch_id}", "invited", "cancelled", who=by)
        others = Dispatch.select().where(
            (Dispatch.todo == dispatch.todo_id) & (Dispatch.state == "invited")
        )
        if not others.exists():
            self._move_todo(now, "withdraw", dispatch.todo_id, "invited", "open")

    def cancel_stale(self, *, key: str | None = None) -> dict[str, Any]:
        """At start: cancel pending envelopes that an older generation left behind."""

        def run(now: float) -> dict[str, Any]:
            current = Session.select(Session.generation).where(Session.id == Outbox.session)
            stale = [
                row.id
                for row in Outbox.select(Outbox.id).where(
                    (Outbox.state == "pending") & (Outbox.generation < current)
                )
            ]
            for outbox_id in stale:
                changed = (
                    Outbox.update(state="cancelled", updated_at=now)
                    .where((Outbox.id == outbox_id) & (Outbox.state == "pending"))
                    .execute()
                )
                if changed:
                    self._event(now, "cancel_stale", f"outbox:{outbox_id}", "pending", "cancelled")
            return {"cancelled": stale}

        return self._command("cancel_stale", key or fresh_key("cancel_stale"), {}, run)
