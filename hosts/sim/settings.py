"""Settings as the receiving chat reads them, and its judgement of an inbound frame.

Layers, highest precedence first: managed settings, the ``--settings`` flag, local
project ``<cwd>/.claude/settings.local.json``, project ``<cwd>/.claude/settings.json``,
user ``<config>/settings.json``. The files are read afresh at every judgement, since the
real chat picks up edited settings without a restart.

``crossSessionInbound``: the first explicit value from managed, flag or user settings
decides; the project files can only tighten that verdict (a repository must not be able
to open a chat's door). ``dialogExpiry`` is never taken from project files. Without an
explicit value the verdict is permission-mode parity. An unrecognised value is ignored
in user settings and holds everywhere else (measured: see tests/real_claude/OBSERVED.md).

Only a parity hold opens the approval dialog (registry ``waiting``) and expires with
``dialogExpiry``; a hold a settings file asks for shows no dialog and never expires.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hosts.sim.options import DIALOG_EXPIRIES, PERMISSION_MODES, ChatOptions

TRUSTED = ("managed", "flag", "user")
PROJECT = ("local", "project")
_STRICTNESS = {"accept": 0, "hold": 1, "refuse": 2}
_EXPIRY_SECONDS: dict[str, float | None] = {"60s": 60.0, "5m": 300.0, "10m": 600.0, "never": None}
DEFAULT_EXPIRY = "5m"
DEFAULT_MODE = "auto"
PARITY_CAUSE = "no-mode-asserted"
INVALID = "invalid"
_CAUSES = {"managed": "managed-setting", "project": "repo-setting", "local": "repo-setting"}


@dataclass(frozen=True)
class Layer:
    """One settings source: its name (managed, flag, local, project, user) and content."""

    source: str
    data: dict[str, Any]


@dataclass(frozen=True)
class Verdict:
    """What the receiver does with a frame, and why.

    ``cause`` names why a hold holds (the held notice's last sentence): no-mode-asserted
    (parity), explicit-setting, managed-setting, repo-setting or invalid-setting.
    ``expires_after`` (seconds, already time-scaled) is set only for a parity hold that
    the approval dialog's expiry ends; None for a hold parked until the user decides.
    """

    action: str
    source: str
    expires_after: float | None = None
    cause: str | None = None

    @property
    def dialog(self) -> bool:
        """Whether this hold opens the approval dialog (registry ``waiting``)."""
        return self.cause == PARITY_CAUSE


def _note(message: str) -> None:
    print(f"hosts.sim: settings: {message}", file=sys.stderr, flush=True)


def _read_object(path: Path) -> dict[str, Any] | None:
    """A settings file's JSON object; None when missing or unusable (noted on stderr)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        _note(f"cannot read {path}: {exc}")
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        _note(f"ignoring {path}: invalid JSON: {exc}")
        return None
    if not isinstance(data, dict):
        _note(f"ignoring {path}: not a JSON object")
        return None
    return data


def _managed(folder: Path) -> dict[str, Any] | None:
    """``managed-settings.json`` overlaid by ``managed-settings.d/*.json`` in name order."""
    merged: dict[str, Any] = {}
    found = False
    files = [folder / "managed-settings.json"]
    drop_ins = folder / "managed-settings.d"
    if drop_ins.is_dir():
        files += sorted(drop_ins.glob("*.json"))
    for path in files:
        data = _read_object(path)
        if data is not None:
            merged.update(data)
            found = True
    return merged if found else None


def load_layers(opts: ChatOptions) -> list[Layer]:
    """Every settings source that exists, highest precedence first."""
    sources: list[tuple[str, dict[str, Any] | None]] = [
        ("managed", _managed(opts.managed_settings_dir)),
        (
            "flag",
            opts.settings_inline
            if opts.settings_inline is not None
            else _read_object(opts.settings_file)
            if opts.settings_file
            else None,
        ),
        ("local", _read_object(opts.cwd / ".claude" / "settings.local.json")),
        ("project", _read_object(opts.cwd / ".claude" / "settings.json")),
        ("user", _read_object(opts.config_dir / "settings.json")),
    ]
    return [Layer(name, data) for name, data in sources if data is not None]


def _inbound(layer: Layer) -> str | None:
    """The layer's explicit crossSessionInbound, INVALID for an unrecognised value (which
    user settings ignore), or None."""
    value = layer.data.get("crossSessionInbound")
    if value is None:
        return None
    if value in _STRICTNESS:
        return str(value)
    return None if layer.source == "user" else INVALID


def _explicit(value: str, source: str) -> Verdict:
    if value == INVALID:
        return Verdict("hold", source, cause="invalid-setting")
    cause = _CAUSES.get(source, "explicit-setting") if value == "hold" else None
    return Verdict(value, source, cause=cause)


def dialog_expiry(layers: list[Layer]) -> str:
    """The effective dialogExpiry name (project files cannot set it; default 5m)."""
    for layer in layers:
        if layer.source in TRUSTED and "dialogExpiry" in layer.data:
            value = layer.data["dialogExpiry"]
            return value if value in DIALOG_EXPIRIES else DEFAULT_EXPIRY
    return DEFAULT_EXPIRY


def permission_mode(flag_mode: str | None, layers: list[Layer]) -> str:
    """The chat's mode: the command line, else ``permissions.defaultMode``, else auto."""
    if flag_mode:
        return flag_mode
    for layer in layers:
        permissions = layer.data.get("permissions")
        if isinstance(permissions, dict) and permissions.get("defaultMode") in PERMISSION_MODES:
            return str(permissions["defaultMode"])
    return DEFAULT_MODE


def judge(layers: list[Layer], mode: str, *, time_scale: float) -> Verdict:
    """The receiver's verdict on a frame whose sender asserts no permission mode."""
    verdict: Verdict | None = None
    for layer in layers:
        value = _inbound(layer) if layer.source in TRUSTED else None
        if value is not None:
            verdict = _explicit(value, layer.source)
            break
    if verdict is None:
        verdict = _parity(layers, mode, time_scale=time_scale)
    for layer in layers:
        value = _inbound(layer) if layer.source in PROJECT else None
        if value is None:
            continue
        tighter = _explicit(value, layer.source)
        stricter = _STRICTNESS[tighter.action] - _STRICTNESS[verdict.action]
        # A repository's hold also replaces an equal parity hold: it has no dialog.
        if stricter > 0 or (stricter == 0 and verdict.dialog):
            verdict = tighter
    return verdict


def _parity(layers: list[Layer], mode: str, *, time_scale: float) -> Verdict:
    # Frames asserting a mode are not simulated: Coop never asserts one (seed 001).
    if mode != "bypassPermissions":
        return Verdict("accept", "permission-mode-parity")
    seconds = _EXPIRY_SECONDS[dialog_expiry(layers)]
    return Verdict(
        "hold",
        "permission-mode-parity",
        None if seconds is None else seconds * time_scale,
        PARITY_CAUSE,
    )
