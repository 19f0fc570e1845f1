"""Reading Claude Code's session registry: what counts, what is skipped and why."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from waiting import wait_until

from hosts.mac import native
from hosts.mac.platforms import LinuxPlatform, MacPlatform


def proc_start(pid: int) -> str:
    raw = Path(f"/proc/{pid}/stat").read_text()
    return raw.rpartition(")")[2].split()[19]


def write_entry(config: Path, name: str, entry: Any) -> Path:
    folder = config / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(entry if isinstance(entry, str) else json.dumps(entry))
    return path


def entry_for(pid: int, socket_path: Path | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "pid": pid,
        "sessionId": f"session-{pid}",
        "cwd": "/tmp",
        "startedAt": int(time.time() * 1000),
        "procStart": proc_start(pid),
        "peerProtocol": 1,
        "kind": "interactive",
        "status": "idle",
    }
    if socket_path is not None:
        entry["messagingSocketPath"] = str(socket_path)
    entry.update(extra)
    return entry


def test_only_pid_named_json_files_count(
    tmp_path: Path, live_process: subprocess.Popen[bytes]
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", entry_for(pid))
    write_entry(tmp_path, f"{pid}.abc.key", "secret")
    write_entry(tmp_path, "notes.json", entry_for(pid))
    write_entry(tmp_path, f"{pid}.json.tmp", entry_for(pid))
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert [e.pid for e in scan.entries] == [pid]
    assert scan.entries[0].live


def test_entry_whose_name_is_not_its_pid_is_skipped(
    tmp_path: Path, live_process: subprocess.Popen[bytes]
) -> None:
    write_entry(tmp_path, "12345.json", entry_for(live_process.pid))
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert scan.entries == []
    assert scan.skipped == [
        {"file": "12345.json", "reason": f"names pid {live_process.pid}, not 12345"}
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "empty after 5 reads"),
        ('{"pid": 5, "sessionId": "ab', "torn or not JSON after 5 reads"),
        ("[1, 2]", "not a JSON object"),
        ('{"pid": "5", "sessionId": "x"}', "names pid '5', not 5"),
        ('{"pid": 5}', "no sessionId"),
    ],
)
def test_malformed_entries_are_skipped_with_a_reason(
    tmp_path: Path, content: str, reason: str
) -> None:
    write_entry(tmp_path, "5.json", content)
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert scan.entries == []
    assert scan.skipped == [{"file": "5.json", "reason": reason}]


def test_torn_entry_is_read_again_once_the_writer_finishes(
    tmp_path: Path, live_process: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer finishes during the reader's pause after its torn read, whatever the
    machine's speed: the pause itself finishes the write."""
    pid = live_process.pid
    whole = json.dumps(entry_for(pid))
    path = write_entry(tmp_path, f"{pid}.json", whole[:30])
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == 1:
            path.write_text(whole)

    monkeypatch.setattr(native, "time", SimpleNamespace(sleep=pause))
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert pauses == [native.TORN_RETRY_DELAY]  # one torn read, one pause, one whole read
    assert [e.pid for e in scan.entries] == [pid]


