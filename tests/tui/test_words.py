"""Plain words first, codes beside them: states, reasons, INBOUND, History, the held
notice, the registry entry and the proof of loss."""

from __future__ import annotations

import pytest
from rich.console import Console
from tuikit import T0, Staged

from coop_engine import queries
from coop_tui import explain
from coop_tui.screens.delivery import render_detail

pytestmark = pytest.mark.tui


def rendered(outbox_id: str) -> str:
    console = Console(width=200, color_system=None, record=True)
    console.print(render_detail(queries.delivery_detail(outbox_id)))
    return " ".join(console.export_text().split())


def test_inbound_reads_accepts_holds_or_refuses_in_words():
    assert explain.inbound_words({"verdict": "accept", "source": "permission-mode-parity"}) == (
        "accepts"
    )
    assert explain.inbound_words({"verdict": "hold", "source": "permission-mode-parity"}) == (
        "holds (bypass, no setting)"
    )
    assert explain.inbound_words({"verdict": "refuse", "source": "settings-flag"}) == (
        "refuses (--settings)"
    )


def test_states_and_reasons_are_words_with_the_code_beside_them():
    assert explain.state_words("expired") == "proven lost (expired)"
    assert explain.reason_words("withdrawn-from-queue") == (
        "withdrawn from Codex's queue (withdrawn-from-queue)"
    )


def test_history_says_what_happened_and_never_a_function_name(staged: Staged):
    shown = rendered(staged.outbox["reviewer"])
    assert "sent: the socket took the frame" in shown
    assert "held notice seen" in shown
    assert f"sent again as {staged.outbox['reviewer_again'][:8]}" in shown
    assert "stays expired" in shown and "uncertain → expired" in shown
    for code in ("mark_uncertain", "record_transport", "record_held", "expired → expired"):
        assert code not in shown


def test_a_proven_loss_by_idle_receiver_says_how_long_it_waited(staged: Staged):
    assert "proven lost: receiver idle, no entry after 411 s" in rendered(staged.outbox["flaky"])


def test_a_work_envelopes_accepted_fact_is_the_invitations_acceptance(staged: Staged):
    shown = rendered(staged.outbox["importer_work"])
    assert f"the invitation's acceptance (invitation {staged.outbox['importer']})" in shown


def test_the_held_notice_is_a_sentence_with_its_preview(staged: Staged):
    shown = rendered(staged.outbox["reviewer"])
    assert "The receiver wrote a held notice for this message at byte 115" in shown
    assert "It showed «Coop invites you to todo #3" in shown
    assert "{'cause'" not in shown


def test_a_refusal_judged_in_the_pass_that_sent_it_is_never_negative():
    lines = explain.proof_of_loss(
        {"reason": "refused-by-receiver-policy", "sent_at": T0 + 0.4, "observed_at": T0}
    )
    assert not any("-0 s" in line or "judged" in line and "later" in line for line in lines)
    assert any("judged as it was sent" in line for line in lines)


def test_the_registry_entry_is_labelled_fields_with_relative_times():
    entry = {"status": "idle", "updatedAt": int((T0 - 180) * 1000), "pid": 4101, "name": "x"}
    fields = dict(explain.registry_fields(entry, T0))
    assert fields["status"] == "idle, 3 m ago"
    assert fields["process"].startswith("pid 4101")


@pytest.mark.parametrize(
    ("evidence", "words"),
    [
        ({"released_by": "dad"}, "cancelled: dad released the take (never sent)"),
        ({"obligation": 3, "decided": "wait"}, "cancelled: obligation 3 was decided (wait)"),
        ({"taken_by": 7}, "cancelled: the todo was taken by another dispatch (never sent)"),
    ],
)
def test_an_envelope_cancelled_by_another_decision_says_which(evidence, words):
    event = {"command": "cancel", "who": "dad", "evidence": evidence}
    assert explain.happened(event, {}) == words
