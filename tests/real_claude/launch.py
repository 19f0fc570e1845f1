"""Prepare a chat's files and the program its tmux pane runs (see harness.py).

The config dir marks onboarding done, approves the dummy key (Claude Code stores its
last 20 characters) and trusts the project folder; the pane runs, inside ``unshare -n``,
the scripted model server and then ``exec``s the chat, so the pane's pid is the chat's.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .fetch import Unavailable

API_KEY = "sk-ant-api03-coop-offline-test-key-000000000000000000000000000000000000000000"
MODEL_SERVER = Path(__file__).with_name("model_server.py")


@dataclass
class ChatConfig:
    """How to start one chat. Settings dicts are written as JSON files; ``script`` is the
    model server's initial script (``{"invitation": "accept" | "decline" | "silent"}``)."""

    bypass: bool = False  # --dangerously-skip-permissions (IS_SANDBOX=1 and the skip key)
    permission_mode: str | None = None  # --permission-mode
    allowed_tools: Sequence[str] = ("Bash",)  # --allowedTools: these run without prompts
    user_settings: dict[str, Any] = field(default_factory=dict)  # $CLAUDE_CONFIG_DIR/settings.json
    project_settings: dict[str, Any] | None = None  # <project>/.claude/settings.json
    project_local_settings: dict[str, Any] | None = None  # .claude/settings.local.json
    settings_flag: dict[str, Any] | None = None  # --settings <file>
    messaging_socket_path: str | None = None  # --messaging-socket-path
    script: dict[str, Any] = field(default_factory=dict)  # the model server's script
    extra_args: Sequence[str] = ()
    env: dict[str, str] = field(default_factory=dict)


def tool_path(name: str) -> str | None:
    """A program on PATH or in the sbin folders (root's tools may live there)."""
    return shutil.which(name, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def check_prerequisites() -> None:
    """Raise Unavailable unless this machine can run the chat the harness's way."""
    if os.geteuid() != 0:
        raise Unavailable("the harness needs root (unshare -n for a loopback-only namespace)")
    for tool in ("tmux", "unshare", "ip"):
        if tool_path(tool) is None:
            raise Unavailable(f"{tool} is not installed")
    probe = subprocess.run(
        ["unshare", "-n", str(tool_path("ip")), "link", "set", "lo", "up"],
        capture_output=True,
        text=True,
    )
    if probe.returncode != 0:
        raise Unavailable(f"unshare -n does not work here: {probe.stderr.strip()[:200]}")


def prepare_config_dir(
    config_dir: Path, project_dirs: Sequence[Path], user_settings: dict[str, Any]
) -> None:
    """A ``CLAUDE_CONFIG_DIR`` that trusts ``project_dirs`` (written before any chat of
    it starts: the chats rewrite ``.claude.json`` themselves) and holds user settings.
    The bypass prompt is skipped for every chat of it (bypass chats are root here)."""
    config_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "lastOnboardingVersion": "2.1.328",
        "theme": "dark",
        "autoUpdates": False,
        "customApiKeyResponses": {"approved": [API_KEY[-20:]], "rejected": []},
        "projects": {
            str(path): {"hasTrustDialogAccepted": True, "allowedTools": []} for path in project_dirs
        },
    }
    (config_dir / ".claude.json").write_text(json.dumps(state))
    write_user_settings(config_dir, user_settings)


def write_user_settings(config_dir: Path, settings: dict[str, Any]) -> None:
    """Rewrite ``settings.json`` at once (the chats watch it)."""
    settings = {"skipDangerousModePermissionPrompt": True, **settings}
    tmp = config_dir / "settings.json.tmp"
    tmp.write_text(json.dumps(settings))
    tmp.replace(config_dir / "settings.json")


def prepare_config(
    root: Path, config: ChatConfig, config_dir: Path | None = None, project_dir: Path | None = None
) -> tuple[Path, Path]:
    """Write the chat's files; returns (config_dir, project_dir). Without ``config_dir``
    the chat gets a config dir of its own holding ``config.user_settings``; with one,
    the config dir was prepared for several chats (``prepare_config_dir``) and
    ``project_dir`` must be one it trusts."""
    (root / "home").mkdir(parents=True, exist_ok=True)
    if config_dir is None:
        config_dir = root / "config"
        project_dir = (root / "project").resolve()
        project_dir.mkdir(parents=True, exist_ok=True)
        prepare_config_dir(config_dir, [project_dir], config.user_settings)
    elif project_dir is None or config.user_settings:
        raise ValueError("a shared config dir needs a project dir and keeps its own settings")
    for name, value in (
        ("settings.json", config.project_settings),
        ("settings.local.json", config.project_local_settings),
    ):
        if value is not None:
            (project_dir / ".claude").mkdir(exist_ok=True)
            (project_dir / ".claude" / name).write_text(json.dumps(value))
    (root / "script.json").write_text(json.dumps(config.script))
    return config_dir, project_dir


def chat_args(binary: Path, root: Path, config: ChatConfig) -> list[str]:
    args = [str(binary)]
    if config.bypass:
        args.append("--dangerously-skip-permissions")
    if config.permission_mode:
        args += ["--permission-mode", config.permission_mode]
    if config.allowed_tools:
        args += ["--allowedTools", ",".join(config.allowed_tools)]
    if config.settings_flag is not None:
        flag_file = root / "flag-settings.json"
        flag_file.write_text(json.dumps(config.settings_flag))
        args += ["--settings", str(flag_file)]
    if config.messaging_socket_path:
        args += ["--messaging-socket-path", config.messaging_socket_path]
    return args + list(config.extra_args)


def launch_script(
    root: Path, config_dir: Path, project_dir: Path, args: list[str], config: ChatConfig
) -> str:
    """The shell program the tmux pane runs inside ``unshare -n``."""
    env = {
        "ANTHROPIC_API_KEY": API_KEY,
        "CLAUDE_CONFIG_DIR": str(config_dir),
        "DISABLE_AUTOUPDATER": "1",
        **({"IS_SANDBOX": "1"} if config.bypass else {}),
        **config.env,
    }
    q = shlex.quote
    server = [
        sys.executable,
        str(MODEL_SERVER),
        "--port-file",
        str(root / "model.port"),
        "--log",
        str(root / "model.log"),
        "--script",
        str(root / "script.json"),
    ]
    lines = [
        "set -e",
        f"{q(tool_path('ip') or '/usr/sbin/ip')} link set lo up",
        f"{shlex.join(server)} 2>{q(str(root / 'model.err'))} &",
        f"echo $! > {q(str(root / 'model.pid'))}",
        # At most 60 s for the server's port (a loaded machine starts Python slowly);
        # then give up (the pane shows why).
        "n=0",
        f"while [ ! -s {q(str(root / 'model.port'))} ]; do",
        '  n=$((n + 1)); [ "$n" -lt 1200 ] || { echo "model server did not start" >&2; exit 1; }',
        "  sleep 0.05",
        "done",
        f"export ANTHROPIC_BASE_URL=http://127.0.0.1:$(cat {q(str(root / 'model.port'))})",
        *(f"export {k}={q(v)}" for k, v in env.items()),
        f"cd {q(str(project_dir))}",
        f"exec {shlex.join(args)}",
    ]
    return "\n".join(lines) + "\n"
