"""Send again looks at the receiver again, now (loop/resend.py): after a refusal by its
policy, only settings read now and no longer refusing let a second attempt be created;
settings that cannot be read, or a Mac that cannot be asked, refuse it with that reason.
Other losses keep their rule: only a receiver that refuses today is refused."""

from __future__ import annotations

from typing import Any

import pytest

from coop_engine.loop.resend import STILL_REFUSES, look_again
from hosts.mac.host import HostError

REFUSED = "refused-by-receiver-policy"
AT_SEND = {"verdict": "refuse", "source": "settings-flag", "dialog_expiry": "5m", "mode": None}
UNREADABLE = {"user": {"path": "/mac/.claude/settings.json", "error": "not valid JSON"}}
ACCEPTS = {
    "user": {"path": "/mac/.claude/settings.json", "value": {"crossSessionInbound": "accept"}}
}
REFUSES = {"flag": {"value": {"crossSessionInbound": "refuse"}}}


class Mac:
    """A Mac whose chat's settings read as `inputs`, or which cannot be asked."""

    def __init__(self, inputs: dict[str, Any] | None) -> None:
        self.inputs = inputs
        self.asked = 0

    def policy_inputs(self, native_id: str) -> dict[str, Any]:
        self.asked += 1
        if self.inputs is None:
            raise HostError("office", "timed out after 10 s")
        return self.inputs


def envelope(reason: str) -> dict[str, Any]:
    return {"session": "claude:abcd", "host": "office", "inbound": AT_SEND, "reason": reason}


def test_after_a_policy_refusal_settings_unreadable_now_refuse_send_again() -> None:
    mac = Mac(UNREADABLE)
    looked = look_again({"office": mac}, envelope(REFUSED))  # type: ignore[dict-item]
    assert mac.asked == 1  # read now, not taken from the prediction at send
    assert looked["today"]["verdict"] == "unknown"
    assert looked["refusal"] == (
        "the receiver's settings cannot be read now (/mac/.claude/settings.json: not valid"
        " JSON): after a refusal by its policy, Send again needs them read and no longer"
        " refusing"
    )


def test_after_a_policy_refusal_a_mac_that_cannot_be_asked_refuses_send_again() -> None:
    looked = look_again({"office": Mac(None)}, envelope(REFUSED))  # type: ignore[dict-item]
    assert looked["refusal"] is not None
    assert "cannot be read now (office: timed out after 10 s)" in looked["refusal"]


def test_after_a_policy_refusal_settings_read_now_and_accepting_allow_send_again() -> None:
    looked = look_again({"office": Mac(ACCEPTS)}, envelope(REFUSED))  # type: ignore[dict-item]
    assert (looked["today"]["verdict"], looked["refusal"]) == ("accept", None)
    assert looked["at_send"] == AT_SEND


def test_a_receiver_that_refuses_now_is_refused_whatever_the_first_loss() -> None:
    for reason in (REFUSED, "receiver-idle-without-entry"):
        looked = look_again({"office": Mac(REFUSES)}, envelope(reason))  # type: ignore[dict-item]
        assert looked["refusal"] == STILL_REFUSES


@pytest.mark.parametrize(
    "reason", ["receiver-idle-without-entry", "held-for-approval-then-expired"]
)
def test_other_losses_with_settings_unreadable_now_are_not_refused(reason: str) -> None:
    looked = look_again({"office": Mac(UNREADABLE)}, envelope(reason))  # type: ignore[dict-item]
    assert (looked["today"]["verdict"], looked["refusal"]) == ("unknown", None)