def test_an_entry_empty_through_four_pauses_is_read_at_the_fifth(
    tmp_path: Path, live_process: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rewrite stalled between its truncate and its write (a loaded machine) is waited
    for, with pauses that double: 150 ms in all before the entry counts as unreadable."""
    pid = live_process.pid
    path = write_entry(tmp_path, f"{pid}.json", "")
    pauses: list[float] = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        if len(pauses) == native.TORN_RETRIES - 1:
            path.write_text(json.dumps(entry_for(pid)))

    monkeypatch.setattr(native, "time", SimpleNamespace(sleep=pause))
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    assert pauses == [0.01, 0.02, 0.04, 0.08]
    assert [e.pid for e in scan.entries] == [pid]


def test_a_chat_whose_entry_could_not_be_read_is_not_called_gone(
    tmp_path: Path, live_process: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", "")
    write_entry(tmp_path, "99999999.json", '{"pid": 99999999}')  # sorts after any pid's
    monkeypatch.setattr(native, "time", SimpleNamespace(sleep=lambda seconds: None))
    with pytest.raises(native.NativeRefusal) as refusal:
        native.target(tmp_path, LinuxPlatform(), f"session-{pid}")
    assert str(refusal.value) == (
        f"No live chat with session session-{pid} among the entries read "
        f"(skipped {pid}.json: empty after 5 reads and 1 more)"
    )


def test_symlinked_and_oversized_entries_are_skipped(
    tmp_path: Path, live_process: subprocess.Popen[bytes]
) -> None:
    pid = live_process.pid
    real = write_entry(tmp_path, "elsewhere", entry_for(pid))
    (tmp_path / "sessions" / f"{pid}.json").symlink_to(real)
    write_entry(
        tmp_path, "7.json", '{"pid": 7, "sessionId": "x", "pad": "' + "x" * (2 << 20) + '"}'
    )
    scan = native.scan_registry(tmp_path, LinuxPlatform())
    reasons = {s["file"]: s["reason"] for s in scan.skipped}
    assert reasons[f"{pid}.json"] == "not a regular file"
    assert reasons["7.json"].startswith("too large")


def test_unknown_keys_are_kept_as_description(
    tmp_path: Path, live_process: subprocess.Popen[bytes]
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", entry_for(pid, futureKey={"nested": True}))
    (entry,) = native.scan_registry(tmp_path, LinuxPlatform()).entries
    assert entry.live and entry.data["futureKey"] == {"nested": True}


def test_lingering_entry_of_an_exited_process_is_not_live(tmp_path: Path) -> None:
    process = subprocess.Popen(["true"])
    entry = entry_for(process.pid)
    process.wait()
    write_entry(tmp_path, f"{process.pid}.json", entry)
    (seen,) = native.scan_registry(tmp_path, LinuxPlatform()).entries
    assert not seen.live


def test_target_returns_the_four_facts(
    tmp_path: Path, live_process: subprocess.Popen[bytes], inbox: Path
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", entry_for(pid, inbox))
    found = native.target(tmp_path, LinuxPlatform(), f"session-{pid}")
    assert found == native.Target(pid, proc_start(pid), str(inbox), os.lstat(inbox).st_ino)


def test_target_refuses_a_peer_protocol_other_than_1(
    tmp_path: Path, live_process: subprocess.Popen[bytes], inbox: Path
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", entry_for(pid, inbox, peerProtocol=2))
    with pytest.raises(native.NativeRefusal, match="No live chat") as refusal:
        native.target(tmp_path, LinuxPlatform(), f"session-{pid}")
    assert "peer protocol 2" in (refusal.value.detail or "")


def test_entry_without_a_published_inbox_is_not_reachable(
    tmp_path: Path, live_process: subprocess.Popen[bytes]
) -> None:
    pid = live_process.pid
    write_entry(tmp_path, f"{pid}.json", entry_for(pid))
    (entry,) = native.scan_registry(tmp_path, LinuxPlatform()).entries
    assert native.socket_verdict(entry) == "inbox not published"


class TestMacPlatformOnThisMachine:
    """The macOS path: one `ps` call for every pid, startedAt compared at ps's
    one-second resolution. procps `ps` takes the same options, so it runs here."""

    def test_births_of_all_pids_come_from_one_ps_call(
        self, live_process: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        from hosts.mac import platforms

        calls: list[list[str]] = []
        real = platforms._run_ps

        def counting(args: list[str]) -> str:
            calls.append(args)
            return real(args)

        monkeypatch.setattr(platforms, "_run_ps", counting)
        others = [subprocess.Popen(["sleep", "60"]) for _ in range(5)]
        try:
            pids = [live_process.pid] + [p.pid for p in others]
            births = MacPlatform().births(pids + [999999])
        finally:
            for other in others:
                other.kill()
                other.wait()
        assert len(calls) == 1
        assert sorted(births) == sorted(pids)

    def test_started_at_after_the_process_birth_matches(
        self, live_process: subprocess.Popen[bytes]
    ) -> None:
        platform = MacPlatform()
        birth = platform.births([live_process.pid])[live_process.pid]
        started_ms = (int(birth) + 0.6) * 1000
        assert platform.birth_matches({"startedAt": started_ms}, birth)

    def test_started_at_before_the_process_birth_is_a_reused_pid(
        self, live_process: subprocess.Popen[bytes]
    ) -> None:
        platform = MacPlatform()
        birth = platform.births([live_process.pid])[live_process.pid]
        assert not platform.birth_matches({"startedAt": (int(birth) - 5) * 1000}, birth)
        assert not platform.birth_matches({"startedAt": "yesterday"}, birth)

    def test_registry_scan_through_the_mac_platform(
        self, tmp_path: Path, live_process: subprocess.Popen[bytes], inbox: Path
    ) -> None:
        pid = live_process.pid
        birth = MacPlatform().births([pid])[pid]
        entry = entry_for(pid, inbox, startedAt=int(birth) * 1000 + 300)
        del entry["procStart"]  # as a macOS entry: no /proc
        write_entry(tmp_path, f"{pid}.json", entry)
        found = native.target(tmp_path, MacPlatform(), f"session-{pid}")
        assert found.pid == pid and found.birth == birth

    def test_procargs_buffer_keeps_argument_boundaries(self) -> None:
        import struct

        from hosts.mac.procargs import parse_procargs2

        args = ["claude", "--settings", '{"crossSessionInbound": "accept"}']
        buffer = (
            struct.pack("i", 3)
            + b"/usr/local/bin/claude\0\0\0\0"
            + b"\0".join(a.encode() for a in args)
        )
        buffer += b"\0PATH=/usr/bin\0"
        assert parse_procargs2(buffer) == args


def test_linux_cmdline_and_parent(live_process: subprocess.Popen[bytes]) -> None:
    platform = LinuxPlatform()
    # Between fork and exec the child is still this interpreter.
    wait_until(lambda: platform.cmdline(live_process.pid) == ["sleep", "60"], "the child's exec")
    assert platform.parent(live_process.pid) == os.getpid()
    assert platform.cmdline(999999999) is None


def test_a_zombie_is_not_live_on_either_platform(tmp_path: Path) -> None:
    """A killed chat not yet reaped keeps its start time; it has exited all the same."""
    zombie = subprocess.Popen(["sleep", "60"])
    entry = entry_for(zombie.pid)
    zombie.kill()
    wait_until(lambda: _proc_state(zombie.pid) == "Z", "the killed child a zombie")
    try:
        write_entry(tmp_path, f"{zombie.pid}.json", entry)
        (seen,) = native.scan_registry(tmp_path, LinuxPlatform()).entries
        assert not seen.live
        assert zombie.pid not in MacPlatform().births([zombie.pid])
    finally:
        zombie.wait()


def _proc_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
