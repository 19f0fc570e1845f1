"""Send again looks again (issue 12): before a second attempt, the receiver's verdict is
predicted anew, as at send, by whoever reaches the receiver (the running coordinator,
when one serves the home: loop/desk.py). A receiver that still refuses would drop the
second frame as it dropped the first, so Send again is refused until its settings
change; after a refusal by policy, so is a receiver whose settings cannot be read now
(only settings read and no longer refusing show the first cause gone). One that will
hold it again by parity is a warning. The CLI and the app both ask here first."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coop_engine.formats import one_line
from coop_engine.policy import PARITY, REFUSED_BY_POLICY, inbound_policy
from hosts.mac.errors import HostsError
from hosts.mac.host import Host

STILL_REFUSES = (
    "the receiver still refuses peer messages: its crossSessionInbound must change first"
)
UNREAD_AFTER_REFUSAL = (
    "the receiver's settings cannot be read now ({why}): after a refusal by its policy,"
    " Send again needs them read and no longer refusing"
)
HOLDS_AGAIN = (
    "the receiver will hold it again (it bypasses prompts and Coop asserts no permission"
    " mode): it is dropped at its dialog expiry unless approved in the chat"
)


def _unknown(why: str) -> dict[str, Any]:
    return {"verdict": "unknown", "source": "unknown", "why": why, "dialog_expiry": None}


def predict_today(hosts: Mapping[str, Host], envelope: dict[str, Any]) -> dict[str, Any]:
    """The receiver's verdict as predicted now, for an envelope as `queries` shows it."""
    vendor, _, native_id = str(envelope["session"]).partition(":")
    host = hosts.get(str(envelope["host"]))
    if host is None:
        return _unknown(f"{envelope['host']} is not in the fleet")
    try:
        if vendor == "codex":
            return _queued(host.codex_position(native_id))
        if vendor != "claude":
            return _unknown(f"no prediction for {vendor} chats")
        return inbound_policy(host.policy_inputs(native_id))
    except HostsError as error:
        return _unknown(str(error))


def _queued(position: dict[str, Any]) -> dict[str, Any]:
    """A Codex thread's queue takes every message; when it runs is what the thread's
    holder decides: about 10 s while it is open, once it is opened otherwise."""
    from coop_engine.loop.doors.codex import expectation

    if position["archived"] or not position["exists"]:
        why = "the thread is archived" if position["archived"] else "no rollout of the thread"
        return _unknown(why)
    why = expectation(bool(position["open"]))
    return {"verdict": "queued", "source": "codex queue", "why": why, "dialog_expiry": None}


def look_again(hosts: Mapping[str, Host], envelope: dict[str, Any]) -> dict[str, Any]:
    """The prediction at send beside today's, read now, and what today's means for Send
    again: `refusal` (nothing may be created) or `warning` (it may, knowingly). A
    receiver that refuses today is refused; so is one whose settings cannot be read
    today when the envelope was lost to a refusal by its policy."""
    today = predict_today(hosts, envelope)
    refusal = None
    if today["verdict"] == "refuse":
        refusal = STILL_REFUSES
    elif today["verdict"] == "unknown" and envelope.get("reason") == REFUSED_BY_POLICY:
        # The why may quote a settings file's own words: one line, escaped.
        why = one_line(str(today.get("why") or "nothing readable"))
        refusal = UNREAD_AFTER_REFUSAL.format(why=why)
    holds = today["verdict"] == "hold" and today.get("source") == PARITY
    return {
        "at_send": envelope.get("inbound"),
        "today": today,
        "refusal": refusal,
        "warning": HOLDS_AGAIN if holds else None,
    }
