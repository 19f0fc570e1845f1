"""The one way a test waits: on an event or a state, never for a length of time.

`wait_until(check, what)` polls `check` until it returns something truthy and hands that
value back. The timeout is generous and only bounds a hang: reaching it fails the test
with an AssertionError naming what it waited for, never a verdict on speed. A test that
asserts that something did NOT happen first waits for a positive sign that the moment
has passed (a later entry, a pass counter, a probe that arrived after), then asserts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Long enough that no load on a shared machine reaches it; short enough that a hang
# fails the test rather than the CI run.
HANG = 60.0


def wait_until(
    check: Callable[[], T],
    what: str,
    timeout: float = HANG,
    interval: float = 0.02,
    detail: Callable[[], object] | None = None,
) -> T:
    """`check()`'s first truthy value; an AssertionError naming `what` (and `detail()`,
    when given, for the state it was stuck in) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() >= deadline:
            stuck = f": {detail()}" if detail is not None else ""
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}{stuck}")
        time.sleep(interval)


def whole_json(path: Path, what: str, timeout: float = HANG) -> dict[str, Any] | None:
    """The JSON object in a file another process rewrites in place (truncate, then write,
    as Claude Code does its registry entries): read again until it parses; None once the
    file is gone."""

    def parsed() -> tuple[dict[str, Any] | None] | None:
        try:
            value = json.loads(path.read_text())
        except FileNotFoundError:
            return (None,)
        except ValueError:
            return None
        return (value,) if isinstance(value, dict) else None

    return wait_until(parsed, what, timeout)[0]
