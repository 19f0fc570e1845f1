"""The simulated chat's registry entry, files, command line and life cycle."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

from hosts.sim.options import default_socket_dir
from hosts.sim.process import parse_stat_start

# The keys of a 2.1.328 entry, in its order (OBSERVED.md section 2; "tmux" only in tmux).
KEYS = [
    "pid",
    "sessionId",
    "cwd",
    "startedAt",
    "procStart",
    "version",
    "peerProtocol",
    "peerFeatures",
    "kind",
    "entrypoint",
    "pidDomain",
    "asksForConvertedSkills",
    "messagingSocketPath",
    "name",
    "nameSource",
    "nameSince",
    "status",
    "updatedAt",
    "statusUpdatedAt",
]


def mode_of(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def key_files(chat) -> list[Path]:
    return sorted(chat.registry_path.parent.glob(f"{chat.pid}.*.key"))


def test_registry_entry_has_the_observed_keys_and_modes(start_chat) -> None:
    chat = start_chat("--name", "coop-worker")
    entry = chat.registry()
    assert list(entry) == KEYS
    assert entry["asksForConvertedSkills"] is None
    assert entry["pidDomain"].startswith("linux:") and ":pid:[" in entry["pidDomain"]
    assert chat.registry_path.name == f"{chat.pid}.json"
    assert entry["pid"] == chat.pid
    assert entry["sessionId"] == chat.session_id
    assert entry["cwd"] == os.path.realpath(chat.home.cwd)
    assert entry["version"] == "2.1.328"
    assert entry["peerProtocol"] == 1
    assert entry["kind"] == "interactive" and entry["entrypoint"] == "cli"
    assert entry["name"] == "coop-worker" and entry["nameSource"] == "user"
    assert entry["status"] == "idle"
    assert entry["messagingSocketPath"] == str(chat.socket)
    # Compact JSON, as Claude Code writes it.
    assert chat.registry_path.read_text() == json.dumps(entry, separators=(",", ":"))
    assert mode_of(chat.registry_path.parent) == 0o700
    assert mode_of(chat.registry_path) == 0o644
    [key] = key_files(chat)
    assert len(key.name.split(".")[1]) == 64
    assert mode_of(key) == 0o600
    assert set(json.loads(key.read_text())) == {"peerToken", "procStart", "pidDomain"}
    assert stat.S_ISSOCK(os.lstat(chat.socket).st_mode)
    assert mode_of(chat.socket) == 0o600
    assert mode_of(chat.socket.parent) == 0o700
    assert chat.socket == chat.home.sockets / f"{chat.pid}.sock"


def test_proc_start_is_field_22_of_the_live_process_stat(start_chat) -> None:
    chat = start_chat()
    stat_line = Path(f"/proc/{chat.pid}/stat").read_text()
    assert chat.registry()["procStart"] == stat_line.split(") ")[-1].split()[19]


def test_stat_parsing_survives_parentheses_and_spaces_in_the_command_name() -> None:
    # The command name is "a) (b c": only the LAST ")" ends it. Field n holds "n".
    tail = " ".join(str(n) for n in range(4, 53))
    assert parse_stat_start(f"4242 (a) (b c) S {tail}\n") == "22"


def test_no_transcript_exists_before_the_first_message(start_chat) -> None:
    chat = start_chat()
    assert not chat.transcript_path.exists()
    assert chat.transcript_path.name == f"{chat.session_id}.jsonl"


def test_history_writes_a_typed_first_turn(start_chat) -> None:
    chat = start_chat("--history", "--permission-mode", "acceptEdits")
    lines = chat.transcript()
    assert lines[1] == {
        "type": "permission-mode",
        "permissionMode": "acceptEdits",
        "sessionId": chat.session_id,
    }
    [typed] = chat.of_type(lines, "user")
    assert typed["promptSource"] == "typed"
    assert typed["origin"] == {"kind": "human"}
    assert typed["permissionMode"] == "acceptEdits"
    assert typed["parentUuid"] is None
    assert len(chat.finals(lines)) == 1


def test_clean_exit_removes_entry_key_and_socket(start_chat) -> None:
    chat = start_chat()
    assert key_files(chat)
    assert chat.stop() == 0
    assert not chat.registry_path.exists()
    assert not key_files(chat)
    assert not chat.socket.exists()


def test_sigkill_leaves_entry_key_and_socket_behind(start_chat) -> None:
    chat = start_chat()
    chat.kill(signal.SIGKILL)
    chat.proc.wait(timeout=5)
    assert chat.registry_path.exists()
    assert key_files(chat)
    assert chat.socket.exists()


def test_status_changes_rewrite_the_same_file_in_place(start_chat) -> None:
    chat = start_chat()
    inode = os.stat(chat.registry_path).st_ino
    before = chat.registry()["statusUpdatedAt"]
    chat.kill(signal.SIGUSR2)  # the user starts a turn with tool calls
    busy = chat.wait_status("busy")
    assert busy["statusUpdatedAt"] >= before
    chat.wait_status("idle")
    assert os.stat(chat.registry_path).st_ino == inode


def test_inbound_and_mode_sugar_becomes_real_flags_in_the_process_command_line(
    start_chat,
) -> None:
    chat = start_chat("--inbound", "hold", "--dialog-expiry", "60s", "--mode", "bypassPermissions")
    assert chat.pid == chat.proc.pid  # re-exec keeps the pid
    argv = Path(f"/proc/{chat.pid}/cmdline").read_bytes().split(b"\0")[:-1]
    args = [a.decode() for a in argv]
    assert "--inbound" not in args and "--dialog-expiry" not in args and "--mode" not in args
    settings = json.loads(args[args.index("--settings") + 1])
    assert settings == {"crossSessionInbound": "hold", "dialogExpiry": "60s"}
    assert args[args.index("--permission-mode") + 1] == "bypassPermissions"


def test_inbound_sugar_merges_into_a_given_settings_object(start_chat) -> None:
    chat = start_chat("--settings", '{"theme":"dark"}', "--inbound", "accept")
    args = Path(f"/proc/{chat.pid}/cmdline").read_bytes().decode().split("\0")
    assert args.count("--settings") == 1
    merged = json.loads(args[args.index("--settings") + 1])
    assert merged == {"theme": "dark", "crossSessionInbound": "accept"}


def test_bad_arguments_exit_2_with_one_line(sim_home) -> None:
    for bad in (
        ["--inbound", "maybe"],
        ["--session-id", "not-a-uuid"],
        ["--settings", "{not json"],
        ["--mode", "plan", "--permission-mode", "auto"],
        ["--cwd", str(sim_home.root / "missing")],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "hosts.sim", "chat", "--config-dir", str(sim_home.config), *bad],
            cwd=Path(__file__).resolve().parents[2],
            capture_output=True,
            text=True,
            timeout=10,
        )
        assert done.returncode == 2, bad
        assert done.stdout == ""
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_a_bad_time_scale_is_a_usage_error(sim_home) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hosts.sim", "chat", "--config-dir", str(sim_home.config)],
        cwd=Path(__file__).resolve().parents[2],
        env={**os.environ, "COOP_SIM_TIME_SCALE": "0"},
        capture_output=True,
        text=True,
        timeout=10,
    )
    assert done.returncode == 2
    assert "COOP_SIM_TIME_SCALE" in done.stderr


def test_the_default_socket_folder_is_where_the_real_chat_binds(monkeypatch) -> None:
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", "/tmp")
    assert default_socket_dir() == Path("/tmp/cc-socks")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/501")
    assert default_socket_dir() == Path("/run/user/501/cc-socks")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/" + "r" * 100)
    assert default_socket_dir() == Path(f"/tmp/cc-socks-{os.getuid()}")
