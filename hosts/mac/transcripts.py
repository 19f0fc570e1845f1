"""Reading a chat's JSONL transcript forward from a byte offset.

Only complete lines count: a torn last line waits for its newline. Offsets are byte
offsets the caller keeps; a read never goes back. Searching scans bytes for the needle
before anything is parsed, so cost follows the new bytes, not the file's history.
"""

from __future__ import annotations

import os
import re
import stat
from functools import lru_cache

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    StrPath = str | os.PathLike[str]
    T = TypeVar("T")

CHUNK = 4 << 20
NEWEST_FIRST_BYTES = 16 << 10
MAX_READ = 16 << 20
MAX_NAME = 200
SAFE_SESSION_ID = re.compile(r"^[A-Za-z0-9._-]{1,200}$")


@lru_cache(maxsize=256)  # a listing asks once per chat, and chats share a few folders
def escape_cwd(cwd: str) -> str:
    """The project folder name Claude Code derives from a working directory."""
    name = re.sub(r"[^a-zA-Z0-9]", "-", cwd)
    if len(name) > MAX_NAME:
        import hashlib

        name = name[:MAX_NAME] + "-" + hashlib.sha256(cwd.encode()).hexdigest()[:8]
    return name


def guessed(config_dir: str | os.PathLike[str], session_id: str, cwd: str | None) -> str | None:
    """Where the transcript of a session id is when its cwd's project folder holds it
    (whether a file is there is for the caller to find out); None for an id that is not
    a safe file name, or without a cwd."""
    if not cwd or not SAFE_SESSION_ID.match(session_id) or session_id.startswith("."):
        return None
    # os.path.join's answer: neither an escaped folder nor a safe id holds a "/".
    return f"{config_dir}/projects/{escape_cwd(cwd)}/{session_id}.jsonl"


def locate(
    config_dir: str | os.PathLike[str], session_id: str, cwd: str | None = None
) -> str | None:
    """The transcript for a session id, found by the id, not the cwd: the cwd only
    says where to look first."""
    if not SAFE_SESSION_ID.match(session_id) or session_id.startswith("."):
        return None
    projects = os.path.join(config_dir, "projects")
    name = f"{session_id}.jsonl"
    guess = guessed(config_dir, session_id, cwd)
    if guess is not None and os.path.isfile(guess):
        return guess
    try:
        folders = list(os.scandir(projects))
    except FileNotFoundError:
        return None  # no chat has written a transcript yet
    for folder in folders:
        candidate = os.path.join(folder.path, name)
        if folder.is_dir(follow_symlinks=False) and os.path.isfile(candidate):
            return candidate
    return None


class Chunk:
    """Complete lines read from `start`; `end` is where the next read starts."""

    def __init__(
        self,
        path: str | None,
        start: int,
        end: int,
        size: int,
        inode: int | None,
        rotated: bool = False,
    ) -> None:
        self.path = path
        self.start = start
        self.end = end
        self.size = size
        self.inode = inode
        self.rotated = rotated
        self.lines: list[tuple[int, bytes]] = []

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "size": self.size,
            "inode": self.inode,
            "rotated": self.rotated,
            "lines": [[offset, line.decode("utf-8", "replace")] for offset, line in self.lines],
        }


def _open_at(path: StrPath | None, offset: int, inode: int | None) -> tuple[Any, Chunk]:
    """Open the file and decide where reading starts: a file that is shorter than the
    offset, or another file under the same name, was rotated and is read from 0."""
    if path is None:
        return None, Chunk(None, offset, offset, 0, None)
    # Only a missing file reads as empty; any other error is raised: a read that failed
    # is not a read that found nothing, and "no entry for the id" may expire a delivery.
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return None, Chunk(os.fspath(path), offset, offset, 0, None)
    info = os.fstat(handle.fileno())
    rotated = info.st_size < offset or (inode is not None and info.st_ino != inode)
    start = 0 if rotated else offset
    return handle, Chunk(os.fspath(path), start, start, info.st_size, info.st_ino, rotated=rotated)


def split_lines(data: bytes, base: int) -> tuple[list[tuple[int, bytes]], int]:
    """Complete lines of `data` (which starts at byte `base`) and the offset after the
    last newline."""
    lines = []
    position = 0
    while True:
        newline = data.find(b"\n", position)
        if newline < 0:
            break
        if newline > position:
            lines.append((base + position, data[position:newline]))
        position = newline + 1
    return lines, base + position


def read_lines(
    path: StrPath | None, offset: int, max_bytes: int = MAX_READ, inode: int | None = None
) -> Chunk:
    """Complete lines from `offset`, at most about `max_bytes` of them."""
    handle, chunk = _open_at(path, offset, inode)
    if handle is None:
        return chunk
    with handle:
        handle.seek(chunk.start)
        data = handle.read(max_bytes)
    lines, chunk.end = split_lines(data, chunk.start)
    if not lines and len(data) >= max_bytes:
        # One line longer than the whole budget: skip it rather than stall forever.
        lines, chunk.end = _skip_long_line(path, chunk.start)
    chunk.lines = lines
    return chunk


def _skip_long_line(path: StrPath | None, start: int) -> tuple[list[tuple[int, bytes]], int]:
    assert path is not None
    with open(path, "rb") as handle:
        handle.seek(start)
        position = start
        while True:
            block = handle.read(CHUNK)
            if not block:
                return [], start
            newline = block.find(b"\n")
            if newline >= 0:
                return [], position + newline + 1
            position += len(block)


