"""The Claude door on the office (seeds 000 and 001, DESIGN 5.4-5.5): target twice,
intent before I/O, never infer unsent, receipts in both shapes with every provenance
field, seen twice, the answer's nonce in the turn's final, the held notice."""

from __future__ import annotations

from ..mutant import Mutant

CLAUDE = "coop_engine/loop/doors/claude.py"
DOOR = "coop_engine/loop/doors/door.py"
RECEIPTS = "coop_engine/receipts.py"
INVITATIONS = "coop_engine/invitations.py"
DELIVERY = "coop_engine/delivery.py"

REFUSALS = "tests/door/test_refusals.py"
TEST_RECEIPTS = "tests/door/test_receipts.py"
TEST_DELIVERY = "tests/door/test_delivery.py"
PROVENANCE = "tests/door/test_receipt_provenance.py"  # the other helper's, on its way
RULES = "tests/engine/test_rules_delivery.py"
TAKES = "tests/engine/test_rules_takes.py"
FAULT = (
    "tests/faults/test_faults.py"
    "::test_a_failure_at_this_point_leaves_old_or_new_state_and_the_next_pass_recovers"
)

MUTANTS = (
    Mutant(
        "twice-read-compare-skipped",
        "the twice-read: two differing readings refuse (Native receiver changed before send)",
        CLAUDE,
        "            if first != second:\n",
        "            if False:\n",
        ("tests/door/test_twice_read.py",),
    ),
    Mutant(
        "twice-read-reads-once",
        "the twice-read: target() is read a second time before the intent",
        CLAUDE,
        "            first, second, inputs, position = readings\n",
        "            first, _, inputs, position = readings\n            second = first\n",
        ("tests/door/test_twice_read.py",),
    ),
    Mutant(
        "intent-after-the-write",
        "intent before I/O: the row is uncertain before the first byte leaves",
        CLAUDE,
        "        try:\n"
        "            intent = self.engine.mark_uncertain(row.id, cursor)\n"
        "        except Conflict:\n"
        "            return  # another coordinator took this envelope first\n"
        '        line = frame(native_id, row.id, row.payload["text"]).decode()\n',
        '        line = frame(native_id, row.id, row.payload["text"]).decode()\n'
        "        early = self.host.send_frame(first, native_id, line)\n"
        "        try:\n"
        "            intent = self.engine.mark_uncertain(row.id, cursor)\n"
        "        except Conflict:\n"
        "            return  # another coordinator took this envelope first\n"
        "        line = early and line\n",
        (f"{FAULT}[ledger.mark_uncertain-full]", "tests/engine/test_kill.py"),
    ),
    Mutant(
        "intent-without-host-queue-row",
        "intent before I/O: the host-queue row is written in the same transaction",
        DELIVERY,
        '            HostQueue.create(\n                host=cursor.get("host", ""),\n',
        '            dict(\n                host=cursor.get("host", ""),\n',
        (
            f"{RULES}::test_mark_uncertain_moves_pending_to_uncertain_and_writes_the_host_queue_row"
            "[sqlite]",
        ),
    ),
    Mutant(
        "intent-of-a-row-not-pending",
        "intent before I/O: mark_uncertain refuses anything not pending",
        DELIVERY,
        '                    & (Outbox.state == "pending")\n'
        "                    & (Outbox.generation == current)\n",
        "                    & (Outbox.generation == current)\n",
        (f"{RULES}::test_mark_uncertain_refuses_a_row_that_is_not_pending",),
        select="sqlite",
    ),
    Mutant(
        "unsent-inferred-from-a-lost-answer",
        "never infer unsent: a request that failed may have reached the Mac",
        DOOR,
        '            result = {"ok": False, "written":'
        ' True, "stage": "request", "error": str(error)}\n',
        '            result = {"ok": False, "written":'
        ' False, "stage": "request", "error": str(error)}\n',
        (f"{FAULT}[helper.send_answer_lost-timeout]", f"{FAULT}[helper.send_lost-EPIPE]"),
    ),
    Mutant(
        "unsent-inferred-from-a-failed-write",
        "never infer unsent: a write that failed after connecting may have left bytes",
        "hosts/mac/native.py",
        '                "written": True,\n                "stage": "write",\n',
        '                "written": False,\n                "stage": "write",\n',
        (f"{FAULT}[socket.write-EPIPE]",),
    ),
    Mutant(
        "unsent-inferred-by-the-ledger",
        "never infer unsent: only a send the host refused before connecting goes back to pending",
        DELIVERY,
        "            if not written:\n",
        "            if not ok:\n",
        (f"{RULES}::test_transport_failed_after_connect_leaves_the_send_uncertain[sqlite]",),
    ),
    Mutant(
        "receipt-ignores-is-meta",
        "receipts: isMeta must be true",
        RECEIPTS,
        "    if is_meta is not True:\n",
        "    if False:\n",
        (PROVENANCE,),
    ),
    Mutant(
        "receipt-ignores-origin-kind",
        "receipts: origin.kind must be peer",
        RECEIPTS,
        '    expected = {"kind": "peer", "from": SENDER, "msg_id": outbox_id}\n',
        '    expected = {"from": SENDER, "msg_id": outbox_id}\n',
        (PROVENANCE,),
    ),
    Mutant(
        "receipt-ignores-origin-from",
        "receipts: origin.from must be cwkCoop",
        RECEIPTS,
        '    expected = {"kind": "peer", "from": SENDER, "msg_id": outbox_id}\n',
        '    expected = {"kind": "peer", "msg_id": outbox_id}\n',
        (f"{TEST_RECEIPTS}::test_wrong_provenance_is_not_a_receipt",),
    ),
    Mutant(
        "receipt-ignores-origin-msg-id",
        "receipts: origin.msg_id must be the outbox id",
        RECEIPTS,
        '    expected = {"kind": "peer", "from": SENDER, "msg_id": outbox_id}\n',
        '    expected = {"kind": "peer", "from": SENDER}\n',
        (PROVENANCE,),
    ),
    Mutant(
        "receipt-without-an-origin",
        "receipts: an entry without an origin is not a receipt",
        RECEIPTS,
        '        return problems + ["no origin"]\n',
        "        return problems\n",
        (PROVENANCE,),
    ),
    Mutant(
        "receipt-busy-shape-unread",
        "receipts: both shapes: the absorbed queued_command attachment (busy receiver)",
        RECEIPTS,
        '        and attachment.get("type") == "queued_command"\n',
        '        and attachment.get("type") == "queued-command"\n',
        (f"{TEST_RECEIPTS}::test_busy_shape_is_a_receipt_and_the_joined_turn_final_answers",),
    ),
    Mutant(
        "receipt-idle-shape-by-uuid-only",
        "receipts: both shapes: an idle receiver's user entry named by origin.msg_id",
        RECEIPTS,
        '        named = entry.get("uuid") == outbox_id or (\n',
        '        named = entry.get("uuid") == outbox_id or False and (\n',
        (
            f"{TEST_RECEIPTS}::test_idle_shape_is_a_receipt_by_origin_msg_id_and_the_torn_tail_waits",
        ),
    ),
    Mutant(
        "receipt-busy-shape-by-source-uuid-only",
        "receipts: both shapes: an absorbed attachment named by origin.msg_id",
        RECEIPTS,
        '        named = attachment.get("source_uuid") == outbox_id or (\n',
        '        named = attachment.get("source_uuid") == outbox_id or False and (\n',
        (
            "tests/door/test_receipt_shapes.py"
            "::test_an_absorbed_frame_is_found_by_its_origin_msg_id_not_its_source_uuid",
        ),
    ),
    Mutant(
        "receipt-busy-shape-is-meta-assumed",
        "receipts: isMeta must be true on the absorbed shape too",
        RECEIPTS,
        '        is_meta = True if entry.get("isMeta") is True or attachment.get("isMeta") is True'
        " else None\n",
        "        is_meta = True\n",
        (PROVENANCE,),
    ),
    Mutant(
        "seen-twice-not-a-conflict",
        "seen-twice: the same envelope at another place is a conflict",
        DOOR,
        '        if state == "delivered" and offset != receipt_offset:\n',
        "        if False:\n",
        (f"{TEST_DELIVERY}::test_second_sighting_is_a_conflict",),
    ),
    Mutant(
        "answer-nonce-not-compared",
        "the answer's nonce: COOP_ACCEPT must carry this invitation's nonce",
        INVITATIONS,
        '            if not secrets.compare_digest(dispatch.nonce or "", nonce):\n'
        '                raise Conflict("COOP_ACCEPT nonce',
        '            if False:\n                raise Conflict("COOP_ACCEPT nonce',
        (f"{TAKES}::test_accept_with_the_wrong_nonce_is_refused[sqlite]",),
    ),
    Mutant(
        "decline-nonce-not-compared",
        "the answer's nonce: COOP_DECLINE must carry this invitation's nonce",
        INVITATIONS,
        '            if invitation.kind != "invitation" or not secrets.compare_digest(\n'
        '                dispatch.nonce or "", nonce\n'
        "            ):\n",
        '            if invitation.kind != "invitation":\n',
        (f"{TAKES}::test_decline_with_the_wrong_nonce_is_refused[sqlite]",),
    ),
    Mutant(
        "answer-nonce-prefix-accepted",
        "the answer's nonce: the exact nonce as a word, not a prefix of a longer one",
        RECEIPTS,
        '    accepts = re.search(rf"\\bCOOP_ACCEPT\\s+{token}(?![A-Za-z0-9])", text) is not None\n',
        '    accepts = re.search(rf"\\bCOOP_ACCEPT\\s+{token}", text) is not None\n',
        (f"{TEST_RECEIPTS}::test_answer_needs_the_exact_nonce_as_a_word",),
    ),
    Mutant(
        "answer-from-the-first-text-not-the-final",
        "the answer's nonce: in the turn's final, the last main-chain text before its end",
        RECEIPTS,
        '            last = (offset, said, entry.get("timestamp"))\n',
        '            last = last or (offset, said, entry.get("timestamp"))\n',
        (f"{TEST_RECEIPTS}::test_a_final_is_the_last_main_chain_text_before_turn_duration",),
    ),
    Mutant(
        "answer-from-a-sidechain",
        "the answer's nonce: a sidechain's text is never the final",
        RECEIPTS,
        '    if entry.get("type") != "assistant" or entry.get("isSidechain"):\n',
        '    if entry.get("type") != "assistant":\n',
        (
            "tests/door/test_final_answer.py"
            "::test_a_sidechain_text_after_the_main_chain_final_is_not_the_answer",
        ),
    ),
    Mutant(
        "held-notice-ignored-by-the-verdict",
        "the held-notice rule: a seen held notice outranks the prediction",
        "coop_engine/policy.py",
        "    if held:\n        return _held_verdict(policy, held, sent_at, now)\n",
        "    if False:\n        return _held_verdict(policy, held, sent_at, now)\n",
        (
            "tests/door/test_policy.py"
            "::test_a_seen_explicit_or_unreadable_hold_never_expires_while_watched",
        ),
    ),
    Mutant(
        "held-explicit-hold-expires",
        "the held-notice rule: an explicit hold seen never expires while watched",
        "coop_engine/policy.py",
        '    if held.get("cause") != "parity":\n        return None\n',
        '    if held.get("cause") not in ("parity", "explicit"):\n        return None\n',
        (
            "tests/door/test_policy.py"
            "::test_a_seen_explicit_or_unreadable_hold_never_expires_while_watched",
        ),
    ),
    Mutant(
        "held-notice-never-recorded",
        "the held-notice rule: the receiver's held notice is recorded as evidence",
        CLAUDE,
        "            if notice and"
        ' receipts.preview_matches(notice.preview, row.payload["text"]):\n',
        "            if False:\n",
        (
            "tests/door/test_held_outranks.py"
            "::test_an_unpredicted_explicit_hold_stays_watched_then_its_release_is_received",
        ),
    ),
    Mutant(
        "held-notice-of-another-envelope",
        "the held-notice rule: a notice counts for the envelope its preview shows",
        CLAUDE,
        "            if notice and"
        ' receipts.preview_matches(notice.preview, row.payload["text"]):\n',
        "            if notice:\n",
        (
            "tests/door/test_held_notice_is_the_envelopes_own.py"
            "::test_a_held_notice_previewing_another_message_is_not_this_envelopes",
        ),
    ),
    Mutant(
        "held-notice-overruled-by-the-engine",
        "the held-notice rule: expire refuses silence or prediction for a seen hold",
        DELIVERY,
        "            if held is not None and not (\n",
        "            if False and not (\n",
        (f"{RULES}::test_a_seen_held_notice_is_never_proven_lost_by_silence_or_prediction",),
        select="sqlite",
    ),
    Mutant(
        "held-cause-misread",
        "the held-notice rule: the cause is read from the notice's own words",
        RECEIPTS,
        '    ("parity", "did not attest its permission mode"),\n',
        '    ("explicit", "did not attest its permission mode"),\n',
        ("tests/door/test_policy.py::test_the_hold_cause_is_read_from_the_notices_own_words",),
    ),
    Mutant(
        "a-sends-readings-one-round-trip-each",
        "a send's readings before the intent are reads, asked of the Mac in one round trip",
        "coop_engine/loop/surveyed.py",
        "        return self.host.read_together(requests)\n",
        "        return super().read_together(requests)\n",
        (
            "tests/door/test_twice_read.py"
            "::test_a_send_asks_its_two_readings_policy_and_position_in_one_round_trip",
        ),
    ),
    Mutant(
        "first-sends-readings-not-with-the-survey",
        "a pass's first send's readings ride with its survey: two round trips to the frame",
        "coop_engine/loop/coordinator.py",
        "                ahead=self._first_send(name, now),\n",
        "                ahead=[],\n",
        (
            "tests/door/test_twice_read.py"
            "::test_a_send_to_a_mac_behind_a_helper_costs_two_round_trips_up_to_its_frame",
        ),
    ),
    Mutant(
        "readings-with-the-survey-outlive-another-request",
        "a send's readings are fresh: those asked with the survey are dropped once anything"
        " else is asked of the Mac",
        "coop_engine/loop/surveyed.py",
        "        self._ahead = []"
        "  # anything else asked of the Mac: what rode with the survey is old\n",
        "",
        (
            "tests/door/test_twice_read.py"
            "::test_readings_asked_with_the_survey_answer_only_the_asking_that_follows_it",
        ),
    ),
)
