"""Where each input of the inbound prediction is read (DESIGN 5.6), from real files: the
managed settings and their `managed-settings.d` parts, the chat's `--settings` flag
(inline or a file beside the chat's cwd), user settings, the repository's two files in
the chat's cwd, and the chat's permission mode (its transcript's latest, else its
command line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from coop_engine.policy import inbound_policy
from hosts.mac.settings import MODE_TAIL_BYTES, SettingsReader, recorded_mode


class Mac:
    """A chat's surroundings: config dir, managed dir, its cwd and its command line."""

    def __init__(self, root: Path) -> None:
        self.config = root / "claude"
        self.managed = root / "managed"
        self.cwd = root / "project"
        for folder in (self.config, self.managed, self.cwd):
            folder.mkdir()
        self.argv: list[str] | None = ["claude"]

    def write(self, path: Path, value: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))

    def predict(self, transcript: Path | None = None) -> dict[str, Any]:
        reader = SettingsReader(self.config, self.managed, lambda pid: self.argv)
        entry = {"pid": 4242, "cwd": str(self.cwd)}
        read = recorded_mode(str(transcript) if transcript else None)
        return inbound_policy(reader.inputs(entry, *(read or (None, True))))


@pytest.fixture
def mac(tmp_path: Path) -> Mac:
    return Mac(tmp_path)


def said(got: dict[str, Any]) -> tuple[str, str]:
    return got["verdict"], got["source"]


def test_managed_settings_parts_are_merged_in_name_order_the_later_winning(mac: Mac) -> None:
    mac.write(mac.managed / "managed-settings.json", {"crossSessionInbound": "accept"})
    mac.write(mac.managed / "managed-settings.d" / "10-hold.json", {"crossSessionInbound": "hold"})
    assert said(mac.predict()) == ("hold", "managed")
    mac.write(
        mac.managed / "managed-settings.d" / "50-lock.json", {"crossSessionInbound": "refuse"}
    )
    assert said(mac.predict()) == ("refuse", "managed")


def test_only_json_parts_count_in_name_order_whatever_order_they_were_written(mac: Mac) -> None:
    parts = mac.managed / "managed-settings.d"
    for name, verdict in [("50-last", "refuse"), ("20", "hold"), ("40", "accept"), ("10", "hold")]:
        mac.write(parts / f"{name}.json", {"crossSessionInbound": verdict})
    # Not parts: unreadable as JSON, they would make the prediction unknown.
    (parts / "60-notes.txt").write_text("not JSON")
    (parts / "README").write_text("{")
    assert said(mac.predict()) == ("refuse", "managed")


def test_a_settings_flag_naming_a_file_is_read_beside_the_chats_cwd(mac: Mac) -> None:
    mac.write(mac.cwd / "conf" / "coop.json", {"crossSessionInbound": "refuse"})
    mac.write(mac.config / "settings.json", {"crossSessionInbound": "accept"})
    mac.argv = ["claude", "--settings", "conf/coop.json"]
    assert said(mac.predict()) == ("refuse", "settings-flag")


def test_an_inline_settings_flag_in_its_equals_form_counts(mac: Mac) -> None:
    mac.write(mac.config / "settings.json", {"crossSessionInbound": "accept"})
    mac.argv = ["claude", '--settings={"crossSessionInbound": "refuse"}']
    assert said(mac.predict()) == ("refuse", "settings-flag")


def test_user_settings_come_from_the_config_dir(mac: Mac) -> None:
    mac.write(mac.config / "settings.json", {"crossSessionInbound": "hold"})
    assert said(mac.predict()) == ("hold", "user")


def test_both_repository_files_in_the_chats_cwd_can_tighten(mac: Mac) -> None:
    mac.write(mac.config / "settings.json", {"crossSessionInbound": "accept"})
    mac.write(mac.cwd / ".claude" / "settings.json", {"crossSessionInbound": "hold"})
    assert said(mac.predict()) == ("hold", "project")
    mac.write(mac.cwd / ".claude" / "settings.local.json", {"crossSessionInbound": "refuse"})
    assert said(mac.predict()) == ("refuse", "project-local")


def test_dangerously_skip_permissions_on_the_command_line_is_a_bypassing_receiver(
    mac: Mac,
) -> None:
    mac.argv = ["claude", "--dangerously-skip-permissions"]
    got = mac.predict()
    assert said(got) == ("hold", "permission-mode-parity")
    assert got["mode"] == "bypassPermissions"


def test_the_transcripts_latest_permission_mode_is_the_receivers(mac: Mac) -> None:
    transcript = mac.config / "projects" / "p" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    entries = [
        {"type": "user", "permissionMode": "auto", "message": {"content": "hi"}},
        {"type": "permission-mode", "permissionMode": "bypassPermissions"},
    ]
    transcript.write_text("".join(json.dumps(e) + "\n" for e in entries))
    mac.argv = ["claude", "--permission-mode", "auto"]
    got = mac.predict(transcript)
    assert said(got) == ("hold", "permission-mode-parity")
    assert got["mode"] == "bypassPermissions"


def turn(size: int) -> str:
    """About `size` bytes of one turn's tool calls and results: no line records a mode."""
    call = {"type": "assistant", "message": {"content": [{"type": "tool_use", "input": "r" * 9}]}}
    result = {
        "type": "user",
        "message": {"content": [{"type": "tool_result", "content": "x" * 900}]},
    }
    pair = json.dumps(call) + "\n" + json.dumps(result) + "\n"
    return pair * (size // len(pair) + 1)


def test_a_mode_recorded_before_a_long_turn_is_still_the_receivers(mac: Mac) -> None:
    """A chat records its mode with each prompt; a turn's tool output since may run to
    megabytes. Read only in the last 256 KB, the bypass set before a 2 MB turn was
    missed, and the chat's command line (auto) predicted an accept it would hold."""
    transcript = mac.config / "projects" / "p" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    bypass = {"type": "user", "permissionMode": "bypassPermissions", "message": {"content": "go"}}
    transcript.write_text(json.dumps(bypass) + "\n" + turn(2 << 20))
    mac.argv = ["claude", "--permission-mode", "auto"]
    got = mac.predict(transcript)
    assert said(got) == ("hold", "permission-mode-parity")
    assert got["mode"] == "bypassPermissions"


def test_a_transcript_longer_than_is_read_with_no_mode_in_it_predicts_unknown(mac: Mac) -> None:
    """Past MODE_TAIL_BYTES of a turn, the mode a prompt recorded before it is not read:
    neither the command line nor the settings says what it is now, so the prediction is
    unknown (seed 001); an explicit setting still decides."""
    transcript = mac.config / "projects" / "p" / "s.jsonl"
    transcript.parent.mkdir(parents=True)
    bypass = {"type": "user", "permissionMode": "bypassPermissions", "message": {"content": "go"}}
    transcript.write_text(json.dumps(bypass) + "\n" + turn(MODE_TAIL_BYTES + (1 << 20)))
    mac.argv = ["claude", "--permission-mode", "auto"]
    got = mac.predict(transcript)
    assert got["verdict"] == "unknown"
    assert got["mode"] is None
    assert "older" in got["why"]
    mac.write(mac.config / "settings.json", {"crossSessionInbound": "accept"})
    assert said(mac.predict(transcript)) == ("accept", "user")
