"""The long-poll's wait: answer as soon as any watched path really changes, or at a timeout.

The paths are Claude Code's registry folder (`sessions/`, whose `<pid>.json` files are
created, replaced by rename and deleted) and JSONL transcripts (appended to; one may not
exist yet). What changed is decided by a fingerprint of the paths' metadata, never by
the event that woke the wait: an event only says "look again". The kernel is asked only
for writes, attribute changes, creations, renames and deletions, never for opens, reads
or closes without a write, so a wait is not woken by its own reading (nor anyone's).

Backends: kqueue on macOS and the BSDs, inotify (through ctypes) on Linux, and a stat
loop everywhere else, or when the native one cannot be set up. One Watcher lives as long
as its helper; its watches persist from one wait to the next. One wait at a time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
import sys
import time

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the helper starts often
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from typing import Any, NoReturn

# inotify(7) event bits: the mask asks for real changes only (no IN_ACCESS, IN_OPEN or
# IN_CLOSE_NOWRITE: a watcher woken by reads spins on its own fingerprinting).
IN_ACCESS = 0x00000001
IN_MODIFY = 0x00000002
IN_ATTRIB = 0x00000004
IN_CLOSE_WRITE = 0x00000008
IN_CLOSE_NOWRITE = 0x00000010
IN_OPEN = 0x00000020
IN_MOVED_FROM = 0x00000040
IN_MOVED_TO = 0x00000080
IN_CREATE = 0x00000100
IN_DELETE = 0x00000200
IN_DELETE_SELF = 0x00000400
IN_MOVE_SELF = 0x00000800
IN_UNMOUNT = 0x00002000
IN_Q_OVERFLOW = 0x00004000
IN_IGNORED = 0x00008000
INOTIFY_MASK = (
    IN_MODIFY
    | IN_ATTRIB
    | IN_CLOSE_WRITE
    | IN_MOVED_FROM
    | IN_MOVED_TO
    | IN_CREATE
    | IN_DELETE
    | IN_DELETE_SELF
    | IN_MOVE_SELF
)
# What wakes a wait: the mask's events, plus the kernel's "you lost some" and "gone".
_INOTIFY_WAKES = INOTIFY_MASK | IN_Q_OVERFLOW | IN_UNMOUNT
_INOTIFY_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of name
_READ_SIZE = 64 << 10
_MAX_READS = 16  # per wake-up; what is left is read on the next one

O_EVTONLY_DARWIN = 0x8000  # <fcntl.h>: open for event notification only
KQUEUE_EVENTS = 64
_BSDS = ("freebsd", "openbsd", "netbsd", "dragonfly")

# A path that cannot be watched for these reasons is watched through its parent instead.
_LOOK_HIGHER = (errno.ENOENT, errno.ENOTDIR, errno.EACCES, errno.EPERM, errno.ELOOP)


def fingerprint(paths: list[str]) -> str:
    """A digest of the paths' state now. A directory: each entry's name, inode, size and
    mtime_ns (entries sorted by name; the directory's own listing, not recursive). A file:
    its inode, size and mtime_ns. A missing path: a distinct 'missing' mark. Any OSError
    other than missing reads as that error's errno mark (never raises)."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(os.fsencode(path) + b"\0" + _state(path).encode("utf-8", "surrogateescape"))
        digest.update(b"\n")
    return digest.hexdigest()


def _mark(error: OSError) -> str:
    """How an error reads in a fingerprint: a vanished path is 'missing', others errno."""
    if isinstance(error, FileNotFoundError):
        return "missing"
    return f"errno {error.errno}"


def _state(path: str) -> str:
    """One path's part of the fingerprint."""
    try:
        info = os.stat(path)
    except OSError as error:
        return _mark(error)
    if not stat.S_ISDIR(info.st_mode):
        return f"file {info.st_ino} {info.st_size} {info.st_mtime_ns}"
    try:
        entries = sorted(os.scandir(path), key=lambda entry: entry.name)
    except OSError as error:
        return f"dir {info.st_ino} {_mark(error)}"
    lines = [f"dir {info.st_ino}"]
    for entry in entries:
        try:
            child = entry.stat(follow_symlinks=False)
        except OSError as error:
            lines.append(f"{entry.name}\0{_mark(error)}")  # gone between listing and stat
            continue
        lines.append(f"{entry.name}\0{child.st_ino} {child.st_size} {child.st_mtime_ns}")
    return "\n".join(lines)


def _nearest(path: str, arm: Callable[[str], Any]) -> tuple[str, Any]:
    """Arm `path`, or, when it cannot be (missing, not a directory, no permission), its
    nearest ancestor that can: a missing file's creation shows in its parent. Returns
    the path armed and what arming it returned; any other error is raised."""
    candidate = os.path.abspath(path)
    while True:
        try:
            return candidate, arm(candidate)
        except OSError as error:
            parent = os.path.dirname(candidate)
            if error.errno not in _LOOK_HIGHER or parent == candidate:
                raise
            candidate = parent


def _close(fd: int) -> None:
    """Close an fd we opened; one already gone is no reason to keep the others open."""
    try:
        os.close(fd)
    except OSError:
        pass


def _libc() -> Any:
    """The C library with its inotify calls typed, or None where it has none."""
    try:
        import ctypes
    except ImportError:
        return None
    try:
        lib = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None
    try:
        lib.inotify_init1.argtypes = [ctypes.c_int]
        lib.inotify_init1.restype = ctypes.c_int
        lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
        lib.inotify_add_watch.restype = ctypes.c_int
        lib.inotify_rm_watch.argtypes = [ctypes.c_int, ctypes.c_int]
        lib.inotify_rm_watch.restype = ctypes.c_int
    except AttributeError:
        return None  # a libc without inotify
    return lib


def inotify_wakes(buffer: bytes) -> bool:
    """Whether a read from an inotify fd holds an event that calls for a new look: one
    of the mask's, an overflow (events were lost) or an unmount; not IN_IGNORED alone,
    which only says a watch went (after removing it, or after its IN_DELETE_SELF)."""
    offset = 0
    while offset + _INOTIFY_EVENT.size <= len(buffer):
        _wd, mask, _cookie, length = _INOTIFY_EVENT.unpack_from(buffer, offset)
        if mask & _INOTIFY_WAKES:
            return True
        offset += _INOTIFY_EVENT.size + length
    return False


class _StatLoop:
    """No kernel help: every `interval` seconds the wait looks again."""

    name = "stat"

    def __init__(self, interval: float) -> None:
        self.interval = interval

    def sync(self, paths: Iterable[str]) -> None:
        pass  # nothing to arm: every look is a full fingerprint

    def block(self, timeout: float) -> bool:
        time.sleep(max(0.0, min(self.interval, timeout)))
        return False  # a tick, not an event

    def discard(self) -> None:
        pass

    def watched(self) -> list[str]:
        return []

    def close(self) -> None:
        pass


class _Inotify:
    """Linux: one inotify fd, a watch per path (or per missing path's nearest parent)."""

    name = "inotify"

    def __init__(self, lib: Any, select_module: Any) -> None:
        import ctypes

        self._lib = lib
        self._get_errno = ctypes.get_errno
        self._select = select_module
        self._watches: dict[str, int] = {}  # the path armed -> its watch descriptor
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)  # IN_NONBLOCK | IN_CLOEXEC
        if fd < 0:
            self._raise("inotify_init1")
        self.fd: int = fd
        self._poll = select_module.poll() if hasattr(select_module, "poll") else None
        if self._poll is not None:
            self._poll.register(fd, select_module.POLLIN)

    def _raise(self, what: str) -> NoReturn:
        code = self._get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")

    def _add(self, path: str) -> int:
        """Watch `path` (the kernel gives an inode already watched its existing wd, so
        adding again re-arms a replaced file and never watches one twice)."""
        wd: int = self._lib.inotify_add_watch(self.fd, os.fsencode(path), INOTIFY_MASK)
        if wd < 0:
            code = self._get_errno()
            raise OSError(code, os.strerror(code), path)
        return wd

    def sync(self, paths: Iterable[str]) -> None:
        """Watch exactly these paths (re-arming any replaced since); unwatch the rest."""
        watches: dict[str, int] = {}
        for path in paths:
            armed, wd = _nearest(path, self._add)
            watches[armed] = wd
        for wd in set(self._watches.values()) - set(watches.values()):
            self._lib.inotify_rm_watch(self.fd, wd)  # EINVAL: the kernel dropped it already
        self._watches = watches

    def block(self, timeout: float) -> bool:
        """Sleep in the kernel until an event or the timeout; True when one calls for a look."""
        timeout = max(0.0, timeout)  # a negative poll timeout would block for ever
        if self._poll is not None:
            ready = self._poll.poll(int(timeout * 1000) + 1)  # ms, rounded up: never spin
        else:
            ready = self._select.select([self.fd], [], [], timeout)[0]
        if not ready:
            return False
        data = self._drain()
        return not data or inotify_wakes(data)  # readable yet empty: look again (paced)

    def discard(self) -> None:
        """Drop the events queued so far (the fd never blocks)."""
        self._drain()

    def _drain(self) -> bytes:
        chunks = []
        for _ in range(_MAX_READS):
            try:
                chunk = os.read(self.fd, _READ_SIZE)
            except BlockingIOError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)

    def watched(self) -> list[str]:
        return sorted(self._watches)

    def close(self) -> None:
        self._watches = {}
        _close(self.fd)  # closing the fd drops every watch with it


