"""Benchmark of the Codex door: codex_receipt.

On a thread held open by the real Codex CLI 0.171.0 (an app-server that resumed it, as
the Desktop app does), offline in a loopback-only network namespace
(tests/codex/door_driver.py): Coop's time from its add to Codex's queue (fact 2) to the
receipt in the rollout (fact 3) with `coop serve` watching, against the holder's own
poll interval measured in the same run. Coop may add at most a fifth to the wait Codex
itself imposes.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: npmcache, prerequisites

from tests.bench.common import report, run_main
from tests.codex import real_codex

DOOR_DRIVER = Path(__file__).resolve().parents[1] / "codex" / "door_driver.py"
SAMPLES = 3


def codex_receipt() -> bool:
    real_codex.check_prerequisites()
    binary = real_codex.codex_binary()
    root = Path(tempfile.mkdtemp(prefix="bench-codex", dir="/tmp"))
    extra = ("--scenarios", "receipt_bench")
    result = real_codex.run_driver(binary, root, DOOR_DRIVER, 600.0, extra)["receipt_bench"]
    if "error" in result:
        raise RuntimeError(result["error"])
    poll = statistics.median(result["poll_intervals"])
    coop = statistics.median(result["add_to_receipt"])
    return report(
        "codex_receipt",
        coop / poll,
        maximum=1.2,
        samples=SAMPLES,
        add_to_receipt_s=coop,
        holder_poll_s=poll,
        worst_s=max(result["add_to_receipt"]),
    )


if __name__ == "__main__":
    run_main([codex_receipt])
