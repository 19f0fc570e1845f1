"""The two processes of test_kill.

    kill_child.py receiver SOCKET LOG   a Unix socket server: every complete line it
                                        receives is appended to LOG and flushed
    kill_child.py cycles HOME SOCKET    delivery cycles against the real ledger, forever

A cycle is what the coordinator does for one envelope: add a todo, invite a chat,
record the intent (pending -> uncertain) BEFORE any I/O, then connect, send the
envelope id as one line, shut down the write side, close, and record the transport.
Both print "ready" once set up, so the test knows when kills land inside cycles.
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path


def receiver(path: str, log_path: str) -> None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(64)
    print("ready", flush=True)
    with open(log_path, "a", encoding="utf-8") as log:
        while True:
            conn, _ = server.accept()
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
            # A sender killed mid-write leaves a torn line: only complete lines count.
            for line in data.split(b"\n")[:-1]:
                log.write(line.decode() + "\n")
                log.flush()


def cycles(home: str, path: str) -> None:
    from coop_engine.db import open_ledger
    from coop_engine.engine import Engine

    engine = Engine(open_ledger(Path(home)))
    print("ready", flush=True)
    cursor = {"host": "office", "native_session": "kill-test", "offset": 0}
    while True:
        todo = engine.add_todo("Survive SIGKILL")["id"]
        outbox = engine.invite(todo, "claude:kill-test-receiver", "office")["outbox"]
        attempt = engine.mark_uncertain(outbox, cursor)["attempt"]
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(path)
            conn.sendall(outbox.encode() + b"\n")
            conn.shutdown(socket.SHUT_WR)
        engine.record_transport(outbox, attempt, {"ok": True, "written": True})


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"receiver": receiver, "cycles": cycles}[mode](*args)
