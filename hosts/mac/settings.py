"""What a chat's inbound policy is predicted from, read where the chat lives.

The host reads files and the command line; the engine's `policy.inbound_policy` turns
these inputs into a verdict. A file that is absent is not an error; a file that exists
but cannot be read or parsed is reported as an error, which predicts `unknown`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hosts.mac import transcripts
from hosts.mac.files import read_file

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    # {"path", "value"} or {"path", "error"}; None: absent
    Source = dict[str, Any] | None

# How far back a transcript's recorded mode is looked for (a chat records its mode with
# each prompt, and a turn's tool output since the last prompt may run to megabytes; past
# this, a mode not found is not known), and the bytes every line that records one holds.
MODE_TAIL_BYTES = 16 << 20
MODE_NEEDLE = b'"permissionMode"'
BYPASS = "bypassPermissions"


def read_json_file(path: str | os.PathLike[str]) -> Source:
    path = os.fspath(path)
    try:
        raw = read_file(path)
    except FileNotFoundError:
        return None
    except OSError as error:
        return {"path": path, "error": f"unreadable: {error.strerror}"}
    except ValueError:  # a NUL byte, from a registry entry's cwd
        return {"path": path, "error": "unreadable: not a path"}
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        return {"path": path, "error": "not valid JSON"}
    if not isinstance(value, dict):
        return {"path": path, "error": "not a JSON object"}
    return {"path": path, "value": value}


def managed_settings(folder: Path) -> Source:
    """managed-settings.json, then managed-settings.d/*.json in name order (later wins)."""
    parts = [folder / "managed-settings.json"]
    drop_ins = folder / "managed-settings.d"
    try:
        # Path.glob("*.json") would say the same: it compiles a pattern at every start.
        parts += [
            drop_ins / name for name in sorted(os.listdir(drop_ins)) if name.endswith(".json")
        ]
    except OSError:
        pass
    merged: dict[str, Any] = {}
    found = False
    for part in parts:
        source = read_json_file(part)
        if source is None:
            continue
        if "error" in source:
            return source
        found = True
        merged.update(source["value"])
    return {"path": str(folder), "value": merged} if found else None


def flag_value(argv: list[str], flag: str) -> str | None:
    """The value of `--flag V` or `--flag=V` (the last one wins, as in a CLI parser)."""
    value = None
    for index, arg in enumerate(argv):
        if arg == flag and index + 1 < len(argv):
            value = argv[index + 1]
        elif arg.startswith(flag + "="):
            value = arg[len(flag) + 1 :]
    return value


def settings_flag(argv: list[str] | None, cwd: str | None) -> Source:
    """The `--settings` flag: inline JSON, or a path (relative to the chat's cwd). A
    command line that cannot be read (vanished, not ours) may carry one: unknown."""
    if argv is None:
        return {"path": "--settings", "error": "the chat's command line could not be read"}
    value = flag_value(argv, "--settings")
    if value is None:
        return None
    if value.lstrip().startswith("{"):
        try:
            parsed = json.loads(value)
        except (ValueError, RecursionError):
            return {"path": "--settings", "error": "inline --settings is not valid JSON"}
        if not isinstance(parsed, dict):
            return {"path": "--settings", "error": "inline --settings is not a JSON object"}
        return {"path": "--settings", "value": parsed}
    path = Path(value).expanduser()
    if not path.is_absolute() and cwd:
        path = Path(cwd) / path
    source = read_json_file(path)
    return source if source is not None else {"path": str(path), "error": "file not found"}


def cmdline_mode(argv: list[str] | None) -> str | None:
    if not argv:
        return None
    if "--dangerously-skip-permissions" in argv:
        return BYPASS
    return flag_value(argv, "--permission-mode")


def recorded_mode(
    transcript: str | None, buffer: bytearray | None = None
) -> tuple[str | None, bool] | None:
    """The newest mode the transcript recorded in its last MODE_TAIL_BYTES, and whether
    that is the whole transcript's answer (False: none was recorded there, and an older
    line may have recorded one); None when no transcript is at that path. `buffer`: a
    mode_buffer() to read into, one for all the chats of a listing."""
    return transcripts.newest_line(transcript, MODE_NEEDLE, MODE_TAIL_BYTES, _mode_of, buffer)


def mode_buffer() -> bytearray:
    """What recorded_mode reads into: it grows to the longest read a listing makes."""
    return bytearray()


def _mode_of(line: bytes) -> str | None:
    """The mode a transcript line records: `permissionMode` on a user entry, or a
    `permission-mode` entry (never a sidechain's)."""
    try:
        entry = json.loads(line.decode())  # as read_entry does: UTF-8, not guessed
    except (ValueError, RecursionError):
        return None
    if not isinstance(entry, dict) or entry.get("isSidechain"):
        return None
    mode = entry.get("permissionMode")
    if entry.get("type") in ("user", "permission-mode") and isinstance(mode, str):
        return mode
    return None


class SettingsReader:
    """Reads policy inputs for many chats, reading each shared file once."""

    def __init__(
        self, config_dir: Path, managed_dir: Path, cmdline: Callable[[int], list[str] | None]
    ) -> None:
        self.config_dir = config_dir
        self.managed_dir = managed_dir
        self.cmdline = cmdline
        self._user_path = os.path.join(config_dir, "settings.json")
        self._cache: dict[str, Source] = {}
        self._projects: dict[str, tuple[Source, Source]] = {}
        self._managed: Source = None
        self._managed_read = False

    def _file(self, path: str) -> Source:
        if path not in self._cache:
            self._cache[path] = read_json_file(path)
        return self._cache[path]

    def _project(self, cwd: str) -> tuple[Source, Source]:
        """The repository's settings.json and settings.local.json, read once per cwd."""
        if cwd not in self._projects:
            folder = os.path.join(cwd, ".claude")
            self._projects[cwd] = (
                read_json_file(os.path.join(folder, "settings.json")),
                read_json_file(os.path.join(folder, "settings.local.json")),
            )
        return self._projects[cwd]

    def inputs(
        self, entry: dict[str, Any], mode: str | None, complete: bool = True
    ) -> dict[str, Any]:
        """The policy inputs of the chat of registry entry `entry`, whose transcript
        recorded `mode` last (recorded_mode); `complete`: whether that is the whole
        transcript's answer."""
        pid = entry.get("pid")
        argv = self.cmdline(pid) if isinstance(pid, int) else None
        cwd = entry.get("cwd") if isinstance(entry.get("cwd"), str) else None
        if not self._managed_read:
            self._managed = managed_settings(self.managed_dir)
            self._managed_read = True
        project, local = self._project(cwd) if cwd else (None, None)
        return {
            "managed": self._managed,
            "flag": settings_flag(argv, cwd),
            "user": self._file(self._user_path),
            "project": project,
            "local": local,
            "recorded_mode": mode,
            "recorded_mode_complete": complete,
            "cmdline_mode": cmdline_mode(argv),
            "cmdline_readable": argv is not None,
        }


def default_config_dir() -> Path:
    raw = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(raw).expanduser() if raw else Path.home() / ".claude"
