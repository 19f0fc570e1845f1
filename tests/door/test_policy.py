"""inbound_policy's precedence (DESIGN.md 5.6) and delivery_verdict's three reasons (5.7)."""

from __future__ import annotations

from typing import Any

import pytest

from coop_engine.policy import delivery_verdict, inbound_policy, verdict_due


def src(**value: Any) -> dict[str, Any]:
    return {"path": "settings.json", "value": value}


def inputs(**overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "managed": None,
        "flag": None,
        "user": None,
        "project": None,
        "local": None,
        "recorded_mode": None,
        "cmdline_mode": None,
        "cmdline_readable": True,
    }
    base.update(overrides)
    return base


def test_managed_setting_wins_over_the_flag_and_user() -> None:
    got = inbound_policy(
        inputs(
            managed=src(crossSessionInbound="refuse"),
            flag=src(crossSessionInbound="accept"),
            user=src(crossSessionInbound="accept"),
        )
    )
    assert (got["verdict"], got["source"]) == ("refuse", "managed")


def test_settings_flag_wins_over_user_settings() -> None:
    got = inbound_policy(
        inputs(flag=src(crossSessionInbound="accept"), user=src(crossSessionInbound="hold"))
    )
    assert (got["verdict"], got["source"]) == ("accept", "settings-flag")


def test_user_setting_decides_when_nothing_above_it_is_explicit() -> None:
    got = inbound_policy(
        inputs(user=src(crossSessionInbound="accept"), recorded_mode="bypassPermissions")
    )
    assert (got["verdict"], got["source"]) == ("accept", "user")


def test_repository_settings_only_tighten() -> None:
    loosen = inbound_policy(
        inputs(user=src(crossSessionInbound="hold"), project=src(crossSessionInbound="accept"))
    )
    assert (loosen["verdict"], loosen["source"]) == ("hold", "user")
    tighten = inbound_policy(
        inputs(user=src(crossSessionInbound="accept"), local=src(crossSessionInbound="refuse"))
    )
    assert (tighten["verdict"], tighten["source"]) == ("refuse", "project-local")


def test_invalid_value_counts_as_hold() -> None:
    got = inbound_policy(inputs(flag=src(crossSessionInbound="sometimes")))
    assert (got["verdict"], got["source"]) == ("hold", "settings-flag")


@pytest.mark.parametrize(
    ("mode_inputs", "verdict"),
    [
        ({"recorded_mode": "bypassPermissions"}, "hold"),
        ({"recorded_mode": "auto"}, "accept"),
        ({"cmdline_mode": "bypassPermissions"}, "hold"),
        ({"user": src(permissions={"defaultMode": "bypassPermissions"})}, "hold"),
        ({}, "accept"),
    ],
)
def test_permission_mode_parity_without_an_explicit_value(
    mode_inputs: dict[str, Any], verdict: str
) -> None:
    got = inbound_policy(inputs(**mode_inputs))
    assert (got["verdict"], got["source"]) == (verdict, "permission-mode-parity")


def test_recorded_mode_comes_before_the_command_line() -> None:
    got = inbound_policy(inputs(recorded_mode="auto", cmdline_mode="bypassPermissions"))
    assert got["verdict"] == "accept" and got["mode"] == "auto"


def test_a_mode_the_transcript_may_have_recorded_before_the_part_read_is_unknown() -> None:
    unsearched = {"recorded_mode": None, "recorded_mode_complete": False}
    got = inbound_policy(inputs(cmdline_mode="auto", **unsearched))
    assert (got["verdict"], got["mode"]) == ("unknown", None)
    user = src(crossSessionInbound="hold", permissions={"defaultMode": "auto"})
    assert inbound_policy(inputs(user=user, **unsearched))["verdict"] == "hold"
    # The whole transcript read, no mode in it: the command line says it.
    whole = inbound_policy(inputs(cmdline_mode="auto", recorded_mode_complete=True))
    assert (whole["verdict"], whole["mode"]) == ("accept", "auto")


def test_unreadable_settings_predict_unknown() -> None:
    got = inbound_policy(inputs(user={"path": "/u/settings.json", "error": "not valid JSON"}))
    assert got["verdict"] == "unknown"
    assert "not valid JSON" in got["why"]


def test_unrecognised_mode_or_unreadable_command_line_predicts_unknown() -> None:
    assert inbound_policy(inputs(recorded_mode="yolo"))["verdict"] == "unknown"
    assert inbound_policy(inputs(cmdline_readable=False))["verdict"] == "unknown"


