"""One mutant: a small patch that breaks one safety rule, and the tests that must fail.

A mutant's `old` text must occur exactly once in its file (otherwise it is stale: the
code moved and the mutant no longer says where), and the patched source must still
compile (otherwise it is a bad mutant: it breaks the syntax, not the rule).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

ID_SHAPE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DEFAULT_TIMEOUT = 180.0


class StaleMutant(Exception):
    """The mutant's `old` text is missing from its file, or occurs more than once."""


class BadMutant(Exception):
    """The patched source does not compile."""


@dataclass(frozen=True)
class Mutant:
    """`id` (kebab case) names the mutant; `rule` says, in words, which safety rule the
    patch breaks; `file` is relative to the repository; `tests` are pytest node ids (or
    files) of which at least one must fail once `old` is replaced by `new`; `select`, when
    given, is pytest's `-k` expression over them (`sqlite`: the engine's tests on one
    ledger of the two)."""

    id: str
    rule: str
    file: str
    old: str
    new: str
    tests: tuple[str, ...]
    select: str = ""
    timeout: float = DEFAULT_TIMEOUT

    @property
    def topic(self) -> str:
        """The rule's name without its detail: the words before the first colon."""
        return self.rule.split(":", 1)[0].strip()

    def pytest_args(self) -> list[str]:
        """What pytest is given to run this mutant's tests."""
        return [*self.tests, *(["-k", self.select] if self.select else [])]

    def test_files(self) -> list[str]:
        """The files the tests live in, in order, each once."""
        return list(dict.fromkeys(test.split("::", 1)[0] for test in self.tests))

    def patch(self, source: str) -> str:
        """`source` with `old` replaced by `new`; StaleMutant unless `old` occurs exactly
        once, BadMutant when the result does not compile."""
        found = source.count(self.old)
        if found != 1:
            where = "is missing from" if found == 0 else f"occurs {found} times in"
            raise StaleMutant(f"{self.id}: its old text {where} {self.file}")
        patched = source.replace(self.old, self.new, 1)
        try:
            compile(patched, self.file, "exec")
        except SyntaxError as error:
            raise BadMutant(
                f"{self.id}: the patched {self.file} does not compile: {error}"
            ) from None
        return patched
