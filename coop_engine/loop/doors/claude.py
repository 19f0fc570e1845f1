"""The Claude door: send one frame into a chat's inbox, then learn what happened from its
transcript and registry (seeds 000 and 001).

deliver: target twice and compare, predict the inbound verdict, note the transcript
offset, record the intent (uncertain), then ask the host to read a third time and write.
observe: read forward from the offset for peer entries, held notices and answers.
verdict: only the three reasons of DESIGN.md 5.7 move an uncertain send to expired.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coop_engine import identity, pacing, receipts
from coop_engine.errors import Conflict
from coop_engine.loop.doors.door import Door
from coop_engine.models import Dispatch, Outbox
from coop_engine.policy import delivery_verdict, inbound_policy
from hosts.mac.host import HostError
from hosts.mac.native import RECEIVER_CHANGED, NativeRefusal, frame

TURN_READ_BYTES = 8 << 20


class ClaudeDoor(Door):
    """The door to one Mac's Claude chats, as that Mac's survey of this pass saw them:
    the verdict reads the registry from the survey, observe reads the sightings the
    survey brought (or the Mac, for what it did not), and a send asks the Mac afresh."""

    # --- sending ----------------------------------------------------------------------

    def deliver(self, row: Outbox) -> None:
        # The receiver drops what exceeds its admission limits: such an envelope waits,
        # pending, for a later pass; its reason is recorded once while unchanged.
        paced = pacing.pace(row, self.engine.clock())
        if paced is not None:
            if row.last_error != paced:
                self.log(f"{row.id[:8]} {row.kind} waits: {paced}")
            self.engine.record_refusal(row.id, paced, tried=False)
            return
        native_id = row.session.native_id
        # Reads only, asked in one round trip (the Mac makes each reading in turn), or in
        # the survey's when this is the pass's first send (loop/surveyed.py); the first
        # refusal among them refuses the send, as when they were asked one by one.
        readings = self.host.read_together(self.before_send(row))
        try:
            for answer in readings:
                if isinstance(answer, Exception):
                    raise answer
            first, second, inputs, position = readings
            if first != second:
                raise NativeRefusal(RECEIVER_CHANGED)
            prediction = inbound_policy(inputs)
        except (NativeRefusal, HostError) as refusal:
            self.engine.record_refusal(row.id, str(refusal))
            self.log(f"{row.id[:8]} {row.kind} not sent: {refusal}")
            return
        cursor = {
            "native_session": native_id,
            "host": self.host.name,
            "transcript": position["path"],
            "offset": position["size"],
            "inode": position["inode"],
            "inbound": prediction,
            "target": first,
            "sent_at": self.engine.clock(),
        }
        try:
            intent = self.engine.mark_uncertain(row.id, cursor)
        except Conflict:
            return  # another coordinator took this envelope first
        line = frame(native_id, row.id, row.payload["text"]).decode()
        sent = f"sent to {row.session.ref} (uncertain, predicted {prediction['verdict']})"
        self._send(
            row, intent["attempt"], lambda: self.host.send_frame(first, native_id, line), sent
        )

    @staticmethod
    def before_send(row: Outbox) -> list[tuple[str, dict[str, Any]]]:
        """What a send reads of its receiver before its intent: two readings of it (two
        requests, each read on its own and compared), its policy inputs and its
        transcript's end. Also what a pass asks with its survey for its first send."""
        asked = {"session_id": row.session.native_id}
        return [
            ("target", asked),
            ("target", asked),
            ("policy_inputs", asked),
            ("transcript_position", asked),
        ]

    # --- observing --------------------------------------------------------------------

    @staticmethod
    def reading(row: Outbox) -> dict[str, Any]:
        """Where the envelope's reading of its transcript stands, and what it looks for
        there: its id, a held notice while uncertain, the nonce while an invitation
        awaits its answer. A survey request as well as observe's own read."""
        dispatch: Dispatch | None = row.dispatch
        nonce = row.payload.get("nonce") if row.kind == "invitation" else None
        needles = [row.id]
        if row.state == "uncertain":
            needles.append(receipts.HELD_MARK)
        if nonce is not None and dispatch is not None and dispatch.state == "invited":
            needles.append(f"{nonce}")
        cursor = row.cursor or {}
        conversation = read_in(row)
        return {
            "id": row.id,
            "session_id": conversation,
            "offset": row.observed_offset,
            # The send pinned its transcript's inode; a later conversation's file is another.
            "inode": cursor.get("inode") if conversation == cursor.get("native_session") else None,
            "needles": needles,
        }

    def observe(self, row: Outbox) -> None:
        wanted = self.reading(row)
        nonce = row.payload.get("nonce") if row.kind == "invitation" else None
        awaiting = nonce is not None and nonce in wanted["needles"]
        try:
            chunk = self.host.transcript_scan(
                wanted["session_id"], wanted["offset"], wanted["needles"], wanted["inode"]
            )
        except (NativeRefusal, HostError) as error:
            self.log(f"{row.id[:8]} not observed: {error}")
            return
        if not chunk["lines"] and not chunk["rotated"] and chunk["end"] <= wanted["offset"]:
            return  # nothing new since the last reading: nothing to record
        if chunk["rotated"]:
            self._conflict(
                row,
                {
                    "reason": "transcript was replaced or truncated; reading it again from 0",
                    "offset": chunk["start"],
                },
            )
        lines = [(offset, text) for offset, text in chunk["lines"]]
        self._receipts(row, lines, chunk["path"])
        resume = chunk["end"]
        if awaiting:
            row = Outbox.get_by_id(row.id)
            if row.state == "delivered":
                stop = self._answers(row, lines, str(nonce))
                resume = stop if stop is not None else resume
        self.engine.advance_cursor(row.id, resume)

    def _receipts(self, row: Outbox, lines: list[tuple[int, str]], path: str | None) -> None:
        receipt_offset = (row.receipt or {}).get("offset")
        state = row.state
        for seen in receipts.sightings(lines, row.id):
            if not seen.is_receipt:
                reason = "wrong provenance: " + "; ".join(seen.problems)
                self._conflict(row, {**seen.evidence(), "reason": reason})
                continue
            evidence = {**seen.evidence(), "host": self.host.name, "transcript": path}
            receipt_offset, state = self._sighted(row, state, receipt_offset, evidence)
        if state == "uncertain":
            self._held(row, lines)

    def _held(self, row: Outbox, lines: list[tuple[int, str]]) -> None:
        if row.held:
            return
        for offset, text in lines:
            if receipts.HELD_MARK not in text:
                continue
            entry, _ = receipts.parse(text)
            notice = receipts.held_notice(entry, offset) if entry else None
            if notice and receipts.preview_matches(notice.preview, row.payload["text"]):
                evidence = {
                    "offset": offset,
                    "preview": notice.preview,
                    "timestamp": notice.timestamp,
                    "cause": notice.cause,
                    "proves": receipts.HOLD_PROOFS[notice.cause],
                }
                self.engine.record_held(row.id, evidence)
                self.log(f"{row.id[:8]} held by the receiver: {evidence['proves']}")
                return

    def _answers(self, row: Outbox, lines: list[tuple[int, str]], nonce: str) -> int | None:
        """Look for a completed final answering the invitation. Returns where the next
        read must start when a candidate's turn has not finished yet."""
        skip_until = int((row.receipt or {}).get("offset", 0))
        for offset, text in lines:
            if offset <= skip_until or nonce not in text:
                continue
            entry, _ = receipts.parse(text)
            said = receipts.assistant_text(entry) if entry else None
            if said is None or receipts.answer_in(said, nonce) is None:
                continue
            try:
                turn = self.host.transcript_read(read_in(row), offset, TURN_READ_BYTES)
            except (NativeRefusal, HostError) as error:
                self.log(f"{row.id[:8]} answer not read: {error}")
                return offset  # read this candidate again on the next pass
            final = next(receipts.finals([(o, t) for o, t in turn["lines"]]), None)
            if final is None:
                return offset  # the turn is still running: its final decides
            if receipts.answer_in(final.text, nonce) is not None:
                self._answered(row, final, nonce)
                return None
            skip_until = final.end  # said mid-turn, not in the final: not an answer
        return None

    def _answered(self, row: Outbox, final: receipts.Final, nonce: str) -> None:
        said = receipts.answer_in(final.text, nonce)
        evidence = {
            "offset": final.offset,
            "turn_end": final.end,
            "timestamp": final.timestamp,
            "final": final.text[-500:],
        }
        if said == "accept":
            result = self.engine.accept(row.id, nonce, evidence)
            self.log(
                f"{row.id[:8]} accepted"
                + ("" if result["accepted"] else f" too late: {result['reason']}")
            )
        elif said == "decline":
            self.engine.decline(row.id, nonce, evidence)
            self.log(f"{row.id[:8]} declined")
        elif said == "both":
            self._conflict(row, {**evidence, "reason": "the final both accepts and declines"})

    # --- deciding loss ----------------------------------------------------------------

    def verdict(self, row: Outbox, now: float) -> None:
        native_id = row.session.native_id
        cursor = row.cursor or {}

        def status() -> str | None:
            # Its process, as this pass's survey read it: only the process the frame was
            # written into can prove it dropped (a new one resuming the conversation never
            # had the frame, so its idleness says nothing of it).
            entry = self.host.chat_entry(row.session)
            if entry is None or not wrote_into(entry, cursor.get("target")):
                return None
            return entry.get("status")

        def mentions() -> bool:
            # Every transcript the chat has written since the send: the one it was sent
            # into from the send's offset, each later conversation's from its start; for
            # the entry, and for a held notice of the envelope (then it is held, not lost).
            sent_into = cursor.get("native_session")
            offset = int(cursor.get("offset") or 0)
            needles = [row.id, receipts.HELD_MARK]
            for conversation in identity.conversations_since(row.session, sent_into):
                lines = self.host.transcript_scan(conversation, offset, needles)["lines"]
                if any(row.id in text for _, text in lines):
                    return True
                self._held(row, [(at, text) for at, text in lines])
                if Outbox.get_by_id(row.id).held:
                    return True
                offset = 0
            return False

        try:
            reason = delivery_verdict(
                cursor.get("inbound"),
                float(cursor.get("sent_at") or 0),
                now,
                status,
                mentions,
                held=row.held,
            )
        except (NativeRefusal, HostError) as error:
            self.log(f"{row.id[:8]} verdict postponed: {error}")
            return
        if reason is None:
            return
        evidence = {
            "reason": reason,
            "native_session": native_id,
            "message_id": row.id,
            "sent_at": cursor.get("sent_at"),
            "observed_at": now,
            "transcript_offset": cursor.get("offset"),
            "inbound_at_send": cursor.get("inbound"),
        }
        if reason == "receiver-idle-without-entry":
            evidence["receiver_status"] = "idle"
        if row.held:
            evidence["held"] = row.held  # the receiver's words decided, not the prediction
        self.engine.expire(row.id, evidence)
        self.log(f"{row.id[:8]} {row.kind} expired: {reason}")


def wrote_into(entry: Mapping[str, Any], target: Any) -> bool:
    """Whether the registry entry names the process the frame was written into (its pid
    and start time, as the send pinned them); a send that pinned none is taken as the
    entry's own (envelopes stored before the send recorded its target)."""
    if not isinstance(target, dict):
        return True
    process = identity.process(entry)
    return process is not None and (process.pid, process.birth) == (
        target.get("pid"),
        str(target.get("birth")),
    )


def read_in(row: Outbox) -> str:
    """The conversation whose transcript the envelope's reading is in: the one it was sent
    into until the chat's conversation changed since (Engine.record_process)."""
    return str(row.observed_in or (row.cursor or {}).get("native_session") or row.session.native_id)