def scan_for(
    path: StrPath | None, offset: int, needles: list[bytes], inode: int | None = None
) -> Chunk:
    """Complete lines from `offset` to the end that contain any needle. The bytes are
    searched first, in one reused buffer; lines are cut out only around a hit."""
    handle, chunk = _open_at(path, offset, inode)
    if handle is None:
        return chunk
    buffer = bytearray(CHUNK)
    filled = 0  # bytes of an unfinished line carried to the buffer's front
    base = chunk.start
    hits: list[tuple[int, bytes]] = []
    with handle:
        handle.seek(chunk.start)
        while True:
            with memoryview(buffer) as free:
                read = handle.readinto(free[filled:])
            if not read:
                break
            total = filled + read
            end = buffer.rfind(b"\n", 0, total) + 1
            if end == 0:
                if total == len(buffer):
                    buffer.extend(bytes(len(buffer)))  # one line longer than the buffer
                filled = total
                continue
            for needle in needles:
                _collect_hits(buffer, end, base, needle, hits)
            base += end
            filled = total - end
            buffer[:filled] = buffer[end:total]
    chunk.end = base
    chunk.lines = sorted(set(hits))
    return chunk


def _collect_hits(
    data: bytearray, end: int, base: int, needle: bytes, into: list[tuple[int, bytes]]
) -> None:
    position = data.find(needle, 0, end)
    while position >= 0:
        line_start = data.rfind(b"\n", 0, position) + 1
        line_end = data.find(b"\n", position, end)
        into.append((base + line_start, bytes(data[line_start:line_end])))
        position = data.find(needle, line_end, end)


def _open_regular(path: StrPath | None) -> tuple[int, os.stat_result] | None:
    """The file open for reading, and its stat, when a regular file is at `path`."""
    if path is None:
        return None
    try:
        # O_NONBLOCK: a FIFO named like a transcript must not hold the reader.
        fd = os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    return fd, info


def newest_line(
    path: StrPath | None,
    needle: bytes,
    max_bytes: int,
    take: Callable[[bytes], T | None],
    buffer: bytearray | None = None,
    first_bytes: int = NEWEST_FIRST_BYTES,
) -> tuple[T | None, bool] | None:
    """What `take` makes of the newest line holding `needle` that it takes (not None),
    among the complete lines `tail(path, max_bytes)` gives, and whether the answer is
    the whole file's: True when a line was taken or the tail is the whole file; False
    when none was taken in a tail that began after the file's first byte (an older line
    may still hold one). None when no regular file is there. `needle` holds no newline.

    Read backwards in windows that grow fourfold from `first_bytes`, and only a line
    holding the needle is cut out: a transcript's tail is mostly tool output, and
    splitting a quarter megabyte of it into lines, for each of 200 chats, cost three
    times the rest of `coop chats` (issue 32). Read into `buffer` when given, grown in
    place to the largest window read: a listing passes one for all its chats, where a
    fresh window for each read cost more than the search."""
    opened = _open_regular(path)
    if opened is None:
        return None
    fd, info = opened
    try:
        floor = max(0, info.st_size - max_bytes - 1)  # where tail() starts reading
        if buffer is None:
            buffer = bytearray()
        searched = info.st_size  # the lines from here on have been looked at
        window = first_bytes
        while True:
            start = max(floor, info.st_size - window - 1)  # one byte early, as tail()
            if len(buffer) < searched - start:
                buffer += bytes(searched - start - len(buffer))
            os.lseek(fd, start, os.SEEK_SET)  # os.preadv is missing before macOS 11
            with memoryview(buffer) as free:
                length = os.readv(fd, [free[: searched - start]])
            taken = _newest_taken(buffer, length, start > 0, needle, take)
            if taken is not None or start == floor:
                return taken, taken is not None or floor == 0
            first_newline = buffer.find(b"\n", 0, length)
            if first_newline >= 0:  # lines before it may begin further back
                searched = start + first_newline + 1
            window *= 4
    finally:
        os.close(fd)


def _newest_taken(
    data: bytearray, length: int, cut: bool, needle: bytes, take: Callable[[bytes], T | None]
) -> T | None:
    """newest_line within one window, the first `length` bytes of `data`. `cut`: the
    window's first line may have begun before it (it starts after the file's first
    byte), so it is not a line here."""
    below = length
    while (at := data.rfind(needle, 0, below)) >= 0:
        line_start = data.rfind(b"\n", 0, at) + 1
        if line_start == 0 and cut:
            return None
        line_end = data.find(b"\n", at, length)
        if line_end >= 0:  # else the last line, its newline not written yet
            taken = take(bytes(data[line_start:line_end]))
            if taken is not None:
                return taken
        below = line_start
    return None


def tail(path: StrPath | None, max_bytes: int) -> Chunk:
    """The complete lines in the last `max_bytes` of the file; no lines and no inode
    when no regular file is there."""
    name = None if path is None else os.fspath(path)
    opened = _open_regular(name)
    if opened is None:
        return Chunk(name, 0, 0, 0, None)
    fd, info = opened
    try:
        # Start one byte early: if that byte is a newline, the first line is whole.
        start = max(0, info.st_size - max_bytes - 1)
        data = os.pread(fd, info.st_size - start, start)
    finally:
        os.close(fd)
    chunk = Chunk(name, start, start, info.st_size, info.st_ino)
    chunk.lines, chunk.end = split_lines(data, start)
    if start > 0 and chunk.lines and chunk.lines[0][0] == start:
        chunk.lines = chunk.lines[1:]
    return chunk
