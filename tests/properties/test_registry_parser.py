"""Properties of the registry reader (hosts/mac/native.py) and what reads entries after it,
for any file content and any JSON object: an entry is either usable or skipped with a
reason, and nothing ever raises but the door's own refusal."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings

from coop_engine import receipts
from hosts.mac import native
from hosts.mac.local import LocalHost
from hosts.mac.platforms import LinuxPlatform

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
PID = os.getpid()  # a live process, so a spoilt entry can get as far as the socket checks
SESSION = "5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=30)
    | st.sampled_from(["/tmp", "\x00", "../..", "$(reboot)", SESSION, str(PID)])
)
JSON = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
KEYS = st.sampled_from(
    [
        "pid", "sessionId", "cwd", "startedAt", "procStart", "version", "peerProtocol",
        "kind", "entrypoint", "name", "tmux", "messagingSocketPath", "status", "waitingFor",
    ]
)  # fmt: skip


def proc_start(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def base_entry() -> dict[str, Any]:
    return {
        "pid": PID,
        "sessionId": SESSION,
        "cwd": "/tmp",
        "procStart": proc_start(PID),
        "peerProtocol": 1,
        "status": "idle",
    }


def scan_of(content: bytes, name: str) -> native.Scan:
    with tempfile.TemporaryDirectory() as config:
        folder = Path(config) / "sessions"
        folder.mkdir()
        (folder / name).write_bytes(content)
        return native.scan_registry(Path(config), LinuxPlatform())


def usable_or_skipped(scan: native.Scan, name: str) -> None:
    assert len(scan.entries) + len(scan.skipped) == 1
    if scan.skipped:
        (skip,) = scan.skipped
        assert skip["file"] == name and isinstance(skip["reason"], str) and skip["reason"]
    else:
        (entry,) = scan.entries
        assert type(entry.data["pid"]) is int and f"{entry.data['pid']}.json" == name
        assert isinstance(entry.session_id, str) and entry.session_id


@settings(SETTINGS, max_examples=100)  # a torn or empty file is read 3 times, 10 ms apart
@given(st.binary(max_size=400))
def test_any_bytes_are_an_entry_or_skipped_with_a_reason(content: bytes) -> None:
    usable_or_skipped(scan_of(content, "5.json"), "5.json")


@SETTINGS
@given(JSON)
def test_any_json_value_is_an_entry_or_skipped_with_a_reason(value: Any) -> None:
    usable_or_skipped(scan_of(json.dumps(value).encode(), "5.json"), "5.json")


@SETTINGS
@given(st.dictionaries(KEYS, JSON, max_size=6))
def test_any_spoilt_live_entry_is_listed_or_refused_never_raises(changes: dict[str, Any]) -> None:
    entry = {**base_entry(), **changes}
    with tempfile.TemporaryDirectory() as config:
        folder = Path(config) / "sessions"
        folder.mkdir()
        (folder / f"{PID}.json").write_text(json.dumps(entry))
        host = LocalHost("office", config_dir=Path(config), managed_dir=Path(config) / "managed")
        listed = host.chats(with_policy=True)
        assert len(listed["chats"]) + len(listed["skipped"]) == 1
        try:
            found = host.target(SESSION)
        except native.NativeRefusal as refusal:
            assert str(refusal)
        else:
            assert found["pid"] == PID  # only a real private socket could get here
        host.registry_entry(SESSION)
        host.find_session("claude", SESSION)


@SETTINGS
@given(st.lists(JSON | st.binary(max_size=40).map(lambda b: b.decode("latin-1")), max_size=8))
def test_any_transcript_lines_give_sightings_and_finals_without_raising(values: list[Any]) -> None:
    lines = [
        (index * 100, value if isinstance(value, str) else json.dumps(value))
        for index, value in enumerate(values)
    ]
    receipts.sightings(lines, SESSION)
    list(receipts.finals(lines))
