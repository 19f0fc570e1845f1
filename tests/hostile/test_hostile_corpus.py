"""The hostile-input corpus as a whole (DESIGN.md section 11, issue 8): every case, and
the test that proves it. Most live in this folder; those proved before it existed are
referenced where they are. This index fails if a named test disappears."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
HERE = "hostile/"

CORPUS: dict[str, list[tuple[str, str]]] = {
    # registry files
    "registry: torn": [
        ("hosts/test_registry.py", "test_torn_entry_is_read_again_once_the_writer_finishes")
    ],
    "registry: empty, non-object JSON, no sessionId": [
        ("hosts/test_registry.py", "test_malformed_entries_are_skipped_with_a_reason")
    ],
    "registry: 10 MB, not JSON, not UTF-8, deeply nested, wrong pid types": [
        (
            HERE + "test_hostile_registry.py",
            "test_a_hostile_registry_file_is_skipped_with_its_reason",
        )
    ],
    "registry: a FIFO or a folder named like an entry": [
        (
            HERE + "test_hostile_registry.py",
            "test_a_fifo_or_a_folder_named_like_an_entry_is_not_a_regular_file",
        )
    ],
    "registry: wrong types in every field (NUL in paths, escapes in names)": [
        (
            HERE + "test_hostile_registry.py",
            "test_an_entry_with_a_spoilt_identity_field_is_never_targeted_and_never_raises",
        ),
        (
            HERE + "test_hostile_registry.py",
            "test_an_entry_with_a_spoilt_descriptive_field_is_targeted_as_before_and_never_raises",
        ),
        (
            HERE + "test_hostile_registry.py",
            "test_the_cli_lists_a_hostile_registry_without_a_traceback",
        ),
    ],
    "registry: a name that is not the pid": [
        ("hosts/test_registry.py", "test_entry_whose_name_is_not_its_pid_is_skipped")
    ],
    "registry: a symlink, 2 MB": [
        ("hosts/test_registry.py", "test_symlinked_and_oversized_entries_are_skipped")
    ],
    "registry: any bytes, any JSON (Hypothesis)": [
        (
            "properties/test_registry_parser.py",
            "test_any_bytes_are_an_entry_or_skipped_with_a_reason",
        ),
        (
            "properties/test_registry_parser.py",
            "test_any_json_value_is_an_entry_or_skipped_with_a_reason",
        ),
        (
            "properties/test_registry_parser.py",
            "test_any_spoilt_live_entry_is_listed_or_refused_never_raises",
        ),
    ],
    "registry: pid reuse": [
        ("door/test_refusals.py", "test_reused_pid_with_another_start_time_is_not_a_live_match")
    ],
    # sockets
    "socket: group or other bits, on it or its folder": [
        ("door/test_refusals.py", "test_socket_with_group_or_other_bits_is_refused"),
        (
            "door/test_refusals.py",
            "test_socket_parent_directory_with_group_or_other_bits_is_refused",
        ),
    ],
    "socket: owned by another uid (a user the test creates)": [
        (
            HERE + "test_hostile_sockets.py",
            "test_a_socket_owned_by_another_user_is_refused_and_hears_nothing",
        ),
        ("door/test_refusals.py", "test_socket_owned_by_another_user_is_refused"),
    ],
    "socket: a regular file in its place": [
        ("door/test_refusals.py", "test_regular_file_parked_at_the_socket_path_is_refused")
    ],
    "socket: a FIFO in its place": [
        (HERE + "test_hostile_sockets.py", "test_a_fifo_in_place_of_the_socket_is_refused")
    ],
    "socket: a symlink to a socket": [
        ("door/test_refusals.py", "test_symlink_in_place_of_the_socket_is_refused")
    ],
    # transcripts
    "transcript: invalid UTF-8, NUL bytes, JSON that is not an object, a 50 MB line": [
        (
            HERE + "test_hostile_transcripts.py",
            "test_hostile_lines_between_the_bookmark_and_the_peer_entry_are_skipped",
        ),
        ("door/test_receipts.py", "test_lines_that_are_json_but_not_objects_are_skipped"),
    ],
    "transcript: truncated mid-line": [
        ("door/test_delivery.py", "test_torn_last_transcript_line_waits_for_its_newline"),
        (
            "properties/test_transcript_reader.py",
            "test_reading_forward_after_each_append_yields_every_complete_line_once",
        ),
    ],
    "transcript: replaced by a shorter file": [
        (
            HERE + "test_hostile_transcripts.py",
            "test_a_transcript_replaced_by_a_shorter_file_is_a_recorded_conflict",
        ),
        (
            "properties/test_transcript_reader.py",
            "test_a_shorter_file_or_another_file_under_the_name_is_read_again_from_zero",
        ),
    ],
    "transcript: deleted while open": [
        (
            HERE + "test_hostile_transcripts.py",
            "test_a_transcript_deleted_while_read_costs_nothing_and_reading_goes_on",
        )
    ],
    "transcript: wrong provenance, the same envelope twice": [
        ("door/test_delivery.py", "test_wrong_provenance_is_a_conflict_not_a_receipt"),
        ("door/test_delivery.py", "test_second_sighting_is_a_conflict"),
    ],
    # frames and ids
    "frames: shell metacharacters, newlines, 100 KB bodies": [
        (
            HERE + "test_hostile_frames.py",
            "test_metacharacters_newlines_and_a_64_kib_body_reach_the_chat_as_one_exact_line",
        )
    ],
    "ids: shell metacharacters, newlines, 100 KB, paths, in every id the CLI takes": [
        (
            HERE + "test_hostile_frames.py",
            "test_a_hostile_id_is_a_clear_refusal_or_waits_pending_and_runs_nothing",
        ),
        (
            "ssh/test_ssh_connect.py",
            "test_session_ids_and_names_full_of_shell_metacharacters_reach_the_mac_unchanged",
        ),
    ],
    # prompt injection
    "injection: another invitation's nonce, a nonce in a prompt, a near miss": [
        (
            HERE + "test_hostile_injection.py",
            "test_another_invitations_nonce_a_nonce_in_a_prompt_and_a_near_miss_accept_nothing",
        )
    ],
    "injection: text telling Coop to resend or expire": [
        (
            HERE + "test_hostile_injection.py",
            "test_text_telling_coop_to_resend_or_expire_changes_nothing",
        )
    ],
    # the fleet file and the Macs
    "fleet.toml: malformed TOML, unknown or mistyped settings, each naming its line": [
        (
            "ssh/test_fleet_config.py",
            "test_a_malformed_fleet_file_is_one_error_naming_the_file_and_line",
        ),
        ("ssh/test_fleet_config.py", "test_the_cli_reports_a_malformed_fleet_file_with_exit_1"),
    ],
    "fleet.toml: not UTF-8, NUL, deeply nested, a folder, a shell line for an address": [
        (HERE + "test_hostile_fleet.py", "test_a_hostile_fleet_file_is_one_line_naming_it"),
        (HERE + "test_hostile_fleet.py", "test_a_folder_in_place_of_the_fleet_file_is_one_line"),
        (
            HERE + "test_hostile_fleet.py",
            "test_a_mac_whose_address_is_a_shell_line_is_unreachable_not_run",
        ),
    ],
    "Macs: unknown or changed host keys, a host that hangs": [
        (
            "ssh/test_ssh_connect.py",
            "test_unknown_host_key_is_refused_with_a_message_that_says_so_and_names_the_mac",
        ),
        ("ssh/test_ssh_connect.py", "test_changed_host_key_is_refused_and_names_both_fingerprints"),
        (
            "ssh/test_ssh_connect.py",
            "test_a_server_that_accepts_and_never_answers_costs_its_timeout_and_no_more",
        ),
    ],
}


@pytest.mark.parametrize("case", list(CORPUS))
def test_each_hostile_case_is_proved_by_a_test_that_exists(case: str) -> None:
    for path, name in CORPUS[case]:
        source = (TESTS / path).read_text()
        assert re.search(rf"^(?:    )?def {re.escape(name)}\(", source, re.M), (path, name)
