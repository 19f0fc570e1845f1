"""What the benchmarks time (issue 32): a serve is measured from its own "serving" line,
never from a line an earlier serve left in the same log."""

from __future__ import annotations

from ..mutant import Mutant

MUTANTS = (
    Mutant(
        "a-serve-is-timed-from-an-earlier-serve-s-line",
        "the benches: a serve's window begins once that serve says it serves",
        "tests/serving.py",
        "    offset = log.stat().st_size if log.exists() else 0\n",
        "    offset = 0\n",
        ("tests/test_serving.py",),
    ),
)
