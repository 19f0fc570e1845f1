"""Coop's door against what the real Claude Code 2.1.328 does where DESIGN.md said
otherwise (each fix is listed in OBSERVED.md section 1)."""

from __future__ import annotations

from typing import Any

from coop_engine import receipts
from coop_engine.policy import inbound_policy

# A held notice 2.1.328 wrote for a resent invitation (ids shortened by nothing).
RESENT = (
    "Second attempt: the previous message (6490785f-46cf-492f-841d-fd1a3004615b) was not "
    "delivered (held-for-approval-then-expired).\n"
    "Coop invites you to todo #1: Fix the flaky importer test"
)
RESENT_NOTICE = (
    "Held peer message \u2014 from an unidentified session [verified pid 25139]; preview: "
    "\u00abSecond attempt: the previous message 6490785f-46cf-492f-841d-fd1a3004615b was not "
    "delivered held-for-approval-then-expir\u00bb \u2026[4 lines, 294 chars total \u2014 expand "
    "to review before approving] \u2014 not delivered to Claude (2 held). The sender did not "
    "attest its permission mode and this session bypasses prompts. Review it below, or set "
    '"crossSessionInbound" to "accept".'
)


def inputs(**sources: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        name: None for name in ("managed", "flag", "user", "project", "local", "recorded_mode")
    }
    return {**base, "cmdline_mode": None, "cmdline_readable": True, **sources}


def setting(value: str) -> dict[str, Any]:
    return {"path": "settings.json", "value": {"crossSessionInbound": value}}


def test_a_held_notice_matches_its_envelope_although_the_preview_drops_brackets() -> None:
    entry = {"type": "system", "subtype": "informational", "content": RESENT_NOTICE}
    notice = receipts.held_notice(entry, 0)
    assert notice is not None
    assert receipts.preview_matches(notice.preview, RESENT)
    assert not receipts.preview_matches(notice.preview, RESENT.replace("6490785f", "7490785f"))


def test_quotes_and_dashes_are_not_shown_in_a_preview_either() -> None:
    text = 'Coop invites you to todo #4: Rename "main" \u2014 or [master]\nmore'
    assert receipts.preview_matches("Coop invites you to todo #4: Rename main or master", text)


def test_an_invalid_inbound_value_in_user_settings_is_ignored_like_the_receiver_does() -> None:
    bypass = inbound_policy(inputs(user=setting("bogus"), cmdline_mode="bypassPermissions"))
    assert (bypass["verdict"], bypass["source"]) == ("hold", "permission-mode-parity")
    auto = inbound_policy(inputs(user=setting("bogus"), recorded_mode="auto"))
    assert (auto["verdict"], auto["source"]) == ("accept", "permission-mode-parity")


def test_an_invalid_inbound_value_elsewhere_still_holds_for_good() -> None:
    for name, label in (("flag", "settings-flag"), ("project", "project")):
        got = inbound_policy(inputs(**{name: setting("bogus")}, recorded_mode="auto"))
        assert (got["verdict"], got["source"]) == ("hold", label)
