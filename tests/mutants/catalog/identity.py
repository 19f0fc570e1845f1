"""Wave 3's rules at the boundary where receivers meet the person: a chat is its process,
not its conversation; nothing a chat, a Mac or a paste wrote reaches a terminal raw or a
frame unchecked; a hold whose expiry Coop cannot know never expires for silence."""

from __future__ import annotations

from ..mutant import Mutant

IDENTITY = "coop_engine/identity.py"
DRIFT = "tests/coordinator/test_drift.py"
PROCESS = "tests/engine/test_chat_is_its_process.py"
DOOR_TEXT = "tests/engine/test_frame_text.py"
BOUNDARY = "tests/properties/test_text_boundary.py"
CHANNEL = "tests/ssh/test_channel.py"

MUTANTS = (
    Mutant(
        "a-chat-is-its-conversation",
        "a chat is its process: the same pid and start in another conversation is the chat",
        IDENTITY,
        "        same = [(e, p) for e, p in live if p.pid == pid and p.birth == birth]\n",
        "        same = [(e, p) for e, p in live if p.native_id == enrollment.native_id]\n",
        (
            f"{PROCESS}::test_the_same_process_in_another_conversation_is_the_same_chat_changed",
            f"{DRIFT}::test_a_chat_cleared_mid_delivery_is_one_chat_and_its_answer_is_read_in_the_new_file",
        ),
    ),
    Mutant(
        "a-reused-pid-is-the-chat",
        "a chat is its process: a pid reused by another process is not the chat",
        IDENTITY,
        "        same = [(e, p) for e, p in live if p.pid == pid and p.birth == birth]\n",
        "        same = [(e, p) for e, p in live if p.pid == pid]\n",
        (f"{PROCESS}::test_a_reused_pid_is_another_process",),
    ),
    Mutant(
        "a-drift-leaves-the-reading-in-the-old-file",
        "an envelope in flight is looked for in every transcript the chat wrote since",
        "coop_engine/engine.py",
        "            if reading == old:\n",
        "            if False:\n",
        (
            f"{PROCESS}::test_an_envelope_read_in_the_old_conversation_reads_the_new_one_from_its_start",
            f"{DRIFT}::test_a_chat_cleared_mid_delivery_is_one_chat_and_its_answer_is_read_in_the_new_file",
        ),
        select="sqlite or mid_delivery",
    ),
    Mutant(
        "the-door-lets-an-escape-into-a-frame",
        "what Coop writes into frames is checked at the door: no control characters",
        "coop_engine/frame_text.py",
        "    for found in STEERING.finditer(text):\n",
        "    for found in STEERING.finditer(''):\n",
        (DOOR_TEXT,),
        select="sqlite",
    ),
    Mutant(
        "the-door-lets-a-long-title-in",
        "a todo title is at most 200 characters",
        "coop_engine/frame_text.py",
        "    if len(text) > TITLE_MOST:\n",
        "    if len(text) > 10 * TITLE_MOST:\n",
        (f"{DOOR_TEXT}::test_a_title_that_no_frame_may_carry_is_refused_naming_why",),
        select="sqlite",
    ),
    Mutant(
        "the-renderer-passes-bidi-controls",
        "the one renderer shows bidi controls as visible escapes",
        "coop_engine/formats.py",
        "    return STEERING.sub(_escape, text)\n",
        "    return STEERING.sub(_escape, text) if text.isascii() else text\n",
        (f"{BOUNDARY}::test_the_renderer_leaves_no_character_that_steers_a_terminal",),
    ),
    Mutant(
        "a-mac-may-answer-any-shape",
        "a Mac's answers are checked at the boundary before anything reads them",
        "hosts/channel.py",
        '                return shapes.check(op, reply.get("result"))\n',
        '                return reply.get("result")\n',
        (f"{CHANNEL}::test_a_hostile_answer_is_one_host_error_and_the_helper_is_ended",),
    ),
    Mutant(
        "a-mac-may-answer-without-end",
        "a Mac's answer is bounded in size",
        "hosts/channel.py",
        "            if len(raw) > LONGEST_ANSWER:\n",
        "            if False:\n",
        (f"{CHANNEL}::test_a_hostile_answer_is_one_host_error_and_the_helper_is_ended",),
    ),
    Mutant(
        "a-torn-entry-calls-its-chat-exited",
        "a live chat is never exited by a torn file: its last good reading stands",
        "hosts/mac/local.py",
        "        scan = self._listing_scan()\n",
        "        scan = self._scan()\n",
        (
            "tests/coordinator/test_torn_registry.py::test_a_registry_file_torn_for_a_second_changes_no_chat_state_event_or_notice",
        ),
    ),
    Mutant(
        "a-refused-envelope-is-tried-every-pass",
        "refusals before connecting are bounded: each try in a row waits longer",
        "coop_engine/loop/coordinator.py",
        '                if step == "deliver" and backoff.waits(row, now):\n',
        "                if False:\n",
        (
            "tests/coordinator/test_refused_before_sending.py::test_a_chat_whose_inbox_refuses_is_tried_less_and_less_and_told_once",
        ),
    ),
    Mutant(
        "a-try-due-during-the-pass-is-forgotten",
        "refusals before connecting are bounded, and retried: a try that fell due while the"
        " pass ran is due at once, not at the longest wait",
        "coop_engine/loop/macs.py",
        "        passed_at = self._passed_at if self._passed_at is not None else clock()\n",
        "        passed_at = clock()\n",
        (
            "tests/coordinator/test_refused_before_sending.py::test_serve_on_the_real_clock_waits_for_the_next_try_without_a_pass",
        ),
    ),
    Mutant(
        "a-refused-envelope-is-told-every-try",
        "refusals before connecting are told once, not at every try",
        "coop_engine/delivery.py",
        "                if not before.refusals:\n",
        "                if True:\n",
        (
            "tests/coordinator/test_refused_before_sending.py::test_a_chat_whose_inbox_refuses_is_tried_less_and_less_and_told_once",
        ),
    ),
    Mutant(
        "a-lost-codex-answer-is-found-at-every-pass",
        "Codex door hygiene: a send whose answer was lost is found once, under its own key",
        "coop_engine/loop/doors/codex.py",
        '            row.id, attempt, found, key=f"transport-found:{row.id}:{attempt}"\n',
        "            row.id, attempt, found\n",
        (
            "tests/coordinator/test_codex_door.py::test_a_lost_answer_is_resolved_from_codexs_queue_once_not_at_every_pass",
        ),
    ),
    Mutant(
        "the-verdicts-re-read-ignores-held-notices",
        "re-reads find what they look for: the held notice as well as the entry",
        "coop_engine/loop/doors/claude.py",
        "            needles = [row.id, receipts.HELD_MARK]\n",
        "            needles = [row.id]\n",
        (
            "tests/door/test_held_outranks.py::test_the_verdicts_fresh_read_finds_a_held_notice_the_survey_missed",
        ),
    ),
    Mutant(
        "online-first-only-in-serve",
        "online first, everywhere: a pass on its own asks the Macs that answer first",
        "coop_engine/loop/adoption.py",
        "            self.reachable = online.__contains__\n",
        "            pass\n",
        (
            "tests/coordinator/test_takes_and_adoption.py::test_a_pass_run_on_its_own_asks_the_macs_that_answer_first",
        ),
    ),
    Mutant(
        "the-door-lets-a-big-body-in",
        "a todo body is at most 64 KiB",
        "coop_engine/frame_text.py",
        "    if len(text) > BODY_MOST:\n",
        "    if len(text) > 2 * BODY_MOST:\n",
        (f"{DOOR_TEXT}::test_a_body_may_hold_tabs_and_lines_but_no_escape_and_at_most_64_kib",),
        select="sqlite",
    ),
    Mutant(
        "an-ambiguous-reference-picks-one",
        "ambiguity is refused, listing the candidates: never a guess",
        "coop_engine/naming.py",
        "    if len(found) == 1:\n",
        "    if len(found) >= 1:\n",
        ("tests/engine/test_naming.py::test_a_prefix_two_chats_share_is_refused_naming_both",),
    ),
    Mutant(
        "a-chat-starting-in-its-pane-is-exited",
        "a chat starting in its pane (no status yet) is waited for, never called exited",
        "coop_engine/identity.py",
        '    return bool(pane) and any(e.get("tmux") == pane and "status" not in e for e in entries)\n',  # noqa: E501
        "    return False\n",
        (f"{PROCESS}::test_a_chat_starting_in_the_pane_under_a_fresh_id_is_waited_for",),
    ),
    Mutant(
        "a-closed-pipe-is-a-traceback",
        "every CLI command writing into a closed pipe stops quietly",
        "coop_engine/cli/main.py",
        "    except BrokenPipeError:\n        return _reader_gone()\n",
        "    except ZeroDivisionError:\n        return _reader_gone()\n",
        ("tests/engine/test_closed_pipe.py",),
        select="sqlite and (chats or outbox)",
    ),
    Mutant(
        "an-unknown-expiry-is-five-minutes",
        "unknown never expires: a hold whose expiry Coop cannot know stays held",
        "coop_engine/policy.py",
        "def _unknown(why: str, dialog_expiry: str = UNKNOWN_EXPIRY) -> dict[str, Any]:\n",
        "def _unknown(why: str, dialog_expiry: str = DEFAULT_DIALOG_EXPIRY) -> dict[str, Any]:\n",
        (
            "tests/door/test_policy.py::test_a_parity_hold_under_an_expiry_coop_cannot_know_never_expires",
            "tests/door/test_held_outranks.py::test_a_parity_hold_seen_under_an_unknown_expiry_stays_held_until_the_receiver_says",
        ),
    ),
    Mutant(
        "a-chats-process-read-from-an-older-survey",
        "a chat is its process as the last survey read it: each survey reads the processes"
        " afresh, never those of the one before",
        "coop_engine/loop/surveyed.py",
        "        self._processes = None\n        self.cursor",
        "        self.cursor",
        (
            "tests/coordinator/test_drift.py"
            "::test_an_envelope_answered_in_the_old_file_before_the_clear_keeps_its_answer",
        ),
    ),
)
