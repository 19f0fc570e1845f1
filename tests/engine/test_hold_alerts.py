"""A hold's alert says what to do for that hold (issue 29 item 8): only a parity hold has
a dialog to answer; an explicit hold is lifted in the settings that hold (a frame in a
Claude inbox cannot be withdrawn); a hold Coop cannot explain is never worded as one it
can. The app's toasts and the desktop notifier read these same alerts."""

from __future__ import annotations

import pytest

from coop_engine.errors import NOT_TAKEN_BACK, Conflict
from coop_engine.queries.status import alerts_between

from .support import Steps


def held_alert(steps: Steps, cause: str) -> str:
    """The text of the one alert a held notice of this cause raises."""
    outbox_id = steps.invitation()["outbox"]
    steps.send(outbox_id)
    steps.engine.record_held(outbox_id, {"offset": 0, "preview": "Coop", "cause": cause})
    (alert,) = [a for a in alerts_between(0) if a["kind"] == "held"]
    assert alert["outbox"] == outbox_id
    return str(alert["text"])


def test_a_parity_hold_says_to_answer_its_dialog(steps):
    assert "answer its dialog (Deliver) on that Mac" in held_alert(steps, "parity")


def test_an_explicit_hold_says_to_let_it_in_where_the_settings_hold_it(steps):
    text = held_alert(steps, "explicit")
    assert '"crossSessionInbound": "hold"' in text
    assert 'set it to "accept" in the user\'s settings, or remove a repository\'s "hold"' in text
    assert "no dialog, no expiry" in text and "answer" not in text
    # What the alert must not advise: Coop refuses to withdraw a frame already written.
    assert "withdraw" not in text


def test_an_explicit_hold_cannot_be_withdrawn_as_its_alert_once_said(steps):
    outbox_id = steps.invitation()["outbox"]
    steps.send(outbox_id)
    steps.engine.record_held(outbox_id, {"offset": 0, "preview": "Coop", "cause": "explicit"})
    with pytest.raises(Conflict, match=NOT_TAKEN_BACK):
        steps.engine.withdraw(outbox_id, "dad")


@pytest.mark.parametrize("cause", ["unknown", "something Claude Code wrote later"])
def test_a_hold_coop_cannot_explain_is_not_called_a_dialog(steps, cause):
    text = held_alert(steps, cause)
    assert "dialog" not in text
    assert "a reason Coop cannot read" in text and "never expired for silence" in text