def test_dialog_expiry_comes_from_settings_and_the_repository_may_only_make_it_never() -> None:
    # The binary honours a repository's dialogExpiry only when it is "never" (OBSERVED 7).
    assert inbound_policy(inputs(user=src(dialogExpiry="60s")))["dialog_expiry"] == "60s"
    # A value Coop does not know is no expiry Coop can count on (seed 001).
    assert inbound_policy(inputs(user=src(dialogExpiry="3 days")))["dialog_expiry"] == "unknown"
    assert inbound_policy(inputs(project=src(dialogExpiry="60s")))["dialog_expiry"] == "5m"
    for repository in ("project", "local"):
        never = inbound_policy(
            inputs(user=src(dialogExpiry="60s"), **{repository: src(dialogExpiry="never")})
        )
        assert never["dialog_expiry"] == "never"


def test_a_parity_hold_under_an_expiry_coop_cannot_know_never_expires() -> None:
    for user in (src(dialogExpiry="3 days"), {"path": "settings.json", "error": "not valid JSON"}):
        got = inbound_policy(inputs(recorded_mode="bypassPermissions", user=user))
        assert got["dialog_expiry"] == "unknown"
        assert verdict(got, 10**7) is None
        assert verdict(got, 10**7, held={"cause": "parity"}) is None
    known = inbound_policy(inputs(recorded_mode="bypassPermissions", user=src()))
    assert (known["verdict"], known["dialog_expiry"]) == ("hold", "5m")
    assert verdict(known, 10**7) == "held-for-approval-then-expired"


def test_an_explicit_repository_hold_wins_over_an_equal_parity_hold() -> None:
    # Both hold, but only the parity one would expire: an explicit hold never does, so a
    # frame the receiver holds for good is never proven lost at the dialog expiry.
    for repository, label in (("project", "project"), ("local", "project-local")):
        got = inbound_policy(
            inputs(
                recorded_mode="bypassPermissions", **{repository: src(crossSessionInbound="hold")}
            )
        )
        assert (got["verdict"], got["source"]) == ("hold", label)
        assert verdict(got, 10**7) is None


def test_an_unreadable_command_line_makes_the_settings_flag_unknown() -> None:
    # The chat may have been started with --settings: user settings must not win blindly.
    from hosts.mac.settings import settings_flag

    flag = settings_flag(None, "/work")
    got = inbound_policy(inputs(flag=flag, user=src(crossSessionInbound="accept")))
    assert got["verdict"] == "unknown"
    assert settings_flag([], "/work") is None  # readable, no flag: absent


SENT = 1_000_000.0


def verdict(
    prediction: dict[str, Any] | None,
    elapsed: float,
    status: str | None = "idle",
    mentioned: bool = False,
    held: dict[str, Any] | None = None,
) -> str | None:
    asked: list[str] = []

    def registry_status() -> str | None:
        asked.append("status")
        return status

    def mentions() -> bool:
        asked.append("transcript")
        return mentioned

    result = delivery_verdict(
        prediction, SENT, SENT + elapsed, registry_status, mentions, held=held
    )
    if result != "receiver-idle-without-entry" and (prediction or {}).get("verdict") != "accept":
        assert asked == []  # evidence is read only when the answer needs it
    return result


def test_refuse_expires_at_once() -> None:
    assert verdict({"verdict": "refuse", "source": "user"}, 0) == "refused-by-receiver-policy"


def test_parity_hold_expires_after_dialog_expiry_plus_grace_and_not_before() -> None:
    hold = {"verdict": "hold", "source": "permission-mode-parity", "dialog_expiry": "60s"}
    assert verdict(hold, 119.9) is None
    assert verdict(hold, 120) == "held-for-approval-then-expired"


def test_explicit_hold_and_never_expiry_stay_watched() -> None:
    assert verdict({"verdict": "hold", "source": "user", "dialog_expiry": "60s"}, 10**7) is None
    never = {"verdict": "hold", "source": "permission-mode-parity", "dialog_expiry": "never"}
    assert verdict(never, 10**7) is None


def test_accept_expires_only_idle_and_without_an_entry_after_60s() -> None:
    accept = {"verdict": "accept", "source": "permission-mode-parity"}
    assert verdict(accept, 59.9) is None
    assert verdict(accept, 60) == "receiver-idle-without-entry"
    assert verdict(accept, 600, status="busy") is None
    assert verdict(accept, 600, status="waiting") is None
    assert verdict(accept, 600, status=None) is None
    assert verdict(accept, 600, mentioned=True) is None


def test_unknown_never_expires() -> None:
    assert verdict({"verdict": "unknown"}, 10**7) is None
    assert verdict(None, 10**7) is None


# --- a held notice seen outranks the prediction (issue 12) ---------------------------------

PARITY_HELD = {"offset": 10, "preview": "Invitation", "cause": "parity"}
EXPLICIT_HELD = {"offset": 10, "preview": "Invitation", "cause": "explicit"}


