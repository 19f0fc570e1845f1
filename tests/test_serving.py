"""The benches' serve is measured from its own "serving" line: a log an earlier serve
wrote in ends no wait (refusing_chat_cpu once timed a serve's start-up this way)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from serving import started_serve

# A stand-in for `coop serve`: it starts slowly, says it serves, and serves on.
SLOW_START = "import time; time.sleep(0.5); print('serving', flush=True); time.sleep(60)"
GIVES_UP = "print('no ledger here', flush=True)"


def test_the_wait_ends_at_the_new_serve_s_own_line(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text("an earlier serve: serving\n")
    serve = started_serve([sys.executable, "-c", SLOW_START], log, {})
    try:
        assert log.read_text().count("serving") == 2, "the wait ended at the earlier line"
    finally:
        serve.kill()
        serve.wait(10)


def test_a_serve_that_ends_unstarted_is_told_in_its_own_words(tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    log.write_text("an earlier run said something else\n")
    with pytest.raises(RuntimeError) as failed:
        started_serve([sys.executable, "-c", GIVES_UP], log, {})
    assert "no ledger here" in str(failed.value)
    assert "earlier" not in str(failed.value)
