"""Hostile registry files: each is skipped with a reason, or read and never targeted;
nothing raises, and `coop chats` and `coop chat show` show them without a traceback.

Also proved in tests/hosts/test_registry.py: torn (read again), empty, non-object JSON,
a pid of the wrong type, no sessionId, a name that is not the pid, a symlink, 2 MB."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from hostilekit import GOOD_SESSION, env_for, live_entry, shown_cleanly, write_registry

from hosts.mac import native
from hosts.mac.local import LocalHost
from hosts.mac.platforms import LinuxPlatform

TEN_MB = 10 << 20


def deeply_nested(depth: int = 200_000) -> bytes:
    return b'{"pid": 5, "sessionId": "x", "deep": ' + b"[" * depth + b"]" * depth + b"}"


TEN_MB_ENTRY = b'{"pid": 5, "sessionId": "x", "pad": "' + b"x" * (TEN_MB - 39) + b'"}'
FILES: dict[str, tuple[bytes, str]] = {
    "ten megabytes": (TEN_MB_ENTRY, f"too large ({TEN_MB} bytes)"),
    "not JSON, not UTF-8": (b"\xff\xfe\x00garbage\x80\x81 {", "torn or not JSON after 3 reads"),
    "deeply nested": (deeply_nested(), "torn or not JSON after 3 reads"),
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


# Each field of an otherwise targetable entry, spoilt.
WRONG_TYPES: list[tuple[str, Any]] = [
    ("messagingSocketPath", ["/tmp/x.sock"]),
    ("messagingSocketPath", 7),
    ("messagingSocketPath", "/tmp/with\u0000nul.sock"),
    ("messagingSocketPath", "relative.sock"),
    ("messagingSocketPath", "/" + "a" * 5000),
    ("peerProtocol", "1"),
    ("peerProtocol", True),
    ("procStart", 12345),
    ("procStart", None),
    ("startedAt", "yesterday"),
    ("status", {"busy": True}),
    ("cwd", ["/tmp"]),
    ("cwd", "/nonexistent/\u0000"),
    ("name", {"$(reboot)": 1}),
    ("name", "\x1b]0;owned\x07\x1b[2J\nsecond line"),
    ("tmux", 42),
    ("kind", None),
]


@pytest.mark.parametrize(
    ("field", "value"), WRONG_TYPES, ids=[f"{f}={v!r}"[:40] for f, v in WRONG_TYPES]
)
def test_an_entry_with_a_field_of_the_wrong_type_is_never_targeted_and_never_raises(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], field: str, value: Any
) -> None:
    pid = sleeper.pid
    write_registry(tmp_path, f"{pid}.json", live_entry(pid, **{field: value}))
    host = LocalHost("office", config_dir=tmp_path, managed_dir=tmp_path / "managed")
    listed = host.chats(with_policy=True)
    assert [chat["pid"] for chat in listed["chats"]] + [s["file"] for s in listed["skipped"]]
    with pytest.raises(native.NativeRefusal):
        host.target(GOOD_SESSION)
    host.registry_entry(GOOD_SESSION)
    host.find_session("claude", GOOD_SESSION)
    host.health()


def test_the_cli_lists_a_hostile_registry_without_a_traceback(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], run_coop: Any
) -> None:
    config = tmp_path / "claude"
    for index, (content, _) in enumerate(FILES.values()):
        write_registry(config, f"{10 + index}.json", content)
    pid = sleeper.pid
    spoilt = {field: value for field, value in WRONG_TYPES if field != "procStart"}
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
