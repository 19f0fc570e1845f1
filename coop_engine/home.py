"""Where Coop keeps its state: --home, else $COOP_HOME, else ~/.local/share/coop."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_HOME = Path("~/.local/share/coop")


def coop_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    """The directory holding Coop's state: --home, else $COOP_HOME, else the default."""
    raw = explicit or os.environ.get("COOP_HOME") or DEFAULT_HOME
    return Path(raw).expanduser().resolve()


def ensure_home(home: Path) -> Path:
    """Create the home directory private to this user (0700) when it does not exist."""
    if not home.is_dir():
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(home, 0o700)
    return home
