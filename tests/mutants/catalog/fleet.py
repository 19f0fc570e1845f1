"""Who decides, who coordinates, how a Mac is reached, the Codex door, and what reaches
a terminal (seeds 001 and 003, DESIGN 5.10, 6, 9): the authority of `--by`, the
one-coordinator claim, RejectPolicy with both host-key branches, the Codex door's client
id and withdraw rule, markup and escape handling; the ledger's news to the Macs' workers."""

from __future__ import annotations

from ..mutant import Mutant

CALLER = "coop_engine/cli/caller.py"
CLAIM = "coop_engine/loop/claim.py"
SSH = "hosts/sshconnect.py"
SSH_HOST = "hosts/ssh.py"
WITHDRAWAL = "coop_engine/loop/withdrawal.py"
DELIVERY = "coop_engine/delivery.py"
AUTHORITY = "tests/coordinator/test_authority.py"
CLAIMS = "tests/coordinator/test_claim.py"
CONNECT = "tests/ssh/test_ssh_connect.py"
NEWS = "tests/coordinator/test_ledger_news.py"
CODEX_DOOR = "tests/coordinator/test_codex_door.py"
CODEX_RULES = "tests/engine/test_rules_codex.py"
FAULT = (
    "tests/faults/test_faults.py"
    "::test_a_failure_at_this_point_leaves_old_or_new_state_and_the_next_pass_recovers"
)