class _KqueueWatch:
    __slots__ = ("fd", "key", "stale")

    def __init__(self, fd: int, key: tuple[int, int]) -> None:
        self.fd = fd
        self.key = key  # (st_dev, st_ino) of what the fd holds
        self.stale = False  # deleted, renamed or revoked: the fd no longer names the path


class _Kqueue:
    """macOS and the BSDs: one kqueue, an fd per path watched, with EVFILT_VNODE. A
    folder's fd hears entries added, removed or renamed, not writes inside an entry:
    registry files are replaced by rename, and transcripts are watched themselves."""

    name = "kqueue"

    def __init__(self, select_module: Any, darwin: bool) -> None:
        self._select = select_module
        evtonly = getattr(os, "O_EVTONLY", O_EVTONLY_DARWIN) if darwin else 0
        self._open_flags = os.O_RDONLY | evtonly  # O_EVTONLY: never holds a volume busy
        self._flags = select_module.KQ_EV_ADD | select_module.KQ_EV_CLEAR
        self._fflags = (
            select_module.KQ_NOTE_WRITE
            | select_module.KQ_NOTE_EXTEND
            | select_module.KQ_NOTE_DELETE
            | select_module.KQ_NOTE_RENAME
            | select_module.KQ_NOTE_ATTRIB
            | select_module.KQ_NOTE_LINK
            | select_module.KQ_NOTE_REVOKE
        )
        self._gone = (
            select_module.KQ_NOTE_DELETE
            | select_module.KQ_NOTE_RENAME
            | select_module.KQ_NOTE_REVOKE
        )
        self._kq = select_module.kqueue()
        self._watches: dict[str, _KqueueWatch] = {}  # the path armed -> its watch

    def _arm(self, path: str, watches: dict[str, _KqueueWatch]) -> _KqueueWatch:
        """The watch on `path`: the one already held while it still names the same file,
        else a new fd registered with the kqueue."""
        info = os.stat(path)
        key = (info.st_dev, info.st_ino)
        held = watches.get(path) or self._watches.get(path)
        if held is not None and held.key == key and not held.stale:
            return held
        fd = os.open(path, self._open_flags)
        try:
            opened = os.fstat(fd)
            event = self._select.kevent(
                fd, filter=self._select.KQ_FILTER_VNODE, flags=self._flags, fflags=self._fflags
            )
            self._kq.control([event], 0, 0)
        except BaseException:
            _close(fd)
            raise
        return _KqueueWatch(fd, (opened.st_dev, opened.st_ino))

    def sync(self, paths: Iterable[str]) -> None:
        """Watch exactly these paths (re-arming any replaced since); unwatch the rest."""
        watches: dict[str, _KqueueWatch] = {}
        try:
            for path in paths:
                armed, watch = _nearest(path, lambda candidate: self._arm(candidate, watches))
                watches[armed] = watch
        finally:
            # Whatever is not kept is closed, even when arming failed half way.
            kept = {id(watch) for watch in watches.values()}
            for watch in self._watches.values():
                if id(watch) not in kept:
                    _close(watch.fd)  # closing the fd removes its kevent
            self._watches = watches

    def block(self, timeout: float) -> bool:
        """Sleep in the kernel until an event or the timeout; True when one arrived."""
        return self._take(max(0.0, timeout))

    def discard(self) -> None:
        """Drop the events queued so far, keeping what they say of stale fds."""
        self._take(0)

    def _take(self, timeout: float) -> bool:
        events = self._kq.control(None, KQUEUE_EVENTS, timeout)
        by_fd = {watch.fd: watch for watch in self._watches.values()}
        for event in events:
            watch = by_fd.get(event.ident)
            if watch is not None and event.fflags & self._gone:
                watch.stale = True  # re-armed on the next sync
        return bool(events)

    def watched(self) -> list[str]:
        return sorted(self._watches)

    def close(self) -> None:
        for watch in self._watches.values():
            _close(watch.fd)
        self._watches = {}
        self._kq.close()


