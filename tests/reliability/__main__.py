"""`make reliability`: python -m tests.reliability [--kills N] [--seed S]

Prints `RELIABILITY kills=<n> lost=<n> duplicated=<n> unsent_looking=<n>` and a detail
line, then the standby run's `RELIABILITY standby takeovers=<n> lost=<n> duplicated=<n>`
(tests/reliability/standby.py; `--standby-rounds 0` leaves it out); exits 1 when any
invariant was broken."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # simchat, as under pytest

from tests.reliability import standby  # noqa: E402
from tests.reliability.harness import Harness  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.reliability")
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--standby-rounds", type=int, default=20)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="coop-reliability-"))
    try:
        report = Harness(workdir, args.kills, args.seed, say=lambda s: print(s, flush=True)).run()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(report.detail())
    print(report.line(), flush=True)
    for name in ("lost", "duplicated", "unsent_looking", "unresolved", "false_expiry"):
        ids = sorted(getattr(report, name))
        if ids:
            print(f"{name}: {' '.join(ids[:20])}", file=sys.stderr)
    for problem in report.integrity[:5]:
        print(f"integrity: {problem}", file=sys.stderr)
    standing = standby.run(args.standby_rounds, args.seed) if args.standby_rounds else 0
    return 0 if report.ok and standing == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