def held_verdict(
    prediction: dict[str, Any] | None, held: dict[str, Any], elapsed: float
) -> str | None:
    def untouched() -> Any:
        raise AssertionError("a held envelope's fate is not read from the registry")

    return delivery_verdict(prediction, SENT, SENT + elapsed, untouched, untouched, held=held)


ACCEPT = {"verdict": "accept", "source": "user", "dialog_expiry": "5m"}
REFUSE = {"verdict": "refuse", "source": "project", "dialog_expiry": "5m"}


@pytest.mark.parametrize("cause", ["explicit", "unrecognized", "unknown"])
@pytest.mark.parametrize("prediction", [ACCEPT, REFUSE, None])
def test_a_seen_explicit_or_unreadable_hold_never_expires_while_watched(cause, prediction):
    held = {**EXPLICIT_HELD, "cause": cause}
    for elapsed in (0, 61, 6 * 60, 3600, 10**7):
        assert held_verdict(prediction, held, elapsed) is None


@pytest.mark.parametrize("prediction", [ACCEPT, REFUSE, None])
def test_a_seen_parity_hold_follows_the_dialog_expiry_whatever_was_predicted(prediction):
    assert held_verdict(prediction, PARITY_HELD, 61) is None
    assert held_verdict(prediction, PARITY_HELD, 5 * 60 + 59) is None
    assert held_verdict(prediction, PARITY_HELD, 6 * 60) == "held-for-approval-then-expired"
    assert held_verdict(prediction, PARITY_HELD, 3600) == "held-for-approval-then-expired"


def test_a_seen_parity_hold_uses_the_dialog_expiry_coop_can_read() -> None:
    quick = {"verdict": "accept", "source": "user", "dialog_expiry": "60s"}
    assert held_verdict(quick, PARITY_HELD, 119) is None
    assert held_verdict(quick, PARITY_HELD, 120) == "held-for-approval-then-expired"
    never = {"verdict": "accept", "source": "user", "dialog_expiry": "never"}
    assert held_verdict(never, PARITY_HELD, 10**7) is None


def test_the_hold_cause_is_read_from_the_notices_own_words() -> None:
    from coop_engine.receipts import hold_cause
    from hosts.sim.replies import HOLD_CAUSES

    # The simulator's notices are the real binary's sentences (OBSERVED.md 6 and 7).
    assert hold_cause(HOLD_CAUSES["no-mode-asserted"]) == "parity"
    for explicit in ("explicit-setting", "managed-setting", "repo-setting"):
        assert hold_cause(HOLD_CAUSES[explicit]) == "explicit"
    assert hold_cause(HOLD_CAUSES["invalid-setting"]) == "unrecognized"
    assert hold_cause("Held peer message — not delivered to Claude (1 held).") == "unknown"


# --- when a verdict is next due, with nothing changed (issue 13: passes only when due) -----


@pytest.mark.parametrize(
    ("prediction", "held", "due"),
    [
        ({"verdict": "accept", "source": "user"}, None, SENT + 60),
        ({"verdict": "hold", "source": "permission-mode-parity", "dialog_expiry": "60s"}, None,
         SENT + 120),
        ({"verdict": "accept", "source": "user", "dialog_expiry": "60s"}, PARITY_HELD, SENT + 120),
        ({"verdict": "hold", "source": "user", "dialog_expiry": "60s"}, None, None),
        ({"verdict": "hold", "source": "permission-mode-parity", "dialog_expiry": "never"}, None,
         None),
        ({"verdict": "accept", "source": "user"}, EXPLICIT_HELD, None),
        ({"verdict": "unknown"}, None, None),
        (None, None, None),
    ],
)  # fmt: skip
def test_a_verdict_is_due_when_the_rule_could_first_decide_it_unchanged(
    prediction: dict[str, Any] | None, held: dict[str, Any] | None, due: float | None
) -> None:
    assert verdict_due(prediction, SENT, SENT, held) == due
    if due is not None:
        # Just before, the rule keeps watching; from then on, only a change decides.
        assert verdict_due(prediction, SENT, due - 0.1, held) == due
        assert verdict_due(prediction, SENT, due, held) is None


def test_the_due_time_is_where_the_verdict_changes_its_mind() -> None:
    """verdict_due names the very time delivery_verdict first answers, for every rule
    that a time decides."""
    for prediction, held in [
        ({"verdict": "accept", "source": "user"}, None),
        ({"verdict": "hold", "source": "permission-mode-parity", "dialog_expiry": "60s"}, None),
        ({"verdict": "accept", "source": "user", "dialog_expiry": "60s"}, PARITY_HELD),
    ]:
        due = verdict_due(prediction, SENT, SENT, held)
        assert due is not None

        for at, decided in ((due - 0.01, False), (due, True)):
            said = delivery_verdict(prediction, SENT, at, lambda: "idle", lambda: False, held)
            assert (said is not None) == decided, (prediction, held, at)
