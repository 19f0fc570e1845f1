"""Hostile registry files: each is skipped with a reason, or read and never targeted;
nothing raises, and `coop chats` and `coop chat show` show them without a traceback.
Each spoilt entry is checked against its unspoilt twin, which IS targeted (a live
process, its birth, protocol 1, a real private socket): a spoilt identity field alone
makes it untargetable, a spoilt description leaves it targeted by the same four facts.

Also proved in tests/hosts/test_registry.py: torn (read again), empty, non-object JSON,
a pid of the wrong type, no sessionId, a name that is not the pid, a symlink, 2 MB."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostilekit import (
    GOOD_SESSION,
    env_for,
    live_entry,
    proc_start,
    shown_cleanly,
    write_registry,
)

from hosts.mac import native
from hosts.mac.local import LocalHost
from hosts.mac.platforms import LinuxPlatform

TEN_MB = 10 << 20


def deeply_nested(depth: int = 200_000) -> bytes:
    return b'{"pid": 5, "sessionId": "x", "deep": ' + b"[" * depth + b"]" * depth + b"}"


TEN_MB_ENTRY = b'{"pid": 5, "sessionId": "x", "pad": "' + b"x" * (TEN_MB - 39) + b'"}'
FILES: dict[str, tuple[bytes, str]] = {
    "ten megabytes": (TEN_MB_ENTRY, f"too large ({TEN_MB} bytes)"),
    "not JSON, not UTF-8": (b"\xff\xfe\x00garbage\x80\x81 {", "torn or not JSON after 5 reads"),
    "deeply nested": (deeply_nested(), "torn or not JSON after 5 reads"),
    "a JSON string": (b'"5.json"', "not a JSON object"),
    "a number for a pid": (b'{"pid": 5.0, "sessionId": "x"}', "names pid 5.0, not 5"),
    "true for a pid": (b'{"pid": true, "sessionId": "x"}', "names pid True, not 5"),
    "a list for a session id": (b'{"pid": 5, "sessionId": ["x"]}', "no sessionId"),
}


@pytest.mark.parametrize("case", list(FILES))
def test_a_hostile_registry_file_is_skipped_with_its_reason(tmp_path: Path, case: str) -> None:
    content, reason = FILES[case]
    write_registry(tmp_path, "5.json", content)
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert scan.entries == []
    assert scan.skipped == [{"file": "5.json", "reason": reason}]


def test_a_fifo_or_a_folder_named_like_an_entry_is_not_a_regular_file(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    os.mkfifo(folder / "5.json")  # opened without blocking: no writer ever comes
    (folder / "6.json").mkdir()
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    reasons = {skip["file"]: skip["reason"] for skip in scan.skipped}
    assert reasons["5.json"] == "not a regular file"
    assert reasons["6.json"].startswith(("not a regular file", "unreadable"))


@pytest.fixture
def inbox() -> Iterator[str]:
    """A private socket (0600 in a 0700 folder) for a registry entry to publish: with
    it, an unspoilt entry naming a live process is targeted."""
    folder = tempfile.mkdtemp(prefix="hi", dir="/tmp")  # a socket path fits in 104 bytes
    os.chmod(folder, 0o700)
    path = os.path.join(folder, "inbox.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o600)
    try:
        yield path
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def targetable(pid: int, inbox: str, **changes: Any) -> dict[str, Any]:
    return live_entry(pid, **{"messagingSocketPath": inbox, **changes})


def target_of(config: Path, pid: int, inbox: str, **changes: Any) -> dict[str, Any]:
    """The entry, with `changes`, written for the live pid; what the host targets for it
    (NativeRefusal when nothing). The listings around it never raise."""
    write_registry(config, f"{pid}.json", targetable(pid, inbox, **changes))
    host = LocalHost("office", config_dir=config, managed_dir=config / "managed")
    listed = host.chats(with_policy=True)
    assert [chat["pid"] for chat in listed["chats"]] + [s["file"] for s in listed["skipped"]]
    host.registry_entry(GOOD_SESSION)
    host.find_session("claude", GOOD_SESSION)
    host.health()
    found: dict[str, Any] = host.target(GOOD_SESSION)
    return found


def the_control_is_targeted(config: Path, pid: int, inbox: str) -> dict[str, Any]:
    """The unspoilt entry: a live process, its birth, protocol 1, a private socket."""
    found = target_of(config, pid, inbox)
    assert (found["pid"], found["socket_path"]) == (pid, inbox)
    assert found["birth"] == proc_start(pid)
    assert found["socket_inode"] == os.stat(inbox).st_ino
    return found


# Each identity field of an otherwise targetable entry, spoilt: never targeted.
IDENTITY_SPOILS: list[tuple[str, Any]] = [
    ("messagingSocketPath", ["/tmp/x.sock"]),
    ("messagingSocketPath", 7),
    ("messagingSocketPath", None),
    ("messagingSocketPath", ""),
    ("messagingSocketPath", "/tmp/with\u0000nul.sock"),
    ("messagingSocketPath", "relative.sock"),
    ("messagingSocketPath", "/" + "a" * 5000),
    ("peerProtocol", "1"),
    ("peerProtocol", 2),
    ("peerProtocol", None),
    ("peerProtocol", True),
    ("procStart", 12345),
    ("procStart", None),
    ("procStart", ""),
]
# Each descriptive field spoilt: description, never identity (seed 000: cwd is data):
# the entry is targeted by the same four facts as the unspoilt one, and nothing raises.
DESCRIPTION_ONLY: list[tuple[str, Any]] = [
    ("startedAt", "yesterday"),
    ("status", {"busy": True}),
    ("cwd", ["/tmp"]),
    ("cwd", "/nonexistent/\u0000"),
    ("name", {"$(reboot)": 1}),
    ("name", "\x1b]0;owned\x07\x1b[2J\nsecond line"),
    ("tmux", 42),
    ("kind", None),
]


def _ids(cases: list[tuple[str, Any]]) -> list[str]:
    return [f"{field}={value!r}"[:40] for field, value in cases]


@pytest.mark.parametrize(("field", "value"), IDENTITY_SPOILS, ids=_ids(IDENTITY_SPOILS))
def test_an_entry_with_a_spoilt_identity_field_is_never_targeted_and_never_raises(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], inbox: str, field: str, value: Any
) -> None:
    the_control_is_targeted(tmp_path, sleeper.pid, inbox)
    with pytest.raises(native.NativeRefusal):
        target_of(tmp_path, sleeper.pid, inbox, **{field: value})


@pytest.mark.parametrize(("field", "value"), DESCRIPTION_ONLY, ids=_ids(DESCRIPTION_ONLY))
def test_an_entry_with_a_spoilt_descriptive_field_is_targeted_as_before_and_never_raises(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], inbox: str, field: str, value: Any
) -> None:
    control = the_control_is_targeted(tmp_path, sleeper.pid, inbox)
    assert target_of(tmp_path, sleeper.pid, inbox, **{field: value}) == control


def test_the_cli_lists_a_hostile_registry_without_a_traceback(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], run_coop: Any
) -> None:
    config = tmp_path / "claude"
    for index, (content, _) in enumerate(FILES.values()):
        write_registry(config, f"{10 + index}.json", content)
    pid = sleeper.pid
    spoilt = {
        field: value for field, value in IDENTITY_SPOILS + DESCRIPTION_ONLY if field != "procStart"
    }
    spoilt["name"] = "\x1b]0;owned\x07\x1b[2J\nsecond line"
    write_registry(config, f"{pid}.json", live_entry(pid, **spoilt))
    (config / "sessions" / "99.json").symlink_to(config / "sessions" / f"{pid}.json")
    env = env_for(config)
    listed = run_coop("chats", "--json", env=env)
    shown_cleanly(listed, (0,))
    (chat,) = json.loads(listed.stdout)
    assert chat["pid"] == pid and chat["socket"] != "ok"
    table = run_coop("chats", env=env)
    shown_cleanly(table, (0,))
    assert "\x1b" not in table.stdout, "a chat's escape sequence reached the terminal"
    shown_cleanly(run_coop("chat", "show", GOOD_SESSION, env=env))
    shown_cleanly(run_coop("chat", "show", "$(touch /tmp/coop-pwned)", env=env))
    assert not Path("/tmp/coop-pwned").exists()
