"""Claude Code's native door: the session registry, private sockets, and the one write.

Identity is the session id, the live pid with its birth, and the private socket; the
working directory is description only (seed 000, "cwd is data, not identity").
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from pathlib import Path

from hosts.mac.errors import NativeRefusal
from hosts.mac.platforms import Platform

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any

RECEIVER_CHANGED = "Native receiver changed before send"
SOCKET_NOT_PRIVATE = "Native socket ownership or permissions changed"
SENDER = "cwkCoop"

REGISTRY_NAME = re.compile(r"^(\d+)\.json$")
MAX_ENTRY_BYTES = 1 << 20
# A torn entry is read again after pauses that double from TORN_RETRY_DELAY: 150 ms in
# all. A rewrite stalls between its truncate and its write on a loaded machine, and a
# reader that gave up after 20 ms (three reads) called a live chat gone.
TORN_RETRIES = 5
TORN_RETRY_DELAY = 0.01
CONNECT_TIMEOUT = 5.0


# Plain classes rather than dataclasses: `coop chats` is started often, and importing
# dataclasses costs more than the whole registry scan.


class Target:
    """The four facts a send pins: they must read the same three times."""

    __slots__ = ("pid", "birth", "socket_path", "socket_inode")

    def __init__(self, pid: int, birth: str, socket_path: str, socket_inode: int) -> None:
        self.pid = pid
        self.birth = birth
        self.socket_path = socket_path
        self.socket_inode = socket_inode

    def as_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Target) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return f"Target({self.as_dict()})"


class RegistryEntry:
    __slots__ = ("pid", "path", "data", "live", "birth", "stale")

    def __init__(self, pid: int, path: str, data: dict[str, Any], stale: bool = False) -> None:
        self.pid = pid
        self.path = path
        self.data = data
        self.live = False
        self.birth: str | None = None
        # The file could not be read this time (rewritten in place, torn): `data` is its
        # last good reading. Whether the chat lives is still asked of its process.
        self.stale = stale

    @property
    def session_id(self) -> str | None:
        value = self.data.get("sessionId")
        return value if isinstance(value, str) and value else None


class Scan:
    """One reading of a registry folder: usable entries, and files skipped with a reason."""

    def __init__(self) -> None:
        self.entries: list[RegistryEntry] = []
        self.skipped: list[dict[str, str]] = []


def sessions_dir(config_dir: Path) -> Path:
    return config_dir / "sessions"


def read_entry(path: str) -> tuple[dict[str, Any] | None, str | None]:
    """An entry's JSON object, retrying a torn or empty read (Claude Code rewrites the
    file in place, so a reader can catch it mid-write)."""
    reason = "unreadable"
    for attempt in range(TORN_RETRIES):
        if attempt:
            time.sleep(TORN_RETRY_DELAY * 2 ** (attempt - 1))
        try:
            # O_NOFOLLOW: a symlink named like an entry is not an entry.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            if error.errno == errno.ELOOP:  # the name is a symlink
                return None, "not a regular file"
            return None, f"unreadable: {error.strerror}"
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                return None, "not a regular file"
            if info.st_size > MAX_ENTRY_BYTES:
                return None, f"too large ({info.st_size} bytes)"
            # Read what fstat says is there (plus one): a 1 MB buffer per entry is slow.
            raw = os.read(fd, info.st_size + 1)
        except OSError as error:
            return None, f"unreadable: {error.strerror}"
        finally:
            os.close(fd)
        if not raw.strip():
            reason = "empty"
            continue
        try:
            # Decoded first: json.loads of bytes guesses their encoding, and at 200
            # entries the guess costs more than the parsing (Claude Code writes UTF-8).
            value = json.loads(raw.decode())
        except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
            reason = "torn or not JSON"
            continue
        if not isinstance(value, dict):
            return None, "not a JSON object"
        return value, None
    return None, f"{reason} after {TORN_RETRIES} reads"


def scan_registry(
    config_dir: Path, platform: Platform, last_good: dict[str, dict[str, Any]] | None = None
) -> Scan:
    """Read every `<pid>.json` entry and the births of all their pids in one batch. With
    `last_good` (file name -> its last good reading, kept by the caller across scans), a
    file that cannot be read now is its last good reading, marked stale, rather than
    skipped: a torn file says nothing of whether its chat lives."""
    scan = Scan()
    folder = os.path.join(config_dir, "sessions")
    try:
        names = sorted(os.listdir(folder))
    except FileNotFoundError:
        return scan
    for name in names:
        match = REGISTRY_NAME.match(name)
        if match is None:
            continue
        path = f"{folder}/{name}"  # os.path.join's answer: a listed name holds no "/"
        data, reason = read_entry(path)
        pid = int(match.group(1))
        if data is None and last_good is not None and name in last_good:
            scan.entries.append(RegistryEntry(pid, path, last_good[name], stale=True))
            continue
        if data is None:
            scan.skipped.append({"file": name, "reason": reason or "unreadable"})
            continue
        if type(data.get("pid")) is not int or data["pid"] != pid:  # 5.0 and true are not 5
            scan.skipped.append(
                {"file": name, "reason": f"names pid {data.get('pid')!r}, not {pid}"}
            )
            continue
        if not isinstance(data.get("sessionId"), str) or not data["sessionId"]:
            scan.skipped.append({"file": name, "reason": "no sessionId"})
            continue
        scan.entries.append(RegistryEntry(pid, path, data))
    if last_good is not None:
        kept = {os.path.basename(e.path): e.data for e in scan.entries}
        last_good.clear()
        last_good.update(kept)
    births = platform.births(entry.pid for entry in scan.entries)
    for entry in scan.entries:
        birth = births.get(entry.pid)
        entry.birth = birth
        # An entry whose process exited, or whose pid now belongs to another process,
        # lingers on disk: it is recognised and never targeted.
        entry.live = birth is not None and platform.birth_matches(entry.data, birth)
    return scan


def _private(info: os.stat_result) -> str | None:
    if info.st_uid != os.getuid():
        return f"owned by uid {info.st_uid}"
    if info.st_mode & 0o077:
        return f"mode {stat.S_IMODE(info.st_mode):04o} gives group or other access"
    return None


def private_socket(path: str, parents: dict[str, str | None] | None = None) -> int:
    """Four checks, one answer: a socket (not followed through links), owned by this
    user, no group or other bits, in a parent directory passing the same owner and mode
    test. Returns the socket's inode. `parents` caches directory verdicts for one scan,
    where many chats share one socket folder."""
    try:
        info = os.lstat(path)
    except OSError as error:
        raise NativeRefusal(SOCKET_NOT_PRIVATE, f"socket missing: {error.strerror}") from None
    except ValueError:  # a NUL byte in the registry's path: not a path at all
        raise NativeRefusal(SOCKET_NOT_PRIVATE, "socket path is not a path") from None
    if not stat.S_ISSOCK(info.st_mode):
        raise NativeRefusal(SOCKET_NOT_PRIVATE, "not a socket")
    problem = _private(info)
    if problem:
        raise NativeRefusal(SOCKET_NOT_PRIVATE, f"socket {problem}")
    folder = os.path.dirname(path) or "."
    if parents is None or folder not in parents:
        verdict = _private_folder(folder)
        if parents is not None:
            parents[folder] = verdict
    else:
        verdict = parents[folder]
    if verdict:
        raise NativeRefusal(SOCKET_NOT_PRIVATE, verdict)
    return info.st_ino


def _private_folder(folder: str) -> str | None:
    try:
        parent = os.lstat(folder)
    except OSError as error:
        return f"parent directory: {error.strerror}"
    if not stat.S_ISDIR(parent.st_mode):
        return "parent is not a directory"
    problem = _private(parent)
    return f"parent directory {problem}" if problem else None


def socket_verdict(entry: RegistryEntry, parents: dict[str, str | None] | None = None) -> str:
    """ "ok", or why a frame could not be sent to this entry now."""
    if not entry.live:
        return "not live (exited, or the pid was reused)"
    protocol = entry.data.get("peerProtocol")
    if type(protocol) is not int or protocol != 1:  # JSON true is not protocol 1
        return f"peer protocol {protocol!r}, not 1"
    path = entry.data.get("messagingSocketPath")
    if not isinstance(path, str) or not path:
        return "inbox not published"
    try:
        private_socket(path, parents)
    except NativeRefusal as refusal:
        return f"{refusal}: {refusal.detail}"
    return "ok"


def target(config_dir: Path, platform: Platform, session_id: str) -> Target:
    """Exactly one live match for the session id, as its four facts; otherwise a refusal.
    Zero or several matches is an error, never a guess."""
    scan = scan_registry(config_dir, platform)
    named = [entry for entry in scan.entries if entry.session_id == session_id]
    found: list[Target] = []
    private_failure: NativeRefusal | None = None
    reasons = []
    for entry in named:
        verdict = socket_verdict(entry)
        if verdict != "ok":
            reasons.append(f"pid {entry.pid}: {verdict}")
            if verdict.startswith(SOCKET_NOT_PRIVATE):
                private_failure = NativeRefusal(SOCKET_NOT_PRIVATE, verdict.split(": ", 1)[1])
            continue
        path = str(entry.data["messagingSocketPath"])
        found.append(Target(entry.pid, entry.birth or "", path, private_socket(path)))
    if len(found) == 1:
        return found[0]
    if len(found) > 1:
        pids = ", ".join(str(t.pid) for t in found)
        raise NativeRefusal(f"Several live chats claim session {session_id} (pids {pids})")
    if private_failure is not None:
        raise private_failure
    detail = "; ".join(reasons) if reasons else "no registry entry"
    raise NativeRefusal(no_live_chat(session_id, scan), detail)


def no_live_chat(session_id: str, scan: Scan) -> str:
    """The refusal for a session no live entry names. When the scan skipped a file, the
    chat's entry may be that one (caught mid-rewrite), and the words say so; the file
    names are the registry's own, `<pid>.json`."""
    said = f"No live chat with session {session_id}"
    if not scan.skipped:
        return said
    first = scan.skipped[0]
    more = f" and {len(scan.skipped) - 1} more" if len(scan.skipped) > 1 else ""
    return f"{said} among the entries read (skipped {first['file']}: {first['reason']}{more})"


