"""A real `coop serve` started for a test or a benchmark, once it says it serves.

The one wait for its "serving" line, read in what this serve wrote: a log an earlier
serve wrote "serving" in would otherwise end the wait at once, and the new serve's
start-up would count in whatever is done or measured next (refusing_chat_cpu once timed
a serve's imports this way)."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

DEADLINE = 60.0


def started_serve(
    argv: list[str], log: Path, env: dict[str, str], cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """`argv`, a `coop serve`, started with its output appended to `log`, once it says
    it serves. One that ends, or says nothing within DEADLINE, is killed and raised as
    a RuntimeError with what it wrote."""
    offset = log.stat().st_size if log.exists() else 0
    with log.open("ab") as out:
        serve = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=cwd)
    deadline = time.monotonic() + DEADLINE
    while b"serving" not in log.read_bytes()[offset:]:
        if serve.poll() is not None or time.monotonic() > deadline:
            serve.kill()
            serve.wait(30)
            written = log.read_bytes()[offset:].decode(errors="replace")
            raise RuntimeError(f"coop serve did not start:\n{written}")
        time.sleep(0.02)
    return serve
