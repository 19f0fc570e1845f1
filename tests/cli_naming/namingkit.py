"""Reading what the CLI printed: its plain tables by column, its JSON, and the ledger
as it was, so a test can say that a refusal recorded nothing."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

from coop_engine.db import open_ledger
from coop_engine.models import TABLES

CLAUDE_A = "abcd1111-2222-4333-8444-555555555555"
CLAUDE_B = "abcd1111-9999-4333-8444-555555555555"  # its first 8 characters are A's
CLAUDE_C = "5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"
# Codex thread ids are UUIDv7: made within a minute, their first 8 characters agree.
THREAD_A = "019adf3e-71c0-7d12-9a4b-1f2e3d4c5b6a"
THREAD_B = "019adf3e-8a44-7e01-8c3d-6b5a49382716"


def table(done: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    """A plain listing as rows of {HEADER: cell}: each column starts where its header
    does (cells are padded to the column's width)."""
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.splitlines()
    starts = [found.start() for found in re.finditer(r"\S+", header)]
    spans = list(zip(starts, [*starts[1:], None], strict=True))
    names = header.split()
    return [
        dict(zip(names, [line[start:end].strip() for start, end in spans], strict=True))
        for line in lines
    ]


def rows(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    found: list[dict[str, Any]] = json.loads(done.stdout)
    return found


def one_object(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def ledger_now(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table, read through a connection of the test's own."""
    ledger = open_ledger(home)
    try:
        return {m._meta.table_name: sorted(m.select().tuples(), key=repr) for m in TABLES}
    finally:
        ledger.close()


def usage_line(done: subprocess.CompletedProcess[str]) -> str:
    """Exit 2 with one line on stderr, and no traceback."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    return line


def refusal_line(done: subprocess.CompletedProcess[str]) -> str:
    """Exit 1 with one line on stderr, and no traceback."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.splitlines()
    return line
