"""A test that needs what this machine may lack (root, a mount, ../shared): skipped on a
developer's machine with the reason, a failure naming the missing piece in CI, which
sets COOP_REQUIRE_REAL_CLAUDE=1 and provides every prerequisite (`make test`)."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

CI_SWITCH = "COOP_REQUIRE_REAL_CLAUDE"


def missing(what: str) -> NoReturn:
    """Skip (or, in CI, fail) because `what` is not there."""
    if os.environ.get(CI_SWITCH) == "1":
        pytest.fail(f"required in CI but missing: {what}", pytrace=False)
    pytest.skip(what)
