"""The CLI take and its adoption (seed 003): adoption's conditions, its constants and
search order, the generation bump with its carried envelopes, and how a CLI call finds
the chat it was typed in (the 16-ancestor walk, PIPPA_COOP_SESSION)."""

from __future__ import annotations

from ..mutant import Mutant

TAKES = "coop_engine/takes.py"
PASS = "coop_engine/loop/adoption.py"
IDENTITY = "hosts/mac/identity.py"
RULES = "tests/engine/test_rules_adoption.py"
FLOWS = "tests/coordinator/test_takes_and_adoption.py"
CANDIDATES = "tests/engine/test_adoption_candidates.py"
IDENTITY_RULES = "tests/engine/test_identity_rules.py"  # the other helper's, on its way

MUTANTS = (
    Mutant(
        "adoption-despite-another-enrollment",
        "adoption's conditions: refused when another enrollment names the chat on that host",
        TAKES,
        "        if clash is not None:\n",
        "        if False:\n",
        (f"{RULES}::test_adoption_is_refused_when_another_enrollment_names_the_chat_on_that_host",),
        select="sqlite",
    ),
    Mutant(
        "adoption-of-a-managed-chat-considered",
        "adoption's conditions: only observed compatibility rows are CLI takers",
        PASS,
        '            (Session.mode == "observed")\n'
        '            & (Session.surface == "compatibility")\n',
        '            (Session.surface == "compatibility") | (Session.mode == "managed")\n',
        (f"{CANDIDATES}::test_a_managed_chat_with_an_active_binding_is_not_a_candidate",),
        select="sqlite",
    ),
    Mutant(
        "adoption-of-a-released-take-considered",
        "adoption's conditions: a CLI taker has an active binding",
        PASS,
        '        (Binding.state == "active") & (Binding.created_at >= now - TAKE_WINDOW_SECONDS)\n',
        "        Binding.created_at >= now - TAKE_WINDOW_SECONDS\n",
        (f"{CANDIDATES}::test_a_taker_whose_work_was_reported_is_no_longer_a_candidate",),
        select="sqlite",
    ),
    Mutant(
        "adoption-take-window-widened",
        "adoption's constants: a binding younger than 48 hours",
        PASS,
        "TAKE_WINDOW_SECONDS = 48 * 3600\n",
        "TAKE_WINDOW_SECONDS = 72 * 3600\n",
        ("tests/engine/test_take_window.py",),
    ),
    Mutant(
        "adoption-five-per-pass-exceeded",
        "adoption's constants: at most five candidates per pass",
        PASS,
        "PER_PASS = 5\n",
        "PER_PASS = 6\n",
        (f"{FLOWS}::test_at_most_five_candidates_per_pass",),
    ),
    Mutant(
        "adoption-retried-within-ten-minutes",
        "adoption's constants: each taker tried at most once every ten minutes",
        TAKES,
        "ADOPTION_RETRY_SECONDS = 10 * 60\n",
        "ADOPTION_RETRY_SECONDS = 5 * 60\n",
        (f"{FLOWS}::test_not_found_is_tried_again_ten_minutes_later",),
    ),
    Mutant(
        "adoption-refusal-held-a-day",
        "adoption's constants: a refused adoption is not retried for 48 hours",
        TAKES,
        "REFUSED_ADOPTION_HOLD_SECONDS = 48 * 3600\n",
        "REFUSED_ADOPTION_HOLD_SECONDS = 24 * 3600\n",
        (f"{FLOWS}::test_refused_adoption_is_not_retried_for_48_hours",),
    ),
    Mutant(
        "adoption-refusal-not-held",
        "adoption's conditions: a refused taker waits out its refusal",
        PASS,
        "            & (Session.refused_until.is_null() | (Session.refused_until <= now))\n",
        "",
        (f"{FLOWS}::test_refused_adoption_is_not_retried_for_48_hours",),
    ),
    Mutant(
        "obligation-managed-due-in-3-hours",
        "the constants: a managed accept's outcome obligation is due in 2 hours",
        "coop_engine/dispatching.py",
        "MANAGED_OUTCOME_DUE = 2 * 3600\n",
        "MANAGED_OUTCOME_DUE = 3 * 3600\n",
        (
            "tests/engine/test_rules_takes.py::test_obligation_becomes_overdue_exactly_at_its_due_time_not_before",
        ),
        select="sqlite",
    ),
    Mutant(
        "obligation-legacy-due-in-2-hours",
        "the constants: a legacy CLI take's obligation is due in 3 hours",
        "coop_engine/dispatching.py",
        "LEGACY_OUTCOME_DUE = 3 * 3600\n",
        "LEGACY_OUTCOME_DUE = 2 * 3600\n",
        (
            "tests/engine/test_rules_takes.py::test_a_legacy_obligation_is_due_three_hours_after_the_take",
        ),
        select="sqlite",
    ),
    Mutant(
        "adoption-search-office-first",
        "adoption's search order: the declared host, then the office",
        PASS,
        "        first = [name for name in (declared, self.office) if name in self.hosts]\n",
        "        first = [name for name in (self.office, declared) if name in self.hosts]\n",
        (f"{FLOWS}::test_adoption_searches_the_office_after_the_declared_mac",),
    ),
    Mutant(
        "adoption-search-unreachable-macs-first",
        "adoption's search order: then every other Mac, reachable ones first",
        PASS,
        "        others.sort(key=lambda name: (not self.reachable(name), name))\n",
        "        others.sort()\n",
        ("tests/coordinator/test_pass_refusals.py::test_adoption_asks_reachable_macs_first",),
    ),
    Mutant(
        "adoption-search-goes-on-after-a-match",
        "adoption's search order: the search stops at the first Mac that has the id",
        PASS,
        '                found = {**answer, "host": name}\n                break\n',
        '                found = {**answer, "host": name}\n',
        (f"{FLOWS}::test_adoption_finds_the_chat_on_its_declared_mac",),
    ),
    Mutant(
        "adoption-of-one-of-several",
        "adoption's conditions: several matches on that Mac is a conflict, never a guess",
        PASS,
        '        if found["matches"] > 1:\n',
        '        if found["matches"] > 2:\n',
        (f"{FLOWS}::test_two_live_entries_with_the_id_on_one_mac_is_a_conflict",),
    ),
    Mutant(
        "adoption-into-an-exited-chat",
        "adoption's conditions: a Claude take needs a live chat in that Mac's registry",
        "hosts/mac/local.py",
        "        live = [e for e in self._scan().entries"
        " if e.live and e.session_id == native_id]\n",
        "        live = [e for e in self._scan().entries if e.session_id == native_id]\n",
        (
            "tests/coordinator/test_adoption_needs_a_live_chat.py"
            "::test_the_lingering_entry_of_an_exited_chat_is_not_found",
        ),
    ),
    Mutant(
        "adoption-of-an-archived-thread",
        "adoption's conditions: a Codex take needs a saved thread, not an archived one",
        "hosts/mac/local.py",
        '            matches = 0 if found["archived"] else found["matches"]\n',
        '            matches = found["matches"]\n',
        (f"{FLOWS}::test_archived_codex_thread_is_not_found",),
    ),
    Mutant(
        "generation-not-bumped",
        "the generation bump: the same row, managed in place at generation + 1",
        TAKES,
        "            generation = session.generation + 1\n",
        "            generation = session.generation\n",
        (f"{RULES}::test_adoption_makes_the_same_row_managed_at_the_next_generation",),
        select="sqlite",
    ),
    Mutant(
        "generation-pending-envelopes-left-behind",
        "carried envelopes: pending envelopes move to the adopted generation (#326)",
        TAKES,
        '            .where((Outbox.session == session_id) & (Outbox.state == "pending"))\n',
        '            .where((Outbox.session == session_id) & (Outbox.state == "never"))\n',
        (
            f"{RULES}::test_adoption_carries_a_pending_envelope_across_and_it_can_then_be_sent",
            f"{FLOWS}::test_pending_reply_is_carried_across_the_generation_bump",
        ),
        select="sqlite or generation_bump",
    ),
    Mutant(
        "generation-bindings-left-behind",
        "carried envelopes: active bindings move to the adopted generation",
        TAKES,
        "        Binding.update(generation=generation).where(active).execute()\n",
        "",
        (f"{RULES}::test_adoption_moves_active_bindings_to_the_new_generation",),
        select="sqlite",
    ),
    Mutant(
        "adoption-releases-the-binding",
        "adoption: nothing is claimed or released; ownership was the chat's already",
        TAKES,
        "        Binding.update(generation=generation).where(active).execute()\n",
        '        Binding.update(generation=generation, state="released").where(active).execute()\n',
        (f"{RULES}::test_adoption_claims_and_releases_nothing",),
        select="sqlite",
    ),
    Mutant(
        "adoption-receipt-not-marked",
        "adoption: each dispatch receipt is marked adopted",
        TAKES,
        '        receipt = {**dispatch.receipt, "adopted": adopted}\n',
        "        receipt = dict(dispatch.receipt)\n",
        (f"{RULES}::test_adoption_marks_each_dispatch_receipt_adopted",),
        select="sqlite",
    ),
    Mutant(
        "adoption-work-for-one-dispatch-only",
        "adoption: a cli-take work envelope for each of the chat's CLI dispatches",
        TAKES,
        "            work = [self._adopted_work(now, session, d, adopted) for d in dispatch_ids]\n",
        "            work = [self._adopted_work(now,"
        " session, d, adopted) for d in dispatch_ids[:1]]\n",
        (f"{RULES}::test_adoption_enqueues_a_cli_take_work_envelope_per_dispatch",),
        select="sqlite",
    ),
    Mutant(
        "adoption-work-as-if-invited",
        "adoption: the work envelope is scoped source: cli-take",
        TAKES,
        '        payload = self._work_payload(dispatch.todo, "cli-take")\n',
        '        payload = self._work_payload(dispatch.todo, "invitation")\n',
        (f"{RULES}::test_adoption_enqueues_a_cli_take_work_envelope_per_dispatch",),
        select="sqlite",
    ),
    Mutant(
        "ancestor-walk-stops-at-15",
        "the 16-ancestor walk: this process and up to fifteen ancestors above it",
        IDENTITY,
        "MAX_ANCESTORS = 16\n",
        "MAX_ANCESTORS = 15\n",
        (IDENTITY_RULES,),
    ),
    Mutant(
        "ancestor-walk-goes-to-17",
        "the 16-ancestor walk: never more than sixteen steps",
        IDENTITY,
        "MAX_ANCESTORS = 16\n",
        "MAX_ANCESTORS = 17\n",
        (IDENTITY_RULES,),
    ),
    Mutant(
        "ancestor-walk-trusts-a-lingering-entry",
        "the ancestor walk: an entry counts only when its birth is the live process's",
        IDENTITY,
        "    if birth is None or not platform.birth_matches(data,"
        " birth) or entry.session_id is None:\n",
        "    if entry.session_id is None:\n",
        (
            "tests/hosts/test_birth_pin.py::test_a_lingering_entry_naming_the_callers_pid_is_not_its_chat",
        ),
    ),
    Mutant(
        "session-env-ignored",
        "PIPPA_COOP_SESSION: an exported value names the caller's chat",
        "coop_engine/cli/caller.py",
        "    if declared:\n        return declared\n",
        "    if False:\n        return declared\n",
        (f"{FLOWS}::test_cli_take_names_its_chat_from_the_environment",),
    ),
    Mutant(
        "session-env-loses-to-detection",
        "PIPPA_COOP_SESSION: an exported value always wins over detection",
        "coop_engine/cli/caller.py",
        "    if declared:\n        return declared\n"
        "    return detect_claude_session(default_config_dir(), current_platform())\n",
        "    detected = detect_claude_session(default_config_dir(), current_platform())\n"
        "    return detected or declared or None\n",
        (IDENTITY_RULES,),
    ),
)
