"""Fixed values the lines of a real Codex CLI 0.171.0 rollout carry, as the simulator
writes them (its model, its read-only sandbox, the model server's token counts)."""

from __future__ import annotations

from typing import Any

MODEL = "codex-sim"
CONTEXT_WINDOW = 258400
APPROVAL_POLICY = "on-request"
READ_ONLY_PROFILE = {
    "type": "managed",
    "file_system": {
        "type": "restricted",
        "entries": [{"path": {"type": "special", "value": {"kind": "root"}}, "access": "read"}],
    },
    "network": "restricted",
}
# One model call's tokens (what tests/codex/model_server.py reports).
USAGE = {
    "input_tokens": 10,
    "cached_input_tokens": 0,
    "cache_write_input_tokens": 0,
    "output_tokens": 2,
    "reasoning_output_tokens": 0,
    "total_tokens": 12,
}
RATE_LIMITS = {
    "limit_id": "codex",
    "limit_name": None,
    "primary": None,
    "secondary": None,
    "credits": None,
    "individual_limit": None,
    "spend_control_reached": None,
    "plan_type": None,
    "rate_limit_reached_type": None,
}
TURN_ABORTED = (
    "<turn_aborted>\nThe user interrupted the previous turn on purpose. Any running unified"
    " exec processes may still be running in the background. If any tools/commands were"
    " aborted, they may have partially executed.\n</turn_aborted>"
)
# The first turn's developer and environment messages come before any user input.
# What every turn_context records after its ids and cwd, in the real key order.
TURN_SETTINGS: dict[str, Any] = {
    "approval_policy": APPROVAL_POLICY,
    "approvals_reviewer": "user",
    "permission_profile": READ_ONLY_PROFILE,
    "active_permission_profile": {"id": ":read-only"},
    "model": MODEL,
    "collaboration_mode": {
        "mode": "default",
        "settings": {"model": MODEL, "reasoning_effort": None, "developer_instructions": None},
    },
    "multi_agent_version": "v1",
    "realtime_active": False,
    "summary": "none",
    "sandbox_policy": {"type": "read-only"},
}