MUTANTS = (
    Mutant(
        "by-dad-inside-a-chat",
        "the authority of --by: dad is whoever types outside any chat",
        CALLER,
        '    if by == "dad" and caller is not None:\n',
        "    if False:\n",
        (f"{AUTHORITY}::test_worker_chat_typing_by_dad_is_refused_and_recorded",),
    ),
    Mutant(
        "by-chief-from-any-chat",
        "the authority of --by: chief only from the chief's own chat",
        CALLER,
        "        elif caller != chief:\n",
        "        elif False:\n",
        (f"{AUTHORITY}::test_worker_chat_typing_by_chief_is_refused",),
    ),
    Mutant(
        "by-chief-without-a-chief",
        "the authority of --by: no chief enrolled, no chief's decision",
        CALLER,
        "        if chief is None:\n",
        "        if False:\n",
        (
            "tests/coordinator/test_authority_without_a_chief.py"
            "::test_send_again_by_chief_with_no_chief_enrolled_is_refused_and_recorded",
        ),
    ),
    Mutant(
        "by-refusal-not-recorded",
        "the authority of --by: a refused decision is kept as history",
        CALLER,
        "        engine.record_refused_decision(command, by, caller, reason)\n"
        "        raise NotAuthorized(reason)\n\n\ndef check_worker",
        "        raise NotAuthorized(reason)\n\n\ndef check_worker",
        (f"{AUTHORITY}::test_worker_chat_typing_by_dad_is_refused_and_recorded",),
    ),
    Mutant(
        "by-worker-from-any-chat",
        "the authority of --by: a worker's report comes from the chat bound to the todo",
        CALLER,
        "    if bound and caller not in bound:\n",
        "    if False:\n",
        (f"{AUTHORITY}::test_a_worker_report_comes_from_the_bound_chat",),
    ),
    Mutant(
        "by-anyone-withdraws",
        "the authority of --by: withdrawing is decided by dad or chief",
        DELIVERY,
        "        if by not in DECIDERS:\n"
        '            raise NotAuthorized("Withdrawing is decided by dad or chief")\n\n'
        "        def run(now: float) -> dict[str, Any]:\n"
        "            changed = (\n",
        "        def run(now: float) -> dict[str, Any]:\n            changed = (\n",
        (
            "tests/engine/test_withdraw_is_a_decision.py"
            "::test_only_dad_or_the_chief_withdraws_a_pending_envelope",
        ),
        select="sqlite",
    ),
    Mutant(
        "claim-shared-by-two",
        "the one-coordinator claim: at most one process holds it",
        CLAIM,
        "            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "        except BlockingIOError:\n"
        "            os.close(fd)\n"
        "            return False\n",
        "            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)\n"
        "        except BlockingIOError:\n"
        "            os.close(fd)\n"
        "            return False\n",
        (
            "tests/coordinator/test_one_claim.py::test_a_held_claim_refuses_a_second_taker_until_it_is_let_go",  # noqa: E501
            "tests/coordinator/test_one_claim.py::test_a_held_flock_refuses_a_taker_even_once_the_lease_lapsed",  # noqa: E501
        ),
    ),
    Mutant(
        "claim-taken-though-held",
        "the one-coordinator claim: a claimed ledger is refused, naming its holder",
        CLAIM,
        "        if not locked and self.lock_required:\n",
        "        if False:\n",
        (
            "tests/coordinator/test_one_claim.py::test_a_held_claim_refuses_a_second_taker_until_it_is_let_go",  # noqa: E501
            "tests/coordinator/test_one_claim.py::test_a_held_flock_refuses_a_taker_even_once_the_lease_lapsed",  # noqa: E501
        ),
    ),
    Mutant(
        "claim-never-taken",
        "the one-coordinator claim: serve takes it before its first pass",
        "coop_engine/loop/serve.py",
        "        self.claim.take(self.fleet.office, by)\n",
        "",
        (
            f"{CLAIMS}::test_a_second_serve_on_a_claimed_ledger_exits_1_with_one_line_naming_the_first",  # noqa: E501
        ),
        select="sqlite",
    ),
    Mutant(
        "host-key-unknown-accepted",
        "RejectPolicy: an unknown host key is refused",
        SSH,
        "    ours = known.lookup(dest.key_name)\n",
        "    ours = known.lookup(dest.key_name) or {kind: offered}\n",
        (
            f"{CONNECT}::test_unknown_host_key_is_refused_with_a_message_that_says_so_and_names_the_mac",  # noqa: E501
        ),
    ),
    Mutant(
        "host-key-changed-accepted",
        "RejectPolicy: a changed host key is refused",
        SSH,
        "    if expected != offered:\n",
        "    if False:\n",
        (f"{CONNECT}::test_changed_host_key_is_refused_and_names_both_fingerprints",),
    ),
    Mutant(
        "host-key-of-an-unknown-type-accepted",
        "RejectPolicy: a key of a type known_hosts does not hold for the Mac is refused",
        SSH,
        "    expected = ours.get(kind)\n",
        "    expected = ours.get(kind, offered)\n",
        ("tests/ssh/test_host_key_types.py",),
    ),
    Mutant(
        "codex-client-id-not-the-outbox-id",
        "the Codex door's client id: clientUserMessageId is the outbox id",
        "hosts/mac/codex_door.py",
        '        "clientUserMessageId": client_id,\n',
        '        "clientUserMessageId": client_id.upper(),\n',
        (
            f"{CODEX_DOOR}"
            "::test_a_lost_answer_to_the_add_is_found_by_the_client_id_and_not_sent_twice",
        ),
    ),
    Mutant(
        "codex-receipt-of-another-client-id",
        "the Codex door's client id: the receipt is the UserMessage carrying exactly it",
        "coop_engine/loop/doors/rollouts.py",
        '        if item.get("client_id") == outbox_id:\n',
        '        if str(item.get("client_id")).lower() == outbox_id.lower():\n',
        (
            "tests/codex/test_codex_receipts.py::test_other_client_ids_and_other_items_are_not_receipts",  # noqa: E501
        ),
    ),
    Mutant(
        "codex-unsent-inferred-from-a-lost-answer",
        "never infer unsent: a queue add whose answer was lost may have been queued",
        "hosts/mac/codex_door.py",
        "        # The request left: Codex may have queued it. Never infer unsent.\n"
        '        return {"ok": False, "written": True, "stage": "answer", "error": str(error)}\n',
        '        return {"ok": False, "written": False, "stage": "answer", "error": str(error)}\n',
        (f"{FAULT}[codex.add_answer_died-killed]",),
    ),
    Mutant(
        "codex-malformed-thread-id-sent",
        "the Codex door: only a UUID-shaped thread id ever reaches Codex",
        "hosts/mac/local.py",
        "        if not is_thread_id(thread_id):\n",
        "        if False:\n",
        (f"{CODEX_DOOR}::test_only_a_uuid_shaped_thread_id_ever_reaches_codex",),
    ),
    Mutant(
        "codex-withdrawn-without-deleted-true",
        "the withdraw rule: only Codex's deleted: true proves it will never run",
        WITHDRAWAL,
        '    if not answer["deleted"]:\n',
        "    if False:\n",
        (f"{CODEX_DOOR}::test_what_codex_already_took_from_its_queue_cannot_be_withdrawn",),
    ),
    Mutant(
        "codex-withdrawal-asked-after-the-delete",
        "the withdraw rule: the ask is recorded before Codex is asked",
        WITHDRAWAL,
        "    engine.ask_withdrawal(row.id, by, queued_id)\n"
        "    answer = host.codex_queue_delete(thread_id, queued_id)\n",
        "    answer = host.codex_queue_delete(thread_id, queued_id)\n"
        "    engine.ask_withdrawal(row.id, by, queued_id)\n",
        (f"{CODEX_DOOR}::test_the_intent_is_durable_before_the_add_and_the_ask_before_the_delete",),
    ),
    Mutant(
        "codex-withdrawal-of-a-received-envelope",
        "the withdraw rule: only a Codex envelope sent and not yet received",
        DELIVERY,
        '            if row.state != "uncertain" or row.session.vendor != "codex":\n',
        '            if row.session.vendor != "codex":\n',
        (
            f"{CODEX_RULES}::test_withdrawing_from_the_queue_needs_a_codex_envelope_not_yet_received",  # noqa: E501
        ),
        select="sqlite",
    ),
    Mutant(
        "codex-expired-by-a-claude-reason",
        "the withdraw rule: withdrawn-from-queue is the Codex door's one proof of loss",
        DELIVERY,
        'REASONS_BY_VENDOR = {"claude": EXPIRY_REASONS, "codex": (WITHDRAWN_FROM_QUEUE,)}\n',
        'REASONS_BY_VENDOR = {"claude": EXPIRY_REASONS, "codex": (WITHDRAWN_FROM_QUEUE,'
        " *EXPIRY_REASONS)}\n",
        (f"{CODEX_RULES}::test_no_claude_reason_expires_a_codex_envelope",),
        select="sqlite",
    ),
    Mutant(
        "withdraw-a-sent-frame",
        "the withdraw rule: a sent frame cannot be taken back, only a pending one",
        DELIVERY,
        '                Outbox.update(state="cancelled", updated_at=now)\n'
        '                .where((Outbox.id == outbox_id) & (Outbox.state == "pending"))\n'
        "                .execute()\n"
        "            )\n"
        "            row = self._outbox(outbox_id)\n",
        '                Outbox.update(state="cancelled", updated_at=now)\n'
        "                .where((Outbox.id == outbox_id)"
        ' & Outbox.state.in_(["pending", "uncertain"]))\n'
        "                .execute()\n"
        "            )\n"
        "            row = self._outbox(outbox_id)\n",
        ("tests/door/test_cli_decisions.py::test_a_sent_claude_frame_cannot_be_withdrawn",),
    ),
    Mutant(
        "escape-sequence-sent",
        "markup and escape handling: an escape character is printed as \\x1b, never sent",
        "coop_engine/formats.py",
        'STEERING = re.compile(r"[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]")\n',  # noqa: E501
        'STEERING = re.compile(r"[\\x00-\\x1a\\x1c-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]")\n',  # noqa: E501
        ("tests/engine/test_untrusted_text.py::test_an_escape_sequence_is_printed_never_sent",),
    ),
    Mutant(
        "escape-c1-control-sent",
        "markup and escape handling: C1 controls (a lone CSI) are printed, never sent",
        "coop_engine/formats.py",
        'STEERING = re.compile(r"[\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]")\n',  # noqa: E501
        'STEERING = re.compile(r"[\\x00-\\x1f\\x7f\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069]")\n',  # noqa: E501
        ("tests/engine/test_untrusted_text.py::test_an_escape_sequence_is_printed_never_sent",),
    ),
    Mutant(
        "escape-line-break-in-one-line",
        "markup and escape handling: one line of a terminal holds no line break",
        "coop_engine/formats.py",
        '_BREAKS = str.maketrans({"\\n": " ", "\\r": " ", "\\t": " "})\n',
        '_BREAKS = str.maketrans({"\\t": " "})\n',
        (
            "tests/engine/test_untrusted_text.py"
            "::test_line_breaks_and_tabs_stay_in_printable_and_go_in_one_line",
        ),
    ),
    Mutant(
        "long-poll-bug-leaves-the-mac-unwatched",
        "the one coordinator: a bug in a Mac's long-poll stops serve, never a silent thread",
        "coop_engine/loop/macs.py",
        "        try:\n            self._watch()\n        except Exception as error:\n"
        "            self.crashed(error)\n",
        "        self._watch()\n",
        (
            "tests/coordinator/test_long_poll_bug.py"
            "::test_a_bug_in_the_long_poll_stops_the_coordinator_with_it",
        ),
    ),
    Mutant(
        "helper-start-waits-forever",
        "a Mac that hangs costs its own timeout: starting a helper gives up at the timeout",
        SSH_HOST,
        "            timer.start()\n",
        "",
        (
            "tests/ssh/test_helper_start_hang.py"
            "::test_a_mac_hung_between_opening_a_session_and_its_exec_costs_the_timeout",
        ),
    ),
    Mutant(
        "fleet-mac-stop-ends-at-the-first-error",
        "no process outlives its test: a test Mac stops its sshd even after a close raised",
        "tests/ssh/fleet_macs.py",
        "        with ExitStack() as stack:  # its callbacks run last in, first out\n"
        "            stack.callback(self.sshd.stop)\n"
        "            stack.callback(self.chats.stop_all)\n"
        "            for host in self.hosts:\n"
        "                stack.callback(host.close)\n",
        "        for host in self.hosts:\n"
        "            host.close()\n"
        "        self.chats.stop_all()\n"
        "        self.sshd.stop()\n",
        ("tests/ssh/test_fleet_macs.py",),
    ),
    Mutant(
        "torn-registry-entry-read-as-gone",
        "a test reads what another process writes once it is whole: a torn entry is read again",
        "tests/waiting.py",
        "        except ValueError:\n            return None\n",
        "        except ValueError:\n            return (None,)\n",
        ("tests/test_waiting.py",),
    ),
    Mutant(
        "ssh-send-on-a-shut-connection-escapes",
        "a Mac whose connection is shut mid-request is unreachable, never a crash of Coop",
        SSH_HOST,
        "    except EOFError:\n        # The connection's socket is shut while",
        "    except ZeroDivisionError:\n        # The connection's socket is shut while",
        (
            f"{CONNECT}"
            "::test_a_connection_shut_under_a_running_helper_is_the_mac_unreachable_not_a_crash",
        ),
    ),
    Mutant(
        "ssh-close-on-a-shut-connection-escapes",
        "closing a helper's channel on a shut connection is the Mac unreachable, never a crash",
        SSH_HOST,
        "            with channel_errors():\n                self.channel.close()",
        "            if True:\n                self.channel.close()",
        (
            f"{CONNECT}"
            "::test_a_connection_shut_under_a_running_helper_is_the_mac_unreachable_not_a_crash",
        ),
    ),
    Mutant(
        "ledger-news-on-any-event",
        "the ledger's news is a commit a reader can see: the workers are told on it, not on"
        " a file event that came before it",
        "coop_engine/loop/serve.py",
        "        if changed:\n",
        "        if event:\n",
        (f"{NEWS}::test_a_commit_visible_only_after_its_event_still_reaches_the_worker",),
    ),
    Mutant(
        "ledger-news-an-event-is-a-change",
        "the ledger's news is a commit a reader can see: an event alone is not news",
        "coop_engine/loop/news.py",
        "        return changed\n",
        "        return event or changed\n",
        (f"{NEWS}::test_an_event_alone_is_not_news_and_a_commit_is_news_once",),
    ),
    Mutant(
        "ledger-news-looks-once",
        "the ledger's news is a commit a reader can see: after an event it is looked for"
        " again, for a commit not visible yet",
        "coop_engine/loop/news.py",
        "            self._looks = self._schedule(now)\n",
        "            self._looks = []\n",
        (f"{NEWS}::test_after_an_event_the_ledger_is_looked_at_again_until_it_settles",),
    ),
    Mutant(
        "a-macs-nested-answer-escapes",
        "a Mac's answers are untrusted: one nested without end makes that Mac unreachable"
        " with one reason, and the office serves the others",
        "hosts/channel.py",
        "            except (ValueError, RecursionError):\n                reply = None\n",
        "            except ValueError:\n                reply = None\n",
        (
            "tests/ssh/test_hostile_mac.py"
            "::test_a_mac_answering_garbage_is_one_unreachable_mac_and_the_others_are_served",
        ),
        select="nested",
    ),
    Mutant(
        "codex-index-read-whole",
        "what a Mac's files hold is read bounded: Codex's session index from its last 16 MiB",
        "hosts/mac/codex_records.py",
        "        data, cut = _tail(path, MAX_INDEX_READ)\n",
        "        data, cut = path.read_bytes(), False\n",
        (
            "tests/codex/test_codex_threads.py"
            "::test_an_index_grown_without_end_is_read_only_at_its_end",
        ),
    ),
    Mutant(
        "fleet-file-read-whole",
        "fleet.toml past 1 MiB is one line naming it, not a fleet",
        "hosts/fleet.py",
        "        if len(data) > MAX_FLEET_BYTES:\n",
        "        if False:\n",
        ("tests/hostile/test_hostile_fleet.py::test_a_hostile_fleet_file_is_one_line_naming_it",),
        select="two",
    ),
    Mutant(
        "helper-write-sent-with-hello",
        "a Mac whose hello was not taken is never asked to write: only a read goes with the"
        " hello that starts a helper",
        "hosts/channel.py",
        "                    together = all(op in PIPELINED for op, _ in requests)\n",
        "                    together = True\n",
        (
            "tests/ssh/test_channel.py::test_a_write_that_starts_a_helper_waits_for_the_hellos_answer",
        ),
    ),
    Mutant(
        "helper-first-read-waits-for-hello",
        "the first answer of a new helper costs one round trip: its read goes with the"
        " payload and the hello",
        "hosts/channel.py",
        "                    together = all(op in PIPELINED for op, _ in requests)\n",
        "                    together = False\n",
        (
            "tests/ssh/test_channel.py"
            "::test_the_call_that_starts_a_helper_sends_its_read_with_the_payload_and_hello_at_once",
        ),
    ),
    Mutant(
        "news-waits-for-the-loops-next-round",
        "a commit seen in the pause between the loop's rounds reaches the workers then",
        "coop_engine/loop/serve.py",
        "            if look is None or look >= until:\n",
        "            if True:\n",
        (f"{NEWS}::test_a_commit_seen_in_the_pause_between_rounds_reaches_the_workers_then",),
    ),
    Mutant(
        "a-commit-between-rounds-runs-no-chore",
        "the ledger's chores run in the round after a commit the loop can see: an overdue"
        " obligation is swept then, not at the next hour's pass",
        "coop_engine/loop/serve.py",
        "            self._news_since_chores = True\n",
        "            pass\n",
        ("tests/coordinator/test_chores.py",),
        select="commit_runs",
    ),
    Mutant(
        "every-look-runs-the-chores",
        "a round woken only to look again for a commit not yet visible runs no chore",
        "coop_engine/loop/serve.py",
        "            if self._news_since_chores or started >= chores_due:\n",
        "            if True:\n",
        ("tests/coordinator/test_chores.py",),
        select="only_look",
    ),
    Mutant(
        "the-watch-asks-for-reads",
        "the office's watch asks inotify for changes only: each survey's own reads of the"
        " registry and transcripts are no events for watchdog's threads to parse",
        "coop_engine/loop/watching.py",
        "    return observer.schedule(handler, folder, recursive=False, event_filter=TOLD)\n",
        "    return observer.schedule(handler, folder, recursive=False)\n",
        ("tests/coordinator/test_idle.py",),
        select="kernel",
    ),
    Mutant(
        "a-watch-is-not-told-of-lost-events",
        "a receipt is seen at once: events the kernel dropped (an overflowed inotify queue)"
        " wake the pass as a change would, not the next timed pass",
        "coop_engine/loop/watching.py",
        "TOLD = [*CHANGE_EVENTS, EventsLostEvent]\n",
        "TOLD = CHANGE_EVENTS\n",
        ("tests/coordinator/test_watch_loss.py",),
        select="serve",
    ),
    Mutant(
        "the-pass-sleeps-through-lost-events",
        "a receipt is seen at once: events the kernel dropped (an overflowed inotify queue)"
        " wake the pass as a change would, not the next timed pass",
        "coop_engine/loop/serve.py",
        "        self.wake()  # whatever was wanted may have changed unseen\n",
        "        pass\n",
        ("tests/coordinator/test_watch_loss.py",),
        select="serve",
    ),
)
