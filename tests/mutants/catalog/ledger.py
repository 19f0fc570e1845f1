"""The ledger's rules (seeds 001 and 003, DESIGN 4 and 5.7b): the five facts kept apart,
Send again's four conditions and nothing resending on its own, idempotency keys,
pacing, the generation fence and what crosses it."""

from __future__ import annotations

from ..mutant import Mutant

DELIVERY = "coop_engine/delivery.py"
FRAME = "coop_engine/frame.py"
PACING = "coop_engine/pacing.py"
RULES = "tests/engine/test_rules_delivery.py"
TAKES = "tests/engine/test_rules_takes.py"
LEDGER = "tests/engine/test_rules_ledger.py"
PACING_RULE = "tests/engine/test_pacing_rule.py"
REPLAY = f"{LEDGER}::test_a_replayed_command_key_returns_the_first_result_and_writes_nothing"

MUTANTS = (
    Mutant(
        "facts-transport-counts-as-received",
        "the five facts kept apart: a socket write (fact 2) is not a receipt (fact 3)",
        DELIVERY,
        "                    transport_at=now, transport=result, refusals=None, updated_at=now\n",
        "                    transport_at=now, transport=result, refusals=None, updated_at=now,"
        " received_at=now\n",
        (f"{RULES}::test_transport_ok_records_fact_2_and_the_send_stays_uncertain",),
        select="sqlite",
    ),
    Mutant(
        "facts-transport-delivers",
        "the five facts kept apart: a socket write leaves the send uncertain",
        DELIVERY,
        '                return {"outbox": outbox_id, "state": "uncertain"}\n'
        '            error = result.get("error")\n',
        '                Outbox.update(state="delivered").where(Outbox.id == outbox_id).execute()\n'
        '                return {"outbox": outbox_id, "state": "uncertain"}\n'
        '            error = result.get("error")\n',
        (f"{RULES}::test_transport_ok_records_fact_2_and_the_send_stays_uncertain",),
        select="sqlite",
    ),
    Mutant(
        "facts-accept-before-receipt",
        "the five facts kept apart: an acceptance (fact 4) needs the invitation's receipt",
        "coop_engine/invitations.py",
        '            if invitation.state != "delivered":\n'
        '                raise Conflict(f"Invitation'
        ' {outbox_id} is {invitation.state}: no receipt yet")\n'
        "            dispatch = self._invitation_dispatch(invitation)\n"
        "            if not secrets",
        '            if invitation.state not in ("delivered", "uncertain"):\n'
        '                raise Conflict(f"Invitation'
        ' {outbox_id} is {invitation.state}: no receipt yet")\n'
        "            dispatch = self._invitation_dispatch(invitation)\n"
        "            if not secrets",
        (f"{TAKES}::test_accept_of_an_invitation_not_yet_delivered_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "facts-read-model-received-from-transport",
        "the five facts kept apart: the read model shows fact 3 from the receipt alone",
        "coop_engine/queries/envelopes.py",
        '        "received": iso(row.received_at),\n',
        '        "received": iso(row.received_at or row.transport_at),\n',
        (
            "tests/engine/test_five_facts.py::test_each_fact_appears_with_its_own_evidence_and_no_other",
        ),
        select="sqlite",
    ),
    Mutant(
        "resend-of-an-uncertain-row",
        "resend's conditions: only an expired row (proven undelivered, not merely quiet)",
        DELIVERY,
        '            if old.state != "expired":\n',
        '            if old.state not in ("expired", "uncertain"):\n',
        (f"{RULES}::test_resend_of_an_uncertain_row_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "resend-of-an-invitation-no-longer-invited",
        "resend's conditions: an invitation whose dispatch is still invited",
        DELIVERY,
        '            if dispatch.state != "invited":\n',
        "            if False:\n",
        (f"{RULES}::test_resend_of_an_invitation_whose_dispatch_is_no_longer_invited_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "resend-of-work-without-a-binding",
        "resend's conditions: a work envelope whose dispatch still has an active binding",
        DELIVERY,
        "            if not active.exists():\n",
        "            if False:\n",
        (f"{RULES}::test_resend_of_a_work_envelope_whose_binding_was_released_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "resend-twice",
        "resend's conditions: once (the old row records resent_as)",
        DELIVERY,
        "                Outbox.update(resent_as=new_id, updated_at=now)\n",
        "                Outbox.update(updated_at=now)\n",
        (f"{RULES}::test_second_resend_answers_already_sent_again",),
        select="sqlite",
    ),
    Mutant(
        "resend-by-anyone",
        "resend's conditions: the decision is Dad's or the chief's",
        DELIVERY,
        "        if by not in DECIDERS:\n"
        '            raise NotAuthorized("Send again is decided by dad or chief")\n',
        "        if False:\n"
        '            raise NotAuthorized("Send again is decided by dad or chief")\n',
        (f"{RULES}::test_resend_is_refused_unless_decided_by_dad_or_chief",),
        select="sqlite",
    ),
    Mutant(
        "resend-repeats-the-text",
        "resend: the second attempt's text never equals the first's",
        DELIVERY,
        '            "text": prompts.another_attempt(attempt, old.id, reason, original),\n',
        '            "text": original,\n',
        (f"{RULES}::test_resent_text_differs_from_the_first_and_says_it_is_a_second_attempt",),
        select="sqlite",
    ),
    Mutant(
        "resend-by-itself",
        "nothing resends on its own: no adapter or loop creates a second attempt",
        "coop_engine/loop/doors/claude.py",
        "        self.engine.expire(row.id, evidence)\n",
        "        self.engine.expire(row.id, evidence)\n"
        '        self.engine.resend(row.id, "chief")\n',
        (
            "tests/door/test_nothing_resends_on_its_own.py"
            "::test_an_expired_envelope_gets_no_second_attempt_from_later_passes",
        ),
    ),
    Mutant(
        "key-replay-with-other-arguments",
        "idempotency keys: the same key with other arguments is an error",
        FRAME,
        "        if prior.name != name or prior.args_hash != digest:\n",
        "        if prior.name != name:\n",
        (f"{LEDGER}::test_the_same_key_with_other_arguments_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "key-accept-fresh-each-time",
        "idempotency keys: accept:<outbox id>, so one acceptance applied twice is one",
        "coop_engine/invitations.py",
        '        return self._command("accept", f"accept:{outbox_id}", args, run)\n',
        '        return self._command("accept", fresh_key(f"accept:{outbox_id}"), args, run)\n',
        (REPLAY,),
        select="sqlite and accept",
    ),
    Mutant(
        "key-expire-fresh-each-time",
        "idempotency keys: expire:<outbox id>",
        DELIVERY,
        '        return self._command("expire", f"expire:{outbox_id}", args, run)\n',
        '        return self._command("expire", fresh_key(f"expire:{outbox_id}"), args, run)\n',
        (REPLAY,),
        select="sqlite and expire",
    ),
    Mutant(
        "key-receipt-fresh-each-time",
        "idempotency keys: receipt:<outbox id>",
        DELIVERY,
        '            f"receipt:{outbox_id}",\n',
        '            fresh_key(f"receipt:{outbox_id}"),\n',
        (REPLAY,),
        select="sqlite and record_receipt",
    ),
    Mutant(
        "pacing-burst-of-31",
        "pacing: a bucket of 30 frames",
        PACING,
        "BURST = 30\n",
        "BURST = 31\n",
        (f"{PACING_RULE}::test_thirty_go_at_once_and_the_thirty_first_waits_for_the_next_token",),
    ),
    Mutant(
        "pacing-refill-at-the-receivers-own-rate",
        "pacing: Coop's clock for the limits runs 5% slow (the receiver times arrivals later)",
        PACING,
        "SLOW = 0.95  #",
        "SLOW = 1.0  #",
        (f"{PACING_RULE}::test_the_margin_keeps_every_frame_inside_the_receivers_own_bucket",),
    ),
    Mutant(
        "pacing-fifty-first-outstanding",
        "pacing: at most 50 undelivered peer messages queued",
        PACING,
        "    if outstanding >= MAX_OUTSTANDING:\n",
        "    if outstanding > MAX_OUTSTANDING:\n",
        (f"{PACING_RULE}::test_fifty_outstanding_hold_the_next_until_one_is_received",),
    ),
    Mutant(
        "pacing-same-text-unchecked",
        "pacing: no body identical to the last admitted within 30 s",
        PACING,
        '        if payload.get("text") == text and _second(float(at) + SAME_TEXT_SECONDS) > now\n',
        "        if False\n",
        (f"{PACING_RULE}::test_the_same_text_waits_thirty_seconds_and_a_margin",),
    ),
    Mutant(
        "pacing-counts-refused-attempts",
        "pacing: an attempt the host refused before connecting is no frame",
        PACING,
        "        .where(Outbox.session.in_(chat) & (HostQueue.state != NOT_SENT))\n",
        "        .where(Outbox.session.in_(chat))\n",
        (f"{PACING_RULE}::test_an_attempt_the_host_refused_is_no_frame",),
    ),
    Mutant(
        "pacing-not-asked-by-the-door",
        "pacing: the Claude door sends only what pacing allows",
        "coop_engine/loop/doors/claude.py",
        "        paced = pacing.pace(row, self.engine.clock())\n",
        "        paced = None\n",
        ("tests/door/test_pacing.py::test_an_envelope_paced_on_one_pass_is_sent_by_a_later_one",),
    ),
    Mutant(
        "generation-older-envelope-sent",
        "the generation fence: an envelope of an older generation is never sent",
        DELIVERY,
        "                    & (Outbox.generation == current)\n",
        "",
        (f"{RULES}::test_mark_uncertain_refuses_an_envelope_older_than_its_sessions_generation",),
        select="sqlite",
    ),
    Mutant(
        "generation-stale-cancels-the-current",
        "the generation fence: cancel_stale cancels only an older generation's pending rows",
        DELIVERY,
        '                    (Outbox.state == "pending") & (Outbox.generation < current)\n',
        '                    (Outbox.state == "pending") & (Outbox.generation <= current)\n',
        (f"{RULES}::test_cancel_stale_cancels_only_pending_envelopes_of_an_older_generation",),
        select="sqlite",
    ),
    Mutant(
        "generation-stale-left-pending-at-start",
        "the generation fence: a pass cancels at start what an older generation left pending",
        "coop_engine/loop/coordinator.py",
        "        now = self.engine.clock()\n        self.cancel_stale()\n",
        "        now = self.engine.clock()\n",
        (
            "tests/coordinator/test_stale_envelopes.py"
            "::test_a_pass_cancels_a_pending_envelope_an_older_generation_left",
        ),
    ),
)
