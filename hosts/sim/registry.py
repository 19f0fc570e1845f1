"""The chat's registry entry: ``<config>/sessions/<pid>.json`` and its key file.

Written the way Claude Code writes it: compact JSON, mode 0644 in a 0700 folder, and
every update rewritten IN PLACE (truncate, then write) rather than renamed over, so a
reader can catch a torn or empty file. That is the real behaviour, and readers must
survive it.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import time
from pathlib import Path
from typing import Any

VERSION = "2.1.328"
PEER_FEATURES = ["notify_idle", "reply_across_default_dirs", "artifact_yield"]


def now_ms() -> int:
    """Milliseconds since the epoch, the registry's unit for times."""
    return int(time.time() * 1000)


def make_private_dir(path: Path) -> None:
    """Create ``path`` (and missing parents) with mode 0700; an existing one is left as is."""
    if path.is_dir():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        return
    os.chmod(path, 0o700)  # mkdir's mode is filtered by the umask


class Registry:
    """One chat's registry entry, kept in memory and mirrored to its file."""

    def __init__(self, config_dir: Path, pid: int, fields: dict[str, Any]) -> None:
        self.folder = config_dir / "sessions"
        self.path = self.folder / f"{pid}.json"
        self.key_path: Path | None = None
        self.fields = dict(fields)

    def publish(self) -> None:
        """Write the key file (the chat's peer token, 0600), then the first entry."""
        make_private_dir(self.folder)
        token = secrets.token_hex(16)
        digest = hashlib.sha256(token.encode()).hexdigest()
        self.key_path = self.folder / f"{self.path.stem}.{digest}.key"
        key = {"peerToken": token}
        key |= {
            name: self.fields[name] for name in ("procStart", "pidDomain") if name in self.fields
        }
        fd = os.open(self.key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, json.dumps(key, separators=(",", ":")).encode())
        finally:
            os.close(fd)
        os.chmod(self.key_path, 0o600)
        self._write()
        os.chmod(self.path, 0o644)

    def update(self, **changes: Any) -> None:
        """Merge ``changes`` (a None value removes the key) and rewrite the file in place.

        A status change also stamps ``statusUpdatedAt``; every update stamps ``updatedAt``.
        """
        stamp = now_ms()
        status_changed = "status" in changes and changes["status"] != self.fields.get("status")
        for key, value in changes.items():
            if value is None:
                self.fields.pop(key, None)
            else:
                self.fields[key] = value
        self.fields["updatedAt"] = stamp
        if status_changed:
            self.fields["statusUpdatedAt"] = stamp
        self._write()

    def _write(self) -> None:
        data = json.dumps(self.fields, separators=(",", ":"), ensure_ascii=False).encode()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            # Truncate first, then write: the window in which a reader sees an empty or
            # partial file is the real receiver's, kept on purpose.
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)

    def remove(self) -> None:
        """Delete the entry and its key file (a clean exit)."""
        for path in (self.path, self.key_path):
            if path is not None:
                try:
                    path.unlink()
                except FileNotFoundError:
                    pass