def frame(session_id: str, outbox_id: str, text: str) -> bytes:
    """The one line Coop writes (DESIGN.md 5.4). It asserts no permission mode."""
    body = {
        "type": "user",
        "session_id": session_id,
        "uuid": outbox_id,
        "msg_id": outbox_id,
        "from": SENDER,
        "priority": "next",
        "message": {"role": "user", "content": text},
    }
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def write_frame(socket_path: str, line: bytes) -> dict[str, Any]:
    """Connect, sendall, shut down the write side, close; read nothing.

    `written` says whether any byte may have reached the receiver: a failed connect
    wrote nothing, a failed write after connecting may have."""
    if not line.endswith(b"\n") or b"\n" in line[:-1]:
        raise ValueError("a frame is exactly one newline-terminated line")
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT)
    try:
        try:
            sock.connect(socket_path)
        except OSError as error:
            return {
                "ok": False,
                "written": False,
                "stage": "connect",
                "error": f"connect: {error.strerror or error}",
            }
        try:
            sock.sendall(line)
            sock.shutdown(socket.SHUT_WR)
        except OSError as error:
            return {
                "ok": False,
                "written": True,
                "stage": "write",
                "error": f"write: {error.strerror or error}",
            }
    finally:
        sock.close()
    return {"ok": True, "written": True, "stage": "done", "bytes": len(line)}


def send_frame(
    config_dir: Path, platform: Platform, expected: Target, session_id: str, line: bytes
) -> dict[str, Any]:
    """The host's side of a send: the third registry read, compared with the two the
    engine made, then the write. A mismatch refuses before any byte is written."""
    try:
        third = target(config_dir, platform, session_id)
    except NativeRefusal as refusal:
        return {
            "ok": False,
            "written": False,
            "stage": "verify",
            "error": str(refusal),
            "detail": refusal.detail,
        }
    except OSError as error:  # the registry folder could not be read: nothing was written
        return {"ok": False, "written": False, "stage": "verify", "error": f"registry: {error}"}
    if third != expected:
        return {"ok": False, "written": False, "stage": "verify", "error": RECEIVER_CHANGED}
    return write_frame(third.socket_path, line)
