"""The Codex door: put one message in a Codex thread's own queue, then learn what
happened from the thread's rollout (DESIGN.md 5.10, issue [4/6]).

deliver: read where the rollout stands, record the intent (uncertain, the outbox id as
the client id), then ask the Mac's `codex app-server` to add it (`thread/queue/add`).
observe: the survey says whether the id still waits in Codex's queue; the rollout's
`item_completed` UserMessage carrying the id is the receipt; its turn's
`task_complete` final is the answer.
verdict: none. Codex deletes the queue row before it writes the receipt, so nothing
this door sees proves a loss; the only proof is Codex's own `deleted: true` when Dad or
the chief withdraws the envelope (loop/withdrawal.py).
"""

from __future__ import annotations

from typing import Any

from coop_engine import receipts
from coop_engine.errors import Conflict
from coop_engine.loop.doors import rollouts
from coop_engine.loop.doors.door import Door
from coop_engine.models import Dispatch, HostQueue, Outbox
from hosts.mac.host import HostError, NativeRefusal

OPEN = "picked up within about 10 s (the thread is open)"
SAVED = "waits until the thread is opened"


def expectation(is_open: bool) -> str:
    """When a message added to Codex's queue will run, as the thread stands now."""
    return OPEN if is_open else SAVED


def _attempt(outbox_id: str) -> int:
    """The envelope's latest attempt in the host queue (the one its intent recorded)."""
    return HostQueue.select().where(HostQueue.outbox == outbox_id).count()


