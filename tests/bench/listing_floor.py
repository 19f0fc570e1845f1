"""The least a Python program pays to list a Mac's chats: what cli_list weighs `coop
chats --json` against besides `python -c pass`.

It reads what a listing must read for each `<pid>.json` of the registry, once and with
no checks: the entry (parsed), the process's start time (/proc stat) and command line,
the inbox socket (lstat), and the transcript's tail back to the newest line that records
a permission mode (parsed; read in one piece, up to 16 MB); then it prints a JSON row
per chat. No policy, no validation, no modules but the standard library's os, sys and
json. Run as
`python -m tests.bench.listing_floor`, so that its bytecode is cached as Coop's is.
"""

import json
import os
import sys

TAIL = 16 << 20  # as far back as a listing looks for the mode
NEEDLE = b'"permissionMode"'


def read(path: str, size: int = 65536, offset: int = 0) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.pread(fd, size, offset)
    finally:
        os.close(fd)


def tail(path: str, buffer: bytearray) -> int:
    """The file's last TAIL bytes read into `buffer`, grown as needed (one for every
    transcript: a new object per read would cost more than the read); how many."""
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        wanted = min(size, TAIL)
        if len(buffer) < wanted:
            buffer += bytes(wanted - len(buffer))
        read = os.preadv(fd, [memoryview(buffer)[:wanted]], size - wanted)
    finally:
        os.close(fd)
    return read


def newest_mode(buffer: bytearray, size: int) -> str | None:
    at = buffer.rfind(NEEDLE, 0, size)
    if at < 0:
        return None
    end = buffer.find(b"\n", at, size)
    line = buffer[buffer.rfind(b"\n", 0, at) + 1 : end if end >= 0 else size]
    return json.loads(line.decode()).get("permissionMode")


def main() -> None:
    config = os.environ["CLAUDE_CONFIG_DIR"]
    folder = f"{config}/sessions"
    rows = []
    buffer = bytearray()
    for name in sorted(os.listdir(folder)):
        entry = json.loads(read(f"{folder}/{name}").decode())
        pid, session_id, cwd = entry["pid"], entry["sessionId"], entry["cwd"]
        started = read(f"/proc/{pid}/stat").rpartition(b")")[2].split(None, 20)[19]
        argv = read(f"/proc/{pid}/cmdline").decode().split("\0")[:-1]
        socket = os.lstat(entry["messagingSocketPath"])
        transcript = f"{config}/projects/{cwd.replace('/', '-')}/{session_id}.jsonl"
        mode = newest_mode(buffer, tail(transcript, buffer))
        rows.append(
            {
                "session_id": session_id,
                "pid": pid,
                "live": started.decode() == str(entry.get("procStart")),
                "name": entry.get("name"),
                "status": entry.get("status"),
                "cwd": cwd,
                "socket": socket.st_mode,
                "mode": mode,
                "argv": len(argv),
            }
        )
    sys.stdout.write(json.dumps(rows, separators=(",", ":")))


if __name__ == "__main__":
    main()
