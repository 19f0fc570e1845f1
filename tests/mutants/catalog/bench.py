"""What the benchmarks time (issue 32): a serve is measured from its own "serving" line,
never from a line an earlier serve left in the same log; cli_list's floor reads what a
listing reads."""

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
    Mutant(
        "the-listing-floor-reads-less-than-a-listing",
        "cli_list's floor reads what `coop chats` reads, the transcript's recorded mode"
        " included: a floor that read less would make the bound look out of reach",
        "tests/bench/listing_floor.py",
        "NEEDLE = b'\"permissionMode\"'\n",
        "NEEDLE = b'\"permissionMod\"x'\n",
        ("tests/test_listing_floor.py",),
    ),
)
