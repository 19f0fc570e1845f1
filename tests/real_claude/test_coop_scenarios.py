"""Coop end to end through its CLI, against the real Claude Code and the simulator alike.

Each scenario (scenarios.py) runs once per backend and session; these tests judge what
Coop recorded (``coop outbox --json``, its ledger events, ``coop chats --json``) against
what the chat wrote. Every receipt, acceptance and held notice Coop claims is checked
against the very line of the chat's transcript it points at.
"""

from __future__ import annotations

from typing import Any

import pytest

from .conftest import Runs
from .offices import Entry
from .scenarios import Run

BACKENDS = [pytest.param("real", marks=pytest.mark.real_claude), "sim"]
PARITY = "permission-mode-parity"


def at(run: Run, offset: int) -> Entry:
    """The transcript entry that starts at byte ``offset``."""
    for start, entry in run.lines:
        if start == offset:
            return entry
    raise AssertionError(f"no transcript line starts at byte {offset}")


def receipt(run: Run, outbox_id: str) -> dict[str, Any]:
    (event,) = [e for e in run.facts["receipts"] if e["subject"] == f"outbox:{outbox_id}"]
    evidence: dict[str, Any] = event["evidence"]
    return evidence


def acceptance(run: Run) -> dict[str, Any]:
    (event,) = run.facts["acceptances"]
    assert (event["from"], event["to"]) == ("invited", "accepted")
    evidence: dict[str, Any] = event["evidence"]
    return evidence


def turn_ends(run: Run) -> list[int]:
    return [o for o, e in run.lines if e.get("subtype") == "turn_duration"]


def assert_accepted_by_a_final(run: Run, invitation: dict[str, Any], after: int) -> int:
    """The acceptance points at a completed final saying COOP_ACCEPT <nonce>, in the
    turn that followed the receipt at ``after``; returns that turn's end."""
    accepted = acceptance(run)
    final = at(run, accepted["offset"])
    assert final["type"] == "assistant" and not final.get("isSidechain")
    text = "".join(b.get("text", "") for b in final["message"]["content"])
    assert f"COOP_ACCEPT {invitation['payload']['nonce']}" in text
    assert at(run, accepted["turn_end"])["subtype"] == "turn_duration"
    first_end = min(end for end in turn_ends(run) if end > after)
    assert after < accepted["offset"] < accepted["turn_end"] == first_end
    return int(accepted["turn_end"])


def assert_peer_entry(run: Run, envelope: dict[str, Any]) -> Entry:
    """Fact 3 from a shape-1 peer entry with Coop's id and provenance."""
    evidence = receipt(run, envelope["id"])
    entry = at(run, evidence["offset"])
    assert evidence["shape"] == "user" and entry["type"] == "user"
    assert entry["isMeta"] is True and entry["promptSource"] == "system"
    assert entry["origin"]["msg_id"] == envelope["id"] != entry["uuid"]  # re-minted
    assert (entry["origin"]["kind"], entry["origin"]["from"]) == ("peer", "cwkCoop")
    assert evidence["origin"] == entry["origin"]  # verifiedPeerPid kept as evidence
    assert entry["message"]["content"].startswith(
        "Another Claude session sent a message:\n" + envelope["payload"]["text"] + "\n\n"
    )
    return entry


@pytest.mark.parametrize("backend", BACKENDS)
def test_idle_default_chat_receives_the_invitation_accepts_it_and_gets_its_work(
    runs: Runs, backend: str
) -> None:
    run = runs.get("idle", backend)
    invitation, work = run.outbox
    assert (invitation["kind"], work["kind"]) == ("invitation", "work")
    assert invitation["inbound"]["verdict"] == "accept"
    assert invitation["inbound"]["source"] == PARITY
    assert all(invitation["facts"][f] for f in ("stored", "transport", "received", "accepted"))
    entry = assert_peer_entry(run, invitation)
    assert entry["permissionMode"] == "auto"  # the default mode of 2.1.328
    assert_accepted_by_a_final(run, invitation, receipt(run, invitation["id"])["offset"])
    assert work["state"] == "delivered" and work["facts"]["received"]
    assert_peer_entry(run, work)
    assert run.trace.registries["ready"]["status"] == "idle"


@pytest.mark.parametrize("backend", BACKENDS)
def test_busy_chat_absorbs_the_invitation_mid_turn_and_the_joined_turn_final_accepts(
    runs: Runs, backend: str
) -> None:
    run = runs.get("busy", backend)
    assert run.trace.registries["busy"]["status"] == "busy"
    invitation, work = run.outbox
    evidence = receipt(run, invitation["id"])
    entry = at(run, evidence["offset"])
    attachment = entry["attachment"]
    assert evidence["shape"] == "queued_command" and attachment["type"] == "queued_command"
    assert attachment["origin"]["msg_id"] == invitation["id"]
    # The queue's id is the receiver's own: matching goes by origin.msg_id.
    assert evidence["entry_uuid"] == attachment["source_uuid"] != invitation["id"]
    assert attachment["isMeta"] is True and "isMeta" not in entry
    (removed,) = [o for o, e in run.lines if e.get("operation") == "remove"]
    assert at(run, removed)["reason"] == "absorbed_mid_turn"
    assert at(run, removed)["commandUuid"] == attachment["source_uuid"]
    assert removed < evidence["offset"]
    # Absorbed, not a new turn: the typed prompt's turn is still running at the receipt.
    typed = [o for o, e in run.lines if e.get("promptSource") == "typed"]
    assert typed and not [end for end in turn_ends(run) if typed[0] < end < evidence["offset"]]
    end = assert_accepted_by_a_final(run, invitation, evidence["offset"])
    assert end == turn_ends(run)[0]  # the final of the typed turn it joined (seed 000)
    assert work["state"] == "delivered"
    assert_peer_entry(run, work)


