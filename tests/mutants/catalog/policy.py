"""The receiver's verdict (seed 001, DESIGN 5.6-5.7): every inbound source and its
precedence, "repository only tightens", the three reasons with their conditions and the
60 s grace, "unknown never expires"."""

from __future__ import annotations

from ..mutant import Mutant

POLICY = "coop_engine/policy.py"
SETTINGS = "hosts/mac/settings.py"
TEST_POLICY = "tests/door/test_policy.py"
SOURCES = "tests/hosts/test_inbound_sources.py"
RULES = "tests/engine/test_rules_delivery.py"

# The managed-settings.d parts, as hosts/mac/settings.py lists them.
DROP_INS = (
    "            drop_ins / name for name in sorted(os.listdir(drop_ins))"
    ' if name.endswith(".json")\n'
)

MUTANTS = (
    Mutant(
        "inbound-flag-before-managed",
        "inbound sources: managed settings come first",
        POLICY,
        'EXPLICIT_SOURCES = (("managed", "managed"), ("flag", "settings-flag"), ("user", "user"))',
        'EXPLICIT_SOURCES = (("flag", "settings-flag"), ("managed", "managed"), ("user", "user"))',
        (f"{TEST_POLICY}::test_managed_setting_wins_over_the_flag_and_user",),
    ),
    Mutant(
        "inbound-user-before-flag",
        "inbound sources: the --settings flag comes before user settings",
        POLICY,
        'EXPLICIT_SOURCES = (("managed", "managed"), ("flag", "settings-flag"), ("user", "user"))',
        'EXPLICIT_SOURCES = (("managed", "managed"), ("user", "user"), ("flag", "settings-flag"))',
        (f"{TEST_POLICY}::test_settings_flag_wins_over_user_settings",),
    ),
    Mutant(
        "inbound-user-settings-ignored",
        "inbound sources: user settings decide when nothing above them is explicit",
        POLICY,
        'EXPLICIT_SOURCES = (("managed", "managed"), ("flag", "settings-flag"), ("user", "user"))',
        'EXPLICIT_SOURCES = (("managed", "managed"), ("flag", "settings-flag"))',
        (f"{TEST_POLICY}::test_user_setting_decides_when_nothing_above_it_is_explicit",),
    ),
    Mutant(
        "inbound-managed-parts-unread",
        "inbound sources: managed-settings.d/*.json are read with managed-settings.json",
        SETTINGS,
        DROP_INS,
        "            drop_ins / name for name in ()\n",
        (f"{SOURCES}::test_managed_settings_parts_are_merged_in_name_order_the_later_winning",),
    ),
    Mutant(
        "inbound-managed-parts-reversed",
        "inbound sources: managed-settings.d parts in name order, the later winning",
        SETTINGS,
        DROP_INS,
        "            drop_ins / name\n"
        "            for name in sorted(os.listdir(drop_ins), reverse=True)\n"
        '            if name.endswith(".json")\n',
        (
            f"{SOURCES}::test_managed_settings_parts_are_merged_in_name_order_the_later_winning",
            f"{SOURCES}::test_only_json_parts_count_in_name_order_whatever_order_they_were_written",
        ),
    ),
    Mutant(
        "inbound-managed-parts-any-file",
        "inbound sources: only managed-settings.d/*.json are parts (a README is none)",
        SETTINGS,
        DROP_INS,
        "            drop_ins / name for name in sorted(os.listdir(drop_ins))\n",
        (f"{SOURCES}::test_only_json_parts_count_in_name_order_whatever_order_they_were_written",),
    ),
    Mutant(
        "inbound-settings-flag-path-from-coops-cwd",
        "inbound sources: a --settings file is read relative to the chat's cwd",
        SETTINGS,
        "    if not path.is_absolute() and cwd:\n",
        "    if False:\n",
        (f"{SOURCES}::test_a_settings_flag_naming_a_file_is_read_beside_the_chats_cwd",),
    ),
    Mutant(
        "inbound-settings-flag-equals-form-unread",
        "inbound sources: --settings=VALUE counts as --settings VALUE",
        SETTINGS,
        '        elif arg.startswith(flag + "="):\n',
        "        elif False:\n",
        (f"{SOURCES}::test_an_inline_settings_flag_in_its_equals_form_counts",),
    ),
    Mutant(
        "inbound-unreadable-command-line-ignored",
        "inbound sources: an unreadable command line may hide a --settings flag: unknown",
        SETTINGS,
        "    if argv is None:\n"
        '        return {"path": "--settings", "error":'
        ' "the chat\'s command line could not be read"}\n',
        "    if argv is None:\n        return None\n",
        (f"{TEST_POLICY}::test_an_unreadable_command_line_makes_the_settings_flag_unknown",),
    ),
    Mutant(
        "inbound-local-settings-unread",
        "inbound sources: the repository's settings.local.json is read",
        SETTINGS,
        '                read_json_file(os.path.join(folder, "settings.local.json")),\n',
        '                read_json_file(os.path.join(folder, "settings.json")),\n',
        (f"{SOURCES}::test_both_repository_files_in_the_chats_cwd_can_tighten",),
    ),
    Mutant(
        "inbound-skip-permissions-flag-unread",
        "inbound sources: --dangerously-skip-permissions is a bypassing receiver",
        SETTINGS,
        '    if "--dangerously-skip-permissions" in argv:\n',
        "    if False:\n",
        (
            f"{SOURCES}"
            "::test_dangerously_skip_permissions_on_the_command_line_is_a_bypassing_receiver",
        ),
    ),
    Mutant(
        "inbound-oldest-recorded-mode",
        "inbound sources: the receiver's mode is the latest its transcript recorded",
        "hosts/mac/transcripts.py",
        "    while (at := data.rfind(needle, 0, below)) >= 0:\n",
        "    while (at := data.find(needle, 0, below)) >= 0:\n",
        (f"{SOURCES}::test_the_transcripts_latest_permission_mode_is_the_receivers",),
    ),
    Mutant(
        "a-long-turn-hides-the-recorded-mode",
        "inbound sources: the receiver's mode is the latest its transcript recorded, before"
        " a turn's megabytes of tool output as well",
        SETTINGS,
        "MODE_TAIL_BYTES = 16 << 20\n",
        "MODE_TAIL_BYTES = 256 << 10\n",
        (f"{SOURCES}::test_a_mode_recorded_before_a_long_turn_is_still_the_receivers",),
    ),
    Mutant(
        "an-unread-mode-is-the-command-line-s",
        "inbound sources: a mode the transcript may have recorded before the part read is"
        " unknown, not the command line's or the settings'",
        POLICY,
        '    return not inputs.get("recorded_mode") and inputs.get("recorded_mode_complete")'
        " is False\n",
        "    return False\n",
        (
            f"{SOURCES}::test_a_transcript_longer_than_is_read_with_no_mode_in_it_predicts_unknown",
            f"{TEST_POLICY}::test_a_mode_the_transcript_may_have_recorded_before_the_part_read_is_unknown",
        ),
    ),
    Mutant(
        "a-tail-search-says-it-read-the-whole-file",
        "inbound sources: a search of a transcript's tail that found no mode says whether it"
        " read the whole file",
        "hosts/mac/transcripts.py",
        "                return taken, taken is not None or floor == 0\n",
        "                return taken, True\n",
        (
            f"{SOURCES}::test_a_transcript_longer_than_is_read_with_no_mode_in_it_predicts_unknown",
            "tests/properties/test_transcript_reader.py",
        ),
        select="unknown or newest_line_taken",
    ),
    Mutant(
        "inbound-command-line-before-transcript",
        "inbound sources: the transcript's mode comes before the command line's",
        POLICY,
        '    for candidate in (inputs.get("recorded_mode"), inputs.get("cmdline_mode")):\n',
        '    for candidate in (inputs.get("cmdline_mode"), inputs.get("recorded_mode")):\n',
        (f"{TEST_POLICY}::test_recorded_mode_comes_before_the_command_line",),
    ),
    Mutant(
        "inbound-invalid-value-ignored",
        "inbound sources: an invalid crossSessionInbound counts as hold",
        POLICY,
        '    return None if name == "user" else "hold"\n',
        "    return None\n",
        (f"{TEST_POLICY}::test_invalid_value_counts_as_hold",),
    ),
    Mutant(
        "inbound-parity-always-accepts",
        "inbound sources: no explicit value: a bypassPermissions receiver holds (parity)",
        POLICY,
        '        verdict = "hold" if mode == BYPASS else "accept"\n',
        '        verdict = "accept"\n',
        (f"{TEST_POLICY}::test_permission_mode_parity_without_an_explicit_value",),
    ),
    Mutant(
        "inbound-unreadable-settings-guessed",
        "inbound sources: an unreadable settings file predicts unknown",
        POLICY,
        "            return _unknown(f\"{source.get('path', name)}: {source['error']}\")\n",
        "            continue\n",
        (f"{TEST_POLICY}::test_unreadable_settings_predict_unknown",),
    ),
    Mutant(
        "inbound-unrecognised-mode-guessed",
        "inbound sources: an unrecognised permission mode predicts unknown",
        POLICY,
        "        if mode not in KNOWN_MODES:\n",
        "        if False:\n",
        (f"{TEST_POLICY}::test_unrecognised_mode_or_unreadable_command_line_predicts_unknown",),
    ),
    Mutant(
        "repository-loosens",
        "repository only tightens: a project accept never lowers a user hold",
        POLICY,
        "        stricter = STRICTNESS[value] > STRICTNESS[verdict]\n",
        "        stricter = value != verdict\n",
        (f"{TEST_POLICY}::test_repository_settings_only_tighten",),
    ),
    Mutant(
        "repository-local-cannot-tighten",
        "repository only tightens: settings.local.json tightens too",
        POLICY,
        'TIGHTENING_SOURCES = (("project", "project"), ("local", "project-local"))',
        'TIGHTENING_SOURCES = (("project", "project"),)',
        (f"{TEST_POLICY}::test_repository_settings_only_tighten",),
    ),
    Mutant(
        "repository-hold-loses-to-parity",
        "repository only tightens: an explicit repository hold wins over an equal parity hold",
        POLICY,
        "        if stricter or (label == PARITY and STRICTNESS[value] == STRICTNESS[verdict]):\n",
        "        if stricter:\n",
        (f"{TEST_POLICY}::test_an_explicit_repository_hold_wins_over_an_equal_parity_hold",),
    ),
    Mutant(
        "repository-sets-the-dialog-expiry",
        "dialogExpiry: project settings do not set it (they may only make it never)",
        POLICY,
        "    for name, _ in EXPLICIT_SOURCES:  # otherwise project settings do not set it\n",
        "    for name, _ in EXPLICIT_SOURCES + TIGHTENING_SOURCES:\n",
        (
            f"{TEST_POLICY}"
            "::test_dialog_expiry_comes_from_settings_and_the_repository_may_only_make_it_never",
        ),
    ),
    Mutant(
        "refused-waits-for-the-grace",
        "refused-by-receiver-policy: a predicted refuse expires at once",
        POLICY,
        '    if verdict == "refuse":\n        return REFUSED_BY_POLICY\n',
        '    if verdict == "refuse" and now >= sent_at + GRACE_SECONDS:\n'
        "        return REFUSED_BY_POLICY\n",
        (f"{TEST_POLICY}::test_refuse_expires_at_once",),
    ),
    Mutant(
        "held-expires-an-explicit-hold",
        "held-for-approval-then-expired: only a parity hold; an explicit hold never expires",
        POLICY,
        '        if policy.get("source") != PARITY or expiry is None:\n',
        "        if expiry is None:\n",
        (f"{TEST_POLICY}::test_explicit_hold_and_never_expiry_stay_watched",),
    ),
    Mutant(
        "held-never-expiry-expires",
        "held-for-approval-then-expired: dialogExpiry never is never",
        POLICY,
        '"10m": 600, "never": None}',
        '"10m": 600, "never": 0}',
        (f"{TEST_POLICY}::test_explicit_hold_and_never_expiry_stay_watched",),
    ),
    Mutant(
        "held-expires-without-the-grace",
        "held-for-approval-then-expired: sent + dialog expiry + the 60 s grace",
        POLICY,
        "        if now >= sent_at + expiry + GRACE_SECONDS:\n"
        '            return "held-for-approval-then-expired"\n'
        "        return None\n",
        "        if now >= sent_at + expiry:\n"
        '            return "held-for-approval-then-expired"\n'
        "        return None\n",
        (f"{TEST_POLICY}::test_parity_hold_expires_after_dialog_expiry_plus_grace_and_not_before",),
    ),
    Mutant(
        "held-default-expiry-shortened",
        "held-for-approval-then-expired: the dialog expiry defaults to 5 minutes",
        POLICY,
        'DEFAULT_DIALOG_EXPIRY = "5m"\n',
        'DEFAULT_DIALOG_EXPIRY = "60s"\n',
        (
            f"{TEST_POLICY}"
            "::test_dialog_expiry_comes_from_settings_and_the_repository_may_only_make_it_never",
        ),
    ),
    Mutant(
        "grace-shortened",
        "the 60 s grace",
        POLICY,
        "GRACE_SECONDS = 60\n",
        "GRACE_SECONDS = 30\n",
        (f"{TEST_POLICY}::test_accept_expires_only_idle_and_without_an_entry_after_60s",),
    ),
    Mutant(
        "idle-without-the-grace",
        "receiver-idle-without-entry: at least 60 s since the send",
        POLICY,
        '    if verdict == "accept" and now >= sent_at + GRACE_SECONDS:\n',
        '    if verdict == "accept":\n',
        (f"{TEST_POLICY}::test_accept_expires_only_idle_and_without_an_entry_after_60s",),
    ),
    Mutant(
        "idle-status-unchecked",
        "receiver-idle-without-entry: the registry says idle",
        POLICY,
        '        if registry_status() == "idle" and not mentions():\n',
        "        if not mentions():\n",
        (f"{TEST_POLICY}::test_accept_expires_only_idle_and_without_an_entry_after_60s",),
    ),
    Mutant(
        "idle-transcript-unread",
        "receiver-idle-without-entry: a fresh read of the transcript has no entry for the id",
        POLICY,
        '        if registry_status() == "idle" and not mentions():\n',
        '        if registry_status() == "idle":\n',
        (f"{TEST_POLICY}::test_accept_expires_only_idle_and_without_an_entry_after_60s",),
    ),
    Mutant(
        "idle-transcript-not-read-afresh",
        "receiver-idle-without-entry: the transcript is read again after the survey",
        "coop_engine/loop/doors/claude.py",
        "                if any(row.id in text for _, text in lines):\n",
        "                if False:\n",
        (
            "tests/door/test_idle_verdict_reads_afresh.py"
            "::test_an_entry_written_after_the_survey_keeps_an_idle_accepting_chat_from_expiring",
        ),
    ),
    Mutant(
        "unknown-expires-as-accept",
        "unknown never expires a delivery",
        POLICY,
        '    if verdict == "accept" and now >= sent_at + GRACE_SECONDS:\n',
        '    if verdict in ("accept", "unknown") and now >= sent_at + GRACE_SECONDS:\n',
        (f"{TEST_POLICY}::test_unknown_never_expires",),
    ),
    Mutant(
        "unknown-when-nothing-was-predicted-expires",
        "unknown never expires a delivery: no prediction is unknown",
        POLICY,
        '    policy = prediction or {"verdict": "unknown"}\n    if held:\n',
        '    policy = prediction or {"verdict": "accept"}\n    if held:\n',
        (f"{TEST_POLICY}::test_unknown_never_expires",),
    ),
    Mutant(
        "expiry-without-a-reason",
        "the three reasons, and only three: expire needs evidence carrying one",
        "coop_engine/delivery.py",
        "        if reason not in allowed_reasons:\n",
        "        if not reason:\n",
        (f"{RULES}::test_expire_without_one_of_the_three_reasons_is_refused",),
        select="sqlite",
    ),
    Mutant(
        "expiry-of-a-row-not-uncertain",
        "the three reasons, and only three: only an uncertain send expires",
        "coop_engine/delivery.py",
        '            allowed = (Outbox.state == "uncertain") & unchanged\n',
        "            allowed = unchanged\n",
        (f"{RULES}::test_expire_of_a_row_that_is_not_an_uncertain_send_is_refused",),
        select="sqlite",
    ),
)
