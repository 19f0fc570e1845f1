"""Loop protection on the way in: the duplicate check and the per-sender rate limit.

As read from the 2.1.328 binary and measured (tests/real_claude/OBSERVED.md section 8):
per sender key (``from:<label>``, or ``pid:<verified pid>`` for an unknown sender), a
body equal to the last ADMITTED body within 30 s is a duplicate; otherwise a token
bucket of 30, refilled at 0.5 per second, limits the rate. A frame the receiver's policy
holds never reaches this check (two identical held frames are both held).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

DEDUP_SECONDS = 30.0
BUCKET = 30.0
REFILL_PER_SECOND = 0.5


@dataclass
class _Sender:
    tokens: float
    refilled: float
    last_body: str | None = None
    last_at: float = 0.0


class Admission:
    """Admits or drops frames by sender; ``time_scale`` shrinks every duration."""

    def __init__(self, time_scale: float = 1.0) -> None:
        self.time_scale = time_scale
        self._senders: dict[str, _Sender] = {}

    def admit(self, key: str, body: str, now: float | None = None) -> str | None:
        """None when admitted, else why not: "duplicate" or "rate-limited"."""
        now = time.monotonic() if now is None else now
        sender = self._senders.setdefault(key, _Sender(BUCKET, now))
        if sender.last_body == body and now - sender.last_at < DEDUP_SECONDS * self.time_scale:
            return "duplicate"
        refill = (now - sender.refilled) * REFILL_PER_SECOND / self.time_scale
        sender.tokens = min(BUCKET, sender.tokens + refill)
        sender.refilled = now
        if sender.tokens < 1:
            return "rate-limited"
        sender.tokens -= 1
        sender.last_body, sender.last_at = body, now
        return None
