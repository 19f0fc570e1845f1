"""Where Coop keeps its state: --home, else $COOP_HOME, else ~/.local/share/coop."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from coop_engine.errors import LedgerError, shown

DEFAULT_HOME = Path("~/.local/share/coop")
# A path is echoed whole in a message unless it is absurdly long.
PATH_ECHO_WIDTH = 300
# Where the home's coordinator listens (loop/hub.py). Not "coop.db...": serve's watcher
# takes every file whose name starts so for a ledger write.
HUB_SOCKET = "coop.hub.sock"


def coop_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding Coop's state: --home, else $COOP_HOME, else the default."""
    raw = explicit or os.environ.get("COOP_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def ensure_home(home: Path) -> Path:
    """Create the home directory private to this user (0700) when it does not exist.

    Raises LedgerError, one line naming the home, when it is not a directory or cannot
    be created (under a file, on a read-only file system, a name too long)."""
    try:
        if home.is_dir():
            return home
        if home.exists():
            raise LedgerError(f"the Coop home {shown_path(home)} is not a directory")
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(home, 0o700)
    except OSError as error:
        why = _why(home, error)
        raise LedgerError(f"cannot create the Coop home {shown_path(home)}: {why}") from None
    return home


def hub_path(home: Path) -> Path:
    """Where the coordinator of the Coop home `home` listens."""
    return home / HUB_SOCKET


def shown_path(path: Path) -> str:
    return shown(str(path), PATH_ECHO_WIDTH)


def _why(home: Path, error: OSError) -> str:
    """The cause, naming the file in the way when a parent is not a directory."""
    if error.errno == errno.ENOTDIR:
        for parent in reversed(home.parents):
            if parent.exists() and not parent.is_dir():
                return f"{shown_path(parent)} is a file"
    return error.strerror or str(error)
