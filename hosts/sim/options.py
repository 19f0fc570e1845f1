"""The simulated chat's command line: parsing, validation and the settings sugar.

Claude Code's own flags (``--permission-mode``, ``--dangerously-skip-permissions``,
``--settings``, ``--messaging-socket-path``) are accepted as the real binary spells them,
so an outside reader can parse this process's command line exactly as a real chat's.
``--inbound``, ``--dialog-expiry`` and ``--mode`` are conveniences: ``sugar_argv`` turns
them into the real flags and the program re-execs itself with the result.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

PERMISSION_MODES = ("default", "acceptEdits", "plan", "auto", "dontAsk", "bypassPermissions")
INBOUND_VALUES = ("accept", "hold", "refuse")
DIALOG_EXPIRIES = ("60s", "5m", "10m", "never")
ANSWERS = ("accept", "decline", "silent")
TIME_SCALE_ENV = "COOP_SIM_TIME_SCALE"
# sockaddr_un.sun_path is 108 bytes on Linux, 104 on macOS; keep one for the NUL.
MAX_SOCKET_PATH = 103 if sys.platform == "darwin" else 107
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")


class UsageError(Exception):
    """A bad command line: reported as one line on stderr, exit status 2."""


@dataclass(frozen=True)
class ChatOptions:
    """A validated command line. Paths are absolute."""

    config_dir: Path
    session_id: str
    cwd: Path
    name: str | None
    permission_mode: str | None
    settings_flag: str | None
    settings_inline: dict[str, Any] | None
    settings_file: Path | None
    host_socket_path: Path | None
    socket_dir: Path
    managed_settings_dir: Path
    frame_log: Path | None
    busy: bool
    answer: str
    lose_frames: bool
    held_notice: bool
    busy_seconds: float
    tool_interval: float
    tool_gate: str | None
    think: float
    think_gate: str | None
    history: bool
    time_scale: float
    run: tuple[str, ...] = ()
    typed: bool = False  # lines on stdin are what the human types (`/clear`)

    @property
    def socket_path(self) -> Path:
        """Where the inbox binds: the host-named path, else ``<socket dir>/<pid>.sock``."""
        return self.host_socket_path or self.socket_dir / f"{os.getpid()}.sock"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def is_uuid(value: object) -> bool:
    """True for a string in the canonical 8-4-4-4-12 hexadecimal UUID form."""
    return isinstance(value, str) and bool(_UUID.match(value))


def default_socket_dir() -> Path:
    """Where the real chat binds its inbox: ``$XDG_RUNTIME_DIR/cc-socks``, else
    ``<tempdir>/cc-socks``; when a socket path there could exceed 103 bytes,
    ``/tmp/cc-socks-<uid>``."""
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = Path(runtime or tempfile.gettempdir()) / "cc-socks"
    if len(os.fsencode(str(folder / "4194304.sock"))) > 103:
        return Path(f"/tmp/cc-socks-{os.getuid()}")
    return folder


def default_managed_dir() -> Path:
    """Where Claude Code reads managed (administrator) settings on this platform."""
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode")
    return Path("/etc/claude-code")


def _parser() -> _Parser:
    p = _Parser(prog="python -m hosts.sim chat", allow_abbrev=False, add_help=False)
    p.add_argument("--config-dir", required=True)
    p.add_argument("--session-id")
    p.add_argument("--cwd")
    p.add_argument("--name")
    p.add_argument("--mode", choices=PERMISSION_MODES)
    p.add_argument("--permission-mode", choices=PERMISSION_MODES)
    p.add_argument("--dangerously-skip-permissions", action="store_true")
    p.add_argument("--settings")
    p.add_argument("--messaging-socket-path")
    p.add_argument("--inbound", choices=INBOUND_VALUES)
    p.add_argument("--dialog-expiry", choices=DIALOG_EXPIRIES)
    p.add_argument("--socket-dir")
    p.add_argument("--managed-settings-dir")
    p.add_argument("--frame-log")
    p.add_argument("--busy", action="store_true")
    p.add_argument("--answer", choices=ANSWERS, default="accept")
    p.add_argument("--lose-frames", action="store_true")
    p.add_argument("--no-held-notice", action="store_true")
    p.add_argument("--busy-seconds", type=float, default=4.0)
    p.add_argument("--tool-interval", type=float, default=0.3)
    p.add_argument(
        "--tool-gate",
        metavar="PATH",
        help="a tool-calling turn goes on past --busy-seconds until PATH exists",
    )
    p.add_argument("--think", type=float, default=0.2)
    p.add_argument(
        "--think-gate",
        metavar="PATH",
        help="a turn thinks on past --think, its final unwritten, until PATH exists",
    )
    p.add_argument("--history", action="store_true")
    p.add_argument("--typed", action="store_true")
    p.add_argument("--run", action="append", default=[])
    return p


def read_settings_flag(value: str) -> tuple[dict[str, Any] | None, Path | None]:
    """Interpret ``--settings``: an inline JSON object, or a path to a JSON file.

    Returns (inline object, None) or (None, absolute file path). A file is only checked
    for existence here: it is re-read at every judgement, as the real chat watches it.
    """
    if value.lstrip().startswith("{"):
        try:
            data = json.loads(value)
        except ValueError as exc:
            raise UsageError(f"--settings: invalid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise UsageError("--settings: JSON must be an object")
        return data, None
    path = Path(value).expanduser().absolute()
    if not path.is_file():
        raise UsageError(f"--settings: no such file: {value}")
    return None, path


def _mode(ns: argparse.Namespace) -> str | None:
    modes = {m for m in (ns.mode, ns.permission_mode) if m}
    if ns.dangerously_skip_permissions:
        modes.add("bypassPermissions")
    if len(modes) > 1:
        raise UsageError("conflicting permission modes: " + ", ".join(sorted(modes)))
    return modes.pop() if modes else None


def _non_negative(name: str, value: float) -> float:
    if not value >= 0:  # also rejects NaN
        raise UsageError(f"--{name} must be a non-negative number")
    return value


def _time_scale() -> float:
    raw = os.environ.get(TIME_SCALE_ENV)
    if raw is None or raw == "":
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        raise UsageError(f"{TIME_SCALE_ENV} must be a positive number") from None
    if not scale > 0 or scale == float("inf"):
        raise UsageError(f"{TIME_SCALE_ENV} must be a positive number")
    return scale


def parse(argv: list[str]) -> tuple[ChatOptions, argparse.Namespace]:
    """Validate the ``chat`` arguments. Raises UsageError; has no side effects."""
    ns = _parser().parse_args(argv)
    session_id = ns.session_id or str(uuid.uuid4())
    if not is_uuid(session_id):
        raise UsageError(f"--session-id must be a UUID: {session_id}")
    cwd = Path(ns.cwd or os.getcwd()).expanduser().absolute()
    if not cwd.is_dir():
        raise UsageError(f"--cwd is not a directory: {cwd}")
    inline, settings_file = read_settings_flag(ns.settings) if ns.settings else (None, None)
    host_socket = Path(ns.messaging_socket_path).absolute() if ns.messaging_socket_path else None
    socket_dir = Path(ns.socket_dir).absolute() if ns.socket_dir else default_socket_dir()
    opts = ChatOptions(
        config_dir=Path(ns.config_dir).expanduser().absolute(),
        session_id=session_id,
        cwd=cwd,
        name=ns.name,
        permission_mode=_mode(ns),
        settings_flag=ns.settings,
        settings_inline=inline,
        settings_file=settings_file,
        host_socket_path=host_socket,
        socket_dir=socket_dir,
        managed_settings_dir=Path(ns.managed_settings_dir).absolute()
        if ns.managed_settings_dir
        else default_managed_dir(),
        frame_log=Path(ns.frame_log).absolute() if ns.frame_log else None,
        busy=ns.busy,
        answer=ns.answer,
        lose_frames=ns.lose_frames,
        held_notice=not ns.no_held_notice,
        busy_seconds=_non_negative("busy-seconds", ns.busy_seconds),
        tool_interval=_non_negative("tool-interval", ns.tool_interval),
        tool_gate=ns.tool_gate,
        think=_non_negative("think", ns.think),
        think_gate=ns.think_gate,
        history=ns.history,
        typed=ns.typed,
        time_scale=_time_scale(),
        run=tuple(ns.run),
    )
    # The pid is not known until after a possible re-exec, but it keeps its length:
    # check with the longest pid the kernel can hand out.
    longest = opts.host_socket_path or opts.socket_dir / "4194304.sock"
    if len(os.fsencode(str(longest))) > MAX_SOCKET_PATH:
        raise UsageError(f"socket path too long for AF_UNIX: {longest}")
    return opts, ns


def _strip_flag(argv: list[str], flag: str) -> tuple[list[str], str | None]:
    """Remove every ``flag VALUE`` / ``flag=VALUE`` from argv; return the last value."""
    out: list[str] = []
    value: str | None = None
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == flag and i + 1 < len(argv):
            value = argv[i + 1]
            i += 2
            continue
        if token.startswith(flag + "="):
            value = token[len(flag) + 1 :]
        else:
            out.append(token)
        i += 1
    return out, value


def sugar_argv(argv: list[str], ns: argparse.Namespace) -> list[str] | None:
    """The argv to re-exec with, or None when no sugar flag was given.

    ``--inbound X`` / ``--dialog-expiry Y`` become one ``--settings`` JSON object (merged
    over any ``--settings`` given, a file's content included); ``--mode M`` becomes
    ``--permission-mode M``.
    """
    if not (ns.inbound or ns.dialog_expiry or ns.mode):
        return None
    out, _ = _strip_flag(argv, "--inbound")
    out, _ = _strip_flag(out, "--dialog-expiry")
    out, mode = _strip_flag(out, "--mode")
    if ns.inbound or ns.dialog_expiry:
        out, given = _strip_flag(out, "--settings")
        merged: dict[str, Any] = {}
        if given is not None:
            inline, path = read_settings_flag(given)
            merged = inline if inline is not None else _read_json_object(path)
        if ns.inbound:
            merged["crossSessionInbound"] = ns.inbound
        if ns.dialog_expiry:
            merged["dialogExpiry"] = ns.dialog_expiry
        out += ["--settings", json.dumps(merged, separators=(",", ":"))]
    if mode is not None and "--permission-mode" not in out:
        out += ["--permission-mode", mode]
    return out


def _read_json_object(path: Path | None) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8")) if path else {}
    except (OSError, ValueError) as exc:
        raise UsageError(f"--settings: cannot read {path}: {exc}") from None
    if not isinstance(data, dict):
        raise UsageError(f"--settings: {path} does not hold a JSON object")
    return data