@pytest.mark.parametrize("backend", BACKENDS)
def test_bypass_chat_holds_the_invitation_until_dialog_expiry_then_it_is_sent_again_once(
    runs: Runs, backend: str
) -> None:
    run = runs.get("bypass", backend)
    sent = run.facts["sent"]
    assert sent["state"] == "uncertain"
    # Predicted from the chat's command line: it bypasses, and Coop attests no mode.
    assert sent["inbound"] == {
        "verdict": "hold",
        "source": PARITY,
        "dialog_expiry": "5m",
        "mode": "bypassPermissions",
    }
    first, second = run.outbox
    held = first["held"]
    notice = at(run, held["offset"])
    assert notice["subtype"] == "informational" and notice["level"] == "warning"
    assert notice["content"].startswith("Held peer message")
    assert held["preview"] == first["payload"]["text"].splitlines()[0]
    registry = run.trace.registries["holding"]
    assert (registry["status"], registry["waitingFor"]) == ("waiting", "permission prompt")
    assert run.facts["before_expiry"]["state"] == "uncertain"
    expired = run.facts["expired"]
    assert (expired["state"], expired["reason"]) == ("expired", "held-for-approval-then-expired")
    again, twice = run.facts["resend"], run.facts["resend_twice"]
    assert again.returncode == 0 and again.stdout.strip() == second["id"]
    assert twice.returncode == 1
    assert twice.stderr.strip() == "coop: This delivery was already sent again"
    assert (first["resent_as"], second["resent_from"]) == (second["id"], first["id"])
    assert second["state"] == "uncertain" and second["held"] is not None
    assert second["payload"]["text"].startswith("Second attempt: the previous message")
    assert at(run, second["held"]["offset"])["content"].startswith("Held peer message")
    assert not [e for _, e in run.lines if e.get("type") == "user"], "nothing was delivered"


@pytest.mark.parametrize("backend", BACKENDS)
def test_bypass_chat_accepting_in_its_user_settings_is_predicted_to_accept_and_delivered(
    runs: Runs, backend: str
) -> None:
    run = runs.get("bypass-accept", backend)
    invitation, work = run.outbox
    assert invitation["inbound"] == {
        "verdict": "accept",
        "source": "user",
        "dialog_expiry": "5m",
        "mode": "bypassPermissions",
    }
    assert invitation["held"] is None
    entry = assert_peer_entry(run, invitation)
    assert entry["permissionMode"] == "bypassPermissions"
    assert_accepted_by_a_final(run, invitation, receipt(run, invitation["id"])["offset"])
    assert work["state"] == "delivered"
    assert not [e for _, e in run.lines if e.get("subtype") == "informational"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_chat_that_exited_or_was_killed_is_refused_before_any_io_with_the_reason(
    runs: Runs, backend: str
) -> None:
    run = runs.get("exited", backend)
    gone, killed = run.facts["gone"], run.facts["killed"]
    for chat, invited in zip((gone, killed), run.facts["invited"], strict=True):
        # `coop invite` asks the Macs first: no reachable Mac has the chat live.
        assert invited.returncode == 1
        assert invited.stderr.strip() == f"coop: No Mac has a live chat {chat.ref} (asked: office)"
    assert {row["session"] for row in run.outbox} & {gone.ref, killed.ref} == set()
    # Refused before I/O: no intent recorded, no byte written, nothing in either chat.
    assert run.facts["marked"] == [] and run.facts["transported"] == []
    assert run.facts["gone_lines"] == run.facts["gone_lines_before"]
    assert run.lines == run.facts["killed_lines_before"]
    # The exited chat's entry is gone; the killed one's lingers and is not live.
    assert run.trace.registries["exited"] is None
    assert run.trace.registries["killed"] == run.facts["killed_registry_before"]
    assert f"{killed.pid}.json" in run.facts["sessions"]
    assert not [name for name in run.facts["sessions"] if name.startswith(f"{gone.pid}.")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_coop_chats_lists_each_live_chat_with_its_status_socket_and_prediction(
    runs: Runs, backend: str
) -> None:
    run = runs.get("chats", backend)
    ok = "ok"
    assert run.trace.chats == {
        "idle": {"status": "idle", "socket": ok, "inbound": "accept", "inbound_source": PARITY},
        "busy": {"status": "busy", "socket": ok, "inbound": "accept", "inbound_source": PARITY},
        "holding": {
            "status": "waiting",
            "socket": ok,
            "inbound": "hold",
            "inbound_source": PARITY,
        },
        "flagged": {
            "status": "idle",
            "socket": ok,
            "inbound": "accept",
            "inbound_source": "settings-flag",
        },
    }
    chats = run.facts["chats"]
    rows = {row["session_id"]: row for row in run.facts["rows"]}
    assert chats["killed"].session_id not in rows, "a killed chat is not live"
    assert len(rows) == 4
    for role in ("idle", "busy", "holding", "flagged"):
        row = rows[chats[role].session_id]
        assert row["pid"] == chats[role].pid and row["name"] and row["host"] == "office"
        if backend == "real":
            assert row["tmux"] == "chat:@0.%0"
