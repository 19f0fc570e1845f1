"""Where this Mac's Codex keeps its records (``$CODEX_HOME``), and the thread list of a
Mac that has none. Asked before anything that reads those records is loaded: on a Mac
without Codex, `coop chats` loads none of them (sqlite3 alone costs milliseconds of every
listing). Standard library only, Python 3.9 or newer: the ssh helper runs this too.
"""

from __future__ import annotations

import os
from pathlib import Path

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any


def default_codex_home() -> Path:
    """``$CODEX_HOME`` when set and not empty, otherwise ``~/.codex`` (user expanded)."""
    configured = os.environ.get("CODEX_HOME")
    return Path(configured or "~/.codex").expanduser()


def no_home_listing(home: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The thread list of a Codex home that does not exist (no threads, nothing
    skipped), or None when there is one to read, or something else in its place that
    the readers must look at and report."""
    try:
        os.stat(home)
    except FileNotFoundError:
        return {"codex_home": os.fspath(home), "threads": [], "skipped": []}
    except (OSError, ValueError):
        pass  # a path through a file, a NUL byte: the readers say what it is
    return None