def _backend(
    platform: str, select_module: Any, stat_interval: float
) -> _StatLoop | _Inotify | _Kqueue:
    """The best backend this platform can set up; the stat loop when none can."""
    try:
        if platform == "darwin" or platform.startswith(_BSDS):
            if hasattr(select_module, "kqueue"):
                return _Kqueue(select_module, darwin=platform == "darwin")
        elif platform.startswith("linux"):
            lib = _libc()
            if lib is not None:
                return _Inotify(lib, select_module)
    except OSError:
        pass  # EMFILE, ENOSYS...: the stat loop still answers, only later
    return _StatLoop(stat_interval)


class Watcher:
    """Waits for a change to any of a set of paths; see `wait`."""

    def __init__(
        self, platform: str | None = None, select_module: Any = None, stat_interval: float = 0.05
    ) -> None:
        if select_module is None:
            import select

            select_module = select
        self._stat_interval = stat_interval
        self._backend = _backend(platform or sys.platform, select_module, stat_interval)
        self.backend: str = self._backend.name
        self.wakeups = 0  # events that woke a wait: what a spinning watcher would show

    def wait(self, paths: list[str], since: str | None, timeout: float) -> dict[str, Any]:
        """Return {"changed": bool, "digest": <fingerprint now>, "backend": self.backend}.
        If fingerprint(paths) != since (or since is None) -> changed True at once.
        Otherwise arm watches on every path (a missing file: watch its parent directory
        instead, so its creation is seen), then compute the fingerprint again (a change
        between the first fingerprint and arming must not be missed), then block until an
        event arrives or the timeout passes. On an event, recompute the fingerprint: if it
        differs from `since`, return changed True; else keep waiting for the rest of the
        timeout. At the timeout: changed False."""
        deadline = time.monotonic() + max(0.0, timeout)
        digest = fingerprint(paths)
        if since is None or digest != since:
            return self._answer(True, digest)
        self._backend.discard()  # what happened before now shows in the fingerprint below
        woken = False
        while True:
            self._arm(paths)
            digest = fingerprint(paths)  # after arming: nothing between the two is lost
            if digest != since:
                return self._answer(True, digest)
            left = deadline - time.monotonic()
            if left <= 0:
                return self._answer(False, digest)
            if woken:
                # An event that changed nothing (a sibling transcript appended to): let a
                # burst gather before looking again, so no wake-up pattern can spin.
                time.sleep(min(self._stat_interval, left))
                left = max(0.0, deadline - time.monotonic())
            woken = self._backend.block(left)
            if woken:
                self.wakeups += 1

    def watched(self) -> list[str]:
        """The paths the kernel watches now (a missing path's nearest existing parent in
        its place), each once; none for the stat loop."""
        return self._backend.watched()

    def close(self) -> None:
        """Release every watch and fd; the Watcher is not used again."""
        self._backend.close()
        self._backend = _StatLoop(self._stat_interval)
        self.backend = self._backend.name

    def _arm(self, paths: list[str]) -> None:
        try:
            self._backend.sync(paths)
        except OSError:
            # ENOSPC (watch limit), EMFILE...: a slower answer beats a missed change.
            self._backend.close()
            self._backend = _StatLoop(self._stat_interval)
            self.backend = self._backend.name

    def _answer(self, changed: bool, digest: str) -> dict[str, Any]:
        return {"changed": changed, "digest": digest, "backend": self.backend}