class CodexDoor(Door):
    """The door to one Mac's Codex threads, as that Mac's survey of this pass saw them."""

    # --- sending ----------------------------------------------------------------------

    def deliver(self, row: Outbox) -> None:
        thread_id = row.session.native_id
        try:
            position = self.host.codex_position(thread_id)
            if not position["exists"]:
                raise NativeRefusal(f"no rollout of Codex thread {thread_id} on {self.host.name}")
            if position["archived"]:
                raise NativeRefusal(
                    f"Codex thread {thread_id} is archived: `codex unarchive {thread_id}` first"
                )
        except (NativeRefusal, HostError) as refusal:
            self.engine.record_refusal(row.id, str(refusal))
            self.log(f"{row.id[:8]} {row.kind} not sent: {refusal}")
            return
        prediction = {"verdict": "queued", "source": "codex queue", "open": position["open"]}
        prediction["expect"] = expectation(position["open"])
        cursor = {
            "door": "codex",
            "native_session": thread_id,
            "host": self.host.name,
            "rollout": position["path"],
            "offset": position["size"],
            # A compressed rollout's offsets count its content: its file is not the key.
            "inode": None if position.get("compressed") else position["inode"],
            "client_id": row.id,
            "inbound": prediction,
            "sent_at": self.engine.clock(),
        }
        try:
            intent = self.engine.mark_uncertain(row.id, cursor)
        except Conflict:
            return  # another coordinator took this envelope first
        text = row.payload["text"]
        self._send(
            row,
            intent["attempt"],
            lambda: self.host.codex_queue_add(thread_id, row.id, text),
            f"queued in Codex for {row.session.ref}",
        )

    # --- observing --------------------------------------------------------------------

    @staticmethod
    def reading(row: Outbox) -> dict[str, Any]:
        """Where the envelope's reading of the rollout stands and what it looks for: its
        id (the receipt's client id, or the fallback's marker), its turn once received
        while an invitation awaits its answer (the turn's end names it); and, while
        uncertain, whether it still waits in Codex's queue."""
        dispatch: Dispatch | None = row.dispatch
        needles = [row.id]
        turn = (row.receipt or {}).get("turn_id")
        awaiting = row.kind == "invitation" and dispatch is not None and dispatch.state == "invited"
        if awaiting and row.state == "delivered" and isinstance(turn, str):
            needles.append(turn)
        return {
            "id": row.id,
            "session_id": row.session.native_id,
            "offset": row.observed_offset,
            "inode": (row.cursor or {}).get("inode"),
            "needles": needles,
            "vendor": "codex",
            "queue": row.state == "uncertain",
        }

    def observe(self, row: Outbox) -> None:
        wanted = self.reading(row)
        if row.state == "uncertain":
            self._queue(row)
            row = Outbox.get_by_id(row.id)
        try:
            chunk = self.host.rollout_scan(
                wanted["session_id"], wanted["offset"], wanted["needles"], wanted["inode"]
            )
        except (NativeRefusal, HostError) as error:
            self.log(f"{row.id[:8]} not observed: {error}")
            return
        if not chunk["lines"] and not chunk["rotated"] and chunk["end"] <= wanted["offset"]:
            return  # nothing new since the last reading
        if chunk["rotated"]:
            reason = "rollout was replaced or truncated; reading it again from 0"
            self._conflict(row, {"reason": reason, "offset": chunk["start"]})
        lines = [(offset, text) for offset, text in chunk["lines"]]
        was = row.state
        self._receipts(row, lines, chunk["path"])
        row = Outbox.get_by_id(row.id)
        resume = chunk["end"]
        if was == "uncertain" and row.state == "delivered":
            # Received in this very chunk, which held only lines naming the id: its turn
            # is read on from the receipt, and until its end is found there, the next
            # reading starts at the receipt (looking for the turn) rather than past it.
            lines = self._turn_lines(row, lines)
            if not self._answer(row, lines) and self._awaiting(row):
                resume = int(row.receipt["offset"])
        else:
            self._answer(row, lines)
        self.engine.advance_cursor(row.id, resume)

    def _queue(self, row: Outbox) -> None:
        """What the survey saw of the envelope in Codex's queue: its queued-submission id
        when the add's answer was lost (found by the client id, never inferred), and
        whether it still waits and where."""
        seen = self.host.queue.get(row.id)
        if seen is None or (row.transport or {}).get("via") == "codex queue":
            # `codex queue` adds with a client id of its own: Codex's queue cannot say
            # whether this envelope waits there. Only its rollout will tell.
            return
        ids = [str(i) for i in seen.get("queued") or []]
        if ids and row.transport_at is None:
            found = {"ok": True, "written": True, "queued_id": ids[0], "via": "app-server"}
            self._found(row, found, "its client id in Codex's queue (the add's answer was lost)")
        if len(ids) > 1:
            self._conflict(row, {"reason": f"queued {len(ids)} times in Codex", "queued": ids})
        self.engine.record_queue(row.id, {"queued": bool(ids), "open": bool(seen.get("open"))})

    def _found(self, row: Outbox, found: dict[str, Any], by: str) -> None:
        """Fact 2 for a send whose answer was lost, from what Codex shows of it: recorded
        once, under a key of its own (the lost answer's key holds that answer)."""
        found["found_by"] = by
        attempt = _attempt(row.id)
        self.engine.record_transport(
            row.id, attempt, found, key=f"transport-found:{row.id}:{attempt}"
        )
        self.log(f"{row.id[:8]} found: {by}")

    def _receipts(self, row: Outbox, lines: list[tuple[int, str]], path: str | None) -> None:
        receipt_offset = (row.receipt or {}).get("offset")
        state = row.state
        for seen in rollouts.receipts(lines, row.id):
            evidence = {**seen.evidence(), "host": self.host.name, "rollout": path}
            if row.transport_at is None and state == "uncertain":
                via = (row.transport or {}).get("via") or "app-server"
                found = {"ok": True, "written": True, "queued_id": None, "via": via}
                self._found(
                    row, found, "its receipt in the thread's rollout (the add's answer was lost)"
                )
            receipt_offset, state = self._sighted(row, state, receipt_offset, evidence)

    def _turn_lines(self, row: Outbox, lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
        """The receipt's turn, read on from the receipt (the scan looked for the id only)."""
        offset = int((row.receipt or {}).get("offset") or 0)
        try:
            chunk = self.host.rollout_read(row.session.native_id, offset, 8 << 20)
        except (NativeRefusal, HostError) as error:
            self.log(f"{row.id[:8]} answer not read: {error}")
            return lines
        return [(at, text) for at, text in chunk["lines"]]

    @staticmethod
    def _awaiting(row: Outbox) -> bool:
        """A received invitation whose answer has not been read yet."""
        dispatch: Dispatch | None = row.dispatch
        turn = (row.receipt or {}).get("turn_id")
        invited = dispatch is not None and dispatch.state == "invited"
        return row.kind == "invitation" and invited and row.state == "delivered" and bool(turn)

    def _answer(self, row: Outbox, lines: list[tuple[int, str]]) -> bool:
        """An invitation's answer: the final of the turn its receipt began. Whether its
        turn's end was found (answered or not)."""
        nonce = row.payload.get("nonce")
        turn = (row.receipt or {}).get("turn_id")
        if not self._awaiting(row) or not isinstance(turn, str) or not nonce:
            return False
        end = rollouts.turn_end(lines, turn)
        if end is None:
            return False  # the turn runs (or its holder died): received, not answered
        evidence = {
            "offset": end.offset,
            "ended": end.ended,
            "timestamp": end.timestamp,
            "final": (end.final or "")[-500:],
            "turn_id": turn,
        }
        said = receipts.answer_in(end.final or "", str(nonce))
        if said == "accept":
            result = self.engine.accept(row.id, str(nonce), evidence)
            late = "" if result["accepted"] else f" too late: {result['reason']}"
            self.log(f"{row.id[:8]} accepted{late}")
        elif said == "decline":
            self.engine.decline(row.id, str(nonce), evidence)
            self.log(f"{row.id[:8]} declined")
        elif said == "both":
            self._conflict(row, {**evidence, "reason": "the final both accepts and declines"})
        else:
            self.log(f"{row.id[:8]} turn {end.ended} without an answer")
        return True

    # --- deciding loss ----------------------------------------------------------------

    def verdict(self, row: Outbox, now: float) -> None:
        """Nothing Codex shows proves a loss by itself: an envelope sent through this door
        expires only by `withdraw`."""
