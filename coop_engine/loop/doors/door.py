"""What every door does alike once it has read its receiver: record the send's answer,
and move an envelope by what its receiver's records show of it (a receipt, the same
envelope seen twice, one seen after it was given up). doors/claude.py and
doors/codex.py each read their receiver their own way."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coop_engine.engine import Engine
from coop_engine.loop.surveyed import Surveyed
from coop_engine.models import Outbox
from hosts.mac.host import HostError, NativeRefusal

Log = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


class Door:
    def __init__(self, engine: Engine, host: Surveyed, log: Log = _quiet) -> None:
        self.engine = engine
        self.host = host
        self.log = log

    def _send(
        self, row: Outbox, attempt: int, request: Callable[[], dict[str, Any]], sent: str
    ) -> None:
        """Ask the Mac to send (after the intent was recorded), then record fact 2 from
        its answer. A refusal wrote nothing; a request that failed may have reached the
        Mac, and bytes may have left: never infer unsent."""
        try:
            result = request()
        except NativeRefusal as refusal:
            result = {"ok": False, "written": False, "stage": "check", "error": str(refusal)}
        except HostError as error:
            result = {"ok": False, "written": True, "stage": "request", "error": str(error)}
        self.engine.record_transport(row.id, attempt, result)
        if result.get("ok"):
            self.log(f"{row.id[:8]} {row.kind} {sent}")
        else:
            stage, cause = result.get("stage"), result.get("error")
            self.log(f"{row.id[:8]} {row.kind} send failed at {stage}: {cause}")

    def _conflict(self, row: Outbox, evidence: dict[str, Any]) -> None:
        self.engine.record_conflict(row.id, evidence)
        self.log(f"{row.id[:8]} conflict: {evidence['reason']}")

    def _sighted(
        self, row: Outbox, state: str, receipt_offset: Any, evidence: dict[str, Any]
    ) -> tuple[Any, str]:
        """One sighting of the envelope in its receiver's records, at `evidence["offset"]`,
        while it is in `state` with its receipt (if any) at `receipt_offset`: the first
        is the receipt; another at another place, or one after it was given up, is a
        conflict. Returns the receipt's offset and the state after it."""
        offset = evidence["offset"]
        if state == "uncertain":
            self.engine.record_receipt(row.id, evidence)
            self.log(f"{row.id[:8]} {row.kind} received ({evidence['shape']})")
            return offset, "delivered"
        if state == "delivered" and offset != receipt_offset:
            reason = f"seen twice: at byte {receipt_offset} and at byte {offset}"
            self._conflict(row, {**evidence, "reason": reason})
        elif state in ("expired", "cancelled", "pending"):
            self._conflict(row, {**evidence, "reason": f"received while {state}"})
        return receipt_offset, state
