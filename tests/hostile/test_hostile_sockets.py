"""Hostile sockets where a chat's inbox should be: each is refused before any byte is
written, the envelope waits as pending with the reason, and `coop tick` shows no
traceback.

Also proved in tests/door/test_refusals.py: a socket with group or other bits, its
folder with them, a symlink in place of the socket, a regular file in its place, a
socket chowned to another uid; tests/ssh/test_host_contract.py: the same on a remote Mac."""

from __future__ import annotations

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostilekit import env_for, live_entry, no_frames, shown_cleanly, write_registry
from prerequisites import missing
from waiting import wait_until

from hosts.mac.native import SOCKET_NOT_PRIVATE
from hosts.sim.launch import SimFleet

OTHER_USER = "coop-hostile"
LISTENER = """
import socket, sys
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(sys.argv[1])
server.listen(8)
print("ready", flush=True)
while True:
    conn, _ = server.accept()
    with conn, open(sys.argv[2], "ab") as log:
        while chunk := conn.recv(65536):
            log.write(chunk)
"""


def outbox(run_coop: Any, env: dict[str, str]) -> dict[str, Any]:
    listed = run_coop("outbox", "--json", env=env)
    shown_cleanly(listed, (0,))
    (row,) = json.loads(listed.stdout)
    return dict(row)


def invite_and_tick(run_coop: Any, env: dict[str, str], ref: str) -> dict[str, Any]:
    shown_cleanly(run_coop("todo", "add", "Fix the flaky importer test", env=env), (0,))
    shown_cleanly(run_coop("invite", "1", "--session", ref, env=env), (0,))
    shown_cleanly(run_coop("tick", env=env), (0,))
    return outbox(run_coop, env)


def test_a_fifo_in_place_of_the_socket_is_refused(sims: SimFleet, run_coop: Any) -> None:
    chat = sims.start()
    chat.socket.unlink()
    os.mkfifo(chat.socket, 0o600)
    row = invite_and_tick(run_coop, env_for(sims.config_dir), chat.ref)
    assert row["state"] == "pending" and row["last_error"].startswith(SOCKET_NOT_PRIVATE)
    no_frames(chat)


@pytest.fixture
def other_user() -> pwd.struct_passwd:
    if os.getuid() != 0:
        missing("creating a second user needs root; CI runs as root")
    try:
        return pwd.getpwnam(OTHER_USER)
    except KeyError:
        pass
    added = subprocess.run(
        ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", OTHER_USER],
        capture_output=True, text=True,
    )  # fmt: skip
    if added.returncode != 0 and "already exists" not in added.stderr:
        missing(f"useradd failed: {added.stderr.strip()}")
    return pwd.getpwnam(OTHER_USER)


@pytest.fixture
def foreign_inbox(
    other_user: pwd.struct_passwd,
) -> Iterator[tuple[subprocess.Popen[str], Path, Path]]:
    """A socket bound and served by another user's process, in that user's folder."""
    folder = Path(tempfile.mkdtemp(prefix="cf", dir="/tmp"))
    os.chown(folder, other_user.pw_uid, other_user.pw_gid)
    path, log = folder / "inbox.sock", folder / "received"
    # The system's Python: this checkout's may sit where another user cannot enter.
    python = shutil.which("python3", path="/usr/bin:/bin") or sys.executable
    process = subprocess.Popen(
        [python, "-c", LISTENER, str(path), str(log)],
        stdout=subprocess.PIPE, text=True, user=other_user.pw_uid, group=other_user.pw_gid,
    )  # fmt: skip
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
        yield process, path, log
    finally:
        process.kill()
        process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def test_a_socket_owned_by_another_user_is_refused_and_hears_nothing(
    tmp_path: Path,
    foreign_inbox: tuple[subprocess.Popen[str], Path, Path],
    run_coop: Any,
) -> None:
    process, path, log = foreign_inbox
    config = tmp_path / "claude"
    session = "0e3b9a77-41c2-4f58-b6d0-8c5a2e917f30"
    entry = live_entry(process.pid, session, messagingSocketPath=str(path))
    write_registry(config, f"{process.pid}.json", entry)
    env = env_for(config)
    chats = json.loads(run_coop("chats", "--json", env=env).stdout)
    assert (
        chats[0]["socket"].startswith(SOCKET_NOT_PRIVATE) and "owned by uid" in chats[0]["socket"]
    )
    row = invite_and_tick(run_coop, env, f"claude:{session}")
    assert row["state"] == "pending" and row["last_error"].startswith(SOCKET_NOT_PRIVATE)
    # The listener was there all along: Coop chose not to write. It reads one connection
    # after another, so a probe it logged means anything written before it is logged.
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.connect(str(path))
        probe.sendall(b"probe\n")
    wait_until(lambda: log.exists() and b"probe" in log.read_bytes(), "the probe logged")
    assert log.read_bytes() == b"probe\n"
