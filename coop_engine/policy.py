"""Predicting the receiver's inbound verdict (DESIGN.md 5.6) and deciding, from that
prediction and fresh evidence, whether a sent frame can no longer arrive (5.7).

Both are pure: the host gathers the inputs where the chat lives; time is passed in.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

VERDICTS = ("accept", "hold", "refuse")
STRICTNESS = {"accept": 0, "hold": 1, "refuse": 2}
EXPIRY_SECONDS: dict[str, float | None] = {"60s": 60, "5m": 300, "10m": 600, "never": None}
DEFAULT_DIALOG_EXPIRY = "5m"
# The expiry of settings Coop cannot read, or holding a value it does not know: a hold
# under it never expires for silence (seed 001: unknown never expires a delivery).
UNKNOWN_EXPIRY = "unknown"
GRACE_SECONDS = 60
PARITY = "permission-mode-parity"
REFUSED_BY_POLICY = "refused-by-receiver-policy"
BYPASS = "bypassPermissions"
KNOWN_MODES = ("default", "auto", "acceptEdits", "plan", "dontAsk", BYPASS)

# Explicit values are looked for in this order; the first one wins.
EXPLICIT_SOURCES = (("managed", "managed"), ("flag", "settings-flag"), ("user", "user"))
# Repository settings can only tighten.
TIGHTENING_SOURCES = (("project", "project"), ("local", "project-local"))


def _unknown(why: str, dialog_expiry: str = UNKNOWN_EXPIRY) -> dict[str, Any]:
    return {
        "verdict": "unknown",
        "source": "unknown",
        "why": why,
        "dialog_expiry": dialog_expiry,
        "mode": None,
    }


def _explicit(source: dict[str, Any], name: str) -> str | None:
    value = source["value"].get("crossSessionInbound")
    if value is None:
        return None
    if value in VERDICTS:
        return str(value)
    # An invalid value holds (the receiver warns and holds every frame), except in user
    # settings, where Claude Code 2.1.328 ignores it (tests/real_claude/OBSERVED.md 1.6).
    return None if name == "user" else "hold"


def _dialog_expiry(inputs: dict[str, Any]) -> str:
    """The receiver's approval-dialog expiry: the first value its settings give, the
    default when none does, UNKNOWN_EXPIRY when the first is one Coop does not know."""
    # Repository settings may only make it "never" (tests/real_claude/OBSERVED.md 7).
    for name, _ in TIGHTENING_SOURCES:
        source = inputs.get(name)
        if source and "value" in source and source["value"].get("dialogExpiry") == "never":
            return "never"
    for name, _ in EXPLICIT_SOURCES:  # otherwise project settings do not set it
        source = inputs.get(name)
        if source and "value" in source:
            value = source["value"].get("dialogExpiry")
            if value is None:
                continue
            return str(value) if value in EXPIRY_SECONDS else UNKNOWN_EXPIRY
    return DEFAULT_DIALOG_EXPIRY


def _unsearched(inputs: dict[str, Any]) -> bool:
    """Whether the transcript recorded no mode in the part the host searched, and may
    have recorded one before it (a long turn's tool output since the last prompt):
    then neither its command line nor its settings says its mode now."""
    return not inputs.get("recorded_mode") and inputs.get("recorded_mode_complete") is False


def _mode(inputs: dict[str, Any]) -> str | None:
    """The receiver's recorded mode: its transcript, else its command line, else
    permissions.defaultMode from its settings; None when it cannot be known."""
    if _unsearched(inputs):
        return None
    for candidate in (inputs.get("recorded_mode"), inputs.get("cmdline_mode")):
        if candidate:
            return str(candidate)
    for name, _ in EXPLICIT_SOURCES:
        source = inputs.get(name)
        if source and "value" in source:
            permissions = source["value"].get("permissions")
            if isinstance(permissions, dict) and permissions.get("defaultMode"):
                return str(permissions["defaultMode"])
    # A readable command line with no mode flag runs in the default mode.
    return "default" if inputs.get("cmdline_readable") else None


def inbound_policy(inputs: dict[str, Any]) -> dict[str, Any]:
    """accept, hold, refuse or unknown, with the source that decided and dialogExpiry."""
    for name, _ in EXPLICIT_SOURCES + TIGHTENING_SOURCES:
        source = inputs.get(name)
        if source and "error" in source:
            return _unknown(f"{source.get('path', name)}: {source['error']}")
    expiry = _dialog_expiry(inputs)
    verdict: str | None = None
    label = PARITY
    for name, source_label in EXPLICIT_SOURCES:
        source = inputs.get(name)
        if source and (value := _explicit(source, name)):
            verdict, label = value, source_label
            break
    mode = _mode(inputs)
    if verdict is None:
        if _unsearched(inputs):
            why = "no permission mode in the part of the transcript read; an older one may hold"
            return _unknown(why, expiry)
        if mode is None:
            return _unknown("no explicit setting and no recorded permission mode", expiry)
        if mode not in KNOWN_MODES:
            return _unknown(f"unrecognised permission mode {mode!r}", expiry)
        # Coop asserts no permission mode, so a bypassing receiver holds its frames.
        verdict = "hold" if mode == BYPASS else "accept"
    for name, source_label in TIGHTENING_SOURCES:
        source = inputs.get(name)
        value = _explicit(source, name) if source else None
        if value is None:
            continue
        stricter = STRICTNESS[value] > STRICTNESS[verdict]
        # An explicit hold never expires: prefer it over an equal parity hold.
        if stricter or (label == PARITY and STRICTNESS[value] == STRICTNESS[verdict]):
            verdict, label = value, source_label
    return {"verdict": verdict, "source": label, "dialog_expiry": expiry, "mode": mode}


def _expiry_seconds(policy: dict[str, Any]) -> float | None:
    """The dialog expiry in seconds; None when it never comes or cannot be known."""
    return EXPIRY_SECONDS.get(str(policy.get("dialog_expiry") or DEFAULT_DIALOG_EXPIRY))


def expiry_unknown(policy: dict[str, Any] | None) -> bool:
    """Whether the prediction could not know the receiver's dialog expiry."""
    expiry = (policy or {}).get("dialog_expiry")
    return expiry is not None and expiry not in EXPIRY_SECONDS


def _held_verdict(
    policy: dict[str, Any], held: dict[str, Any], sent_at: float, now: float
) -> str | None:
    """A held notice seen for the envelope outranks the prediction: its cause decides. A
    parity hold is dropped at the dialog expiry (from the settings Coop can read) plus
    the grace; any other hold never expires while watched (a settings change may
    release it), and the other two reasons never apply: an explicit hold keeps the
    receiver idle, and a refusing receiver writes no notice."""
    if held.get("cause") != "parity":
        return None
    expiry = _expiry_seconds(policy)
    if expiry is not None and now >= sent_at + expiry + GRACE_SECONDS:
        return "held-for-approval-then-expired"
    return None


def verdict_due(
    prediction: dict[str, Any] | None, sent_at: float, now: float, held: dict[str, Any] | None
) -> float | None:
    """When delivery_verdict may next decide something for an uncertain envelope whose
    receiver's records have not changed: the grace's end, or a parity hold's dialog
    expiry plus the grace. None when only a change in those records can decide (which
    wakes a pass by itself), or the time has passed (the next pass decides)."""
    policy = prediction or {"verdict": "unknown"}
    parity_hold = (
        held.get("cause") == "parity"
        if held
        else policy.get("verdict") == "hold" and policy.get("source") == PARITY
    )
    expiry = _expiry_seconds(policy)
    if parity_hold and expiry is not None:
        due = sent_at + expiry + GRACE_SECONDS
    elif not held and policy.get("verdict") == "accept":
        due = sent_at + GRACE_SECONDS
    else:
        return None
    return due if due > now else None


def delivery_verdict(
    prediction: dict[str, Any] | None,
    sent_at: float,
    now: float,
    registry_status: Callable[[], str | None],
    mentions: Callable[[], bool],
    held: dict[str, Any] | None = None,
) -> str | None:
    """One of the three reasons a sent frame can no longer arrive, or None to keep
    watching. `held` is the receiver's held notice for this envelope, when one was
    seen: it outranks the prediction. `registry_status` and `mentions` are read only when
    the answer needs them (the transcript after the status: a frame consumed meanwhile is
    in the file first)."""
    policy = prediction or {"verdict": "unknown"}
    if held:
        return _held_verdict(policy, held, sent_at, now)
    verdict = policy.get("verdict")
    if verdict == "refuse":
        return REFUSED_BY_POLICY
    if verdict == "hold":
        expiry = _expiry_seconds(policy)
        if policy.get("source") != PARITY or expiry is None:
            return None  # an explicit hold stays watched: an accept may release it
        if now >= sent_at + expiry + GRACE_SECONDS:
            return "held-for-approval-then-expired"
        return None
    if verdict == "accept" and now >= sent_at + GRACE_SECONDS:
        if registry_status() == "idle" and not mentions():
            return "receiver-idle-without-entry"
    return None
