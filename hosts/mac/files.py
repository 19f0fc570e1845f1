"""Reading small files with as few calls as possible: `coop chats` reads several per chat."""

from __future__ import annotations

import os


def read_file(path: str, limit: int = 1 << 20) -> bytes:
    """Up to `limit` bytes of a file, read unbuffered. Raises OSError."""
    fd = os.open(path, os.O_RDONLY)
    try:
        parts = []
        remaining = limit
        while remaining > 0:
            part = os.read(fd, min(remaining, 1 << 16))
            if not part:
                break
            parts.append(part)
            remaining -= len(part)
        return b"".join(parts)
    finally:
        os.close(fd)
