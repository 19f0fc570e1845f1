"""The Mac's half of a pass: everything the office needs from this Mac, in one answer.

The office sends its cursor (the last answer's) and, for every envelope in flight here,
where its reading stands: `{id, session_id, offset, inode, needles}`. The answer holds
the registry entries that changed since that cursor (all of them when the cursor is not
this helper's last, as after a restart), each envelope's sightings from its offset, and
what to watch for the next long-poll. The fingerprint of the watched paths is taken
before anything is read, so a change made while the answer is read is never lost: it
differs from the fingerprint, and the next long-poll returns at once.

Sightings are bounded: past MAX_SIGHTING_BYTES an envelope's lines stop at a whole line,
its `end` says where the next survey resumes, and `more` asks for that survey now.
"""

from __future__ import annotations

import json
import os
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any

MAX_SIGHTING_BYTES = 4 << 20
LONG_POLL_NAME = re.compile(r"^[A-Za-z0-9-]{8,64}$")
O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
ENVELOPE_KEYS = ("id", "session_id", "offset", "needles")


def _digest(value: Any) -> str:
    import hashlib  # only a pass digests: `coop chats` loads this module and never does

    return hashlib.sha1(json.dumps(value, sort_keys=True).encode()).hexdigest()


def live_mark(pids: Iterable[int]) -> str:
    """Which registered chats are live, in a few characters: a survey's and a long-poll's
    reading of liveness compare equal exactly when the same chats live."""
    import hashlib

    return hashlib.sha1(",".join(sorted(str(pid) for pid in pids)).encode()).hexdigest()[:16]


def check_envelopes(envelopes: Any) -> list[dict[str, Any]]:
    """The envelopes as asked, or ValueError naming what is wrong with them."""
    if not isinstance(envelopes, list):
        raise ValueError("envelopes must be a list")
    for envelope in envelopes:
        if not isinstance(envelope, dict) or any(key not in envelope for key in ENVELOPE_KEYS):
            raise ValueError(f"each envelope has {', '.join(ENVELOPE_KEYS)}")
        offset, needles = envelope["offset"], envelope["needles"]
        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError("an envelope's offset is a byte offset")
        if not isinstance(needles, list) or not all(isinstance(n, str) and n for n in needles):
            raise ValueError("an envelope's needles are non-empty strings")
    return envelopes


def bound(chunk: dict[str, Any], budget: int) -> tuple[dict[str, Any], int, bool]:
    """The chunk cut to whole lines within `budget` bytes of text; what is left of the
    budget, and whether anything was cut (its `end` is then the first line not sent)."""
    used = 0
    for index, (offset, text) in enumerate(chunk["lines"]):
        used += len(text)
        if used > budget and index > 0:
            return {**chunk, "lines": chunk["lines"][:index], "end": offset}, 0, True
    return chunk, max(0, budget - used), False


class Surveyor:
    """Remembers what it last told the office, so each answer carries only changes."""

    def __init__(self) -> None:
        self.cursor: str | None = None
        self.told: dict[str, str] = {}  # registry key -> digest of the chat as told
        self.answers = 0

    def changes(self, since: str | None, chats: list[dict[str, Any]]) -> dict[str, Any]:
        """The chats changed since the cursor `since`, and the keys gone; everything when
        `since` is not the cursor of this surveyor's last answer."""
        full = since is None or since != self.cursor
        now = {str(chat["pid"]): chat for chat in chats}
        digests = {key: _digest(chat) for key, chat in now.items()}
        if full:
            changed, gone = list(now.values()), []
        else:
            changed = [now[key] for key, value in digests.items() if self.told.get(key) != value]
            gone = sorted(key for key in self.told if key not in now)
        self.told = digests
        self.answers += 1
        self.cursor = f"{os.getpid()}-{self.answers}"
        return {"cursor": self.cursor, "full": full, "chats": changed, "gone": gone}


def keep_paths(long_poll: str, paths: list[str]) -> str:
    """Write `paths` to the long-poll's file (only when they changed: the write wakes
    the long-poll) and return the file's path. The file lives in a folder private to
    this user under the Mac's temporary folder; it is runtime state, removed by forget."""
    if not LONG_POLL_NAME.match(long_poll):
        raise ValueError("a long-poll's name is 8 to 64 letters, digits or dashes")
    path = os.path.join(_private_folder(), f"{long_poll}.watch")
    text = json.dumps(paths)
    try:
        with open(path, encoding="utf-8") as kept:
            if kept.read() == text:
                return path
    except FileNotFoundError:
        pass
    staged = f"{path}.{os.getpid()}"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(staged, path)
    return path


def forget(long_poll: str) -> None:
    """Remove the long-poll's file (its helper is ending), and its folder when no other
    long-poll's file is left there."""
    if LONG_POLL_NAME.match(long_poll):
        try:
            folder = _private_folder()
            os.unlink(os.path.join(folder, f"{long_poll}.watch"))
            os.rmdir(folder)
        except OSError:
            pass  # gone already, or another long-poll's file is still there


def _private_folder() -> str:
    """`coop-<uid>` in the temporary folder, 0700 and this user's: OSError otherwise (a
    folder someone else made there is never written into)."""
    import stat
    import tempfile

    folder = os.path.join(tempfile.gettempdir(), f"coop-{os.getuid()}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    info = os.lstat(folder)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise PermissionError(f"{folder} is not a folder private to this user")
    return folder


def sightings(
    envelopes: list[dict[str, Any]], scan: Callable[[dict[str, Any]], dict[str, Any]]
) -> tuple[dict[str, dict[str, Any] | None], bool]:
    """Each envelope's chunk from `scan`, bounded together (None for an envelope left
    for the next survey, read from where it stands); and whether any was cut."""
    found: dict[str, dict[str, Any] | None] = {}
    budget, more = MAX_SIGHTING_BYTES, False
    for envelope in envelopes:
        if budget == 0:
            found[str(envelope["id"])], more = None, True
            continue
        chunk, budget, cut = bound(scan(envelope), budget)
        found[str(envelope["id"])] = chunk
        more = more or cut
    return found, more
