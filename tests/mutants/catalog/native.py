"""The native door on the Mac (seed 000, DESIGN 5.2-5.4): private_socket, the birth pin,
peer protocol 1, exactly one live match, the host's third read, one line written and
nothing read back."""

from __future__ import annotations

from ..mutant import Mutant

NATIVE = "hosts/mac/native.py"
PLATFORMS = "hosts/mac/platforms.py"
REFUSALS = "tests/door/test_refusals.py"
REGISTRY = "tests/hosts/test_registry.py"
CHECKS = "tests/door/test_private_socket_checks.py"
WIRE = "tests/door/test_one_line_nothing_read_back.py"
LISTING = "tests/hosts/test_listing_transcripts.py"

MUTANTS = (
    Mutant(
        "private-socket-accepts-a-regular-file",
        "private_socket: the path is a socket",
        NATIVE,
        "    if not stat.S_ISSOCK(info.st_mode):\n",
        "    if False:\n",
        (
            f"{REFUSALS}::test_regular_file_parked_at_the_socket_path_is_refused",
            "tests/hostile/test_hostile_sockets.py::test_a_fifo_in_place_of_the_socket_is_refused",
        ),
    ),
    Mutant(
        "private-socket-follows-a-symlink",
        "private_socket: the path is a socket, read with lstat (no following links)",
        NATIVE,
        "        info = os.lstat(path)\n",
        "        info = os.stat(path)\n",
        (f"{REFUSALS}::test_symlink_in_place_of_the_socket_is_refused",),
    ),
    Mutant(
        "private-socket-ignores-the-owner",
        "private_socket: owned by Coop's uid",
        NATIVE,
        "    if info.st_uid != os.getuid():\n",
        "    if False:\n",
        (f"{REFUSALS}::test_socket_owned_by_another_user_is_refused",),
    ),
    Mutant(
        "private-socket-allows-group-bits",
        "private_socket: mode & 0o077 == 0",
        NATIVE,
        "    if info.st_mode & 0o077:\n",
        "    if info.st_mode & 0o007:\n",
        (f"{REFUSALS}::test_socket_with_group_or_other_bits_is_refused",),
    ),
    Mutant(
        "private-socket-skips-the-parent",
        "private_socket: its parent directory passes the same owner and mode test",
        NATIVE,
        "    if verdict:\n        raise NativeRefusal(SOCKET_NOT_PRIVATE, verdict)\n",
        "    if False:\n        raise NativeRefusal(SOCKET_NOT_PRIVATE, verdict)\n",
        (f"{REFUSALS}::test_socket_parent_directory_with_group_or_other_bits_is_refused",),
    ),
    Mutant(
        "private-socket-parent-owner-unchecked",
        "private_socket: its parent directory passes the same owner test",
        NATIVE,
        "    problem = _private(parent)\n",
        "    problem = _private(parent) if parent.st_mode & 0o077 else None\n",
        (f"{CHECKS}::test_a_socket_in_a_folder_owned_by_another_user_is_refused",),
    ),
    Mutant(
        "private-socket-parent-may-be-a-symlink",
        "private_socket: its parent directory is a directory, read with lstat",
        NATIVE,
        "        parent = os.lstat(folder)\n",
        "        parent = os.stat(folder)\n",
        (f"{CHECKS}::test_a_socket_whose_folder_is_a_symlink_is_refused",),
    ),
    Mutant(
        "birth-pin-ignores-proc-start",
        "the birth pin: procStart equals the live process's start (Linux)",
        PLATFORMS,
        "            return str(recorded) == birth\n",
        "            return True\n",
        (f"{REFUSALS}::test_reused_pid_with_another_start_time_is_not_a_live_match",),
    ),
    Mutant(
        "birth-pin-without-proc-start-matches",
        "the birth pin: an entry without procStart proves nothing (Linux)",
        PLATFORMS,
        "        # An entry without procStart cannot prove it belongs to this process.\n"
        "        return False\n",
        "        return True\n",
        ("tests/hosts/test_birth_pin.py::test_an_entry_without_proc_start_is_never_live_on_linux",),
    ),
    Mutant(
        "birth-pin-started-at-before-birth-matches",
        "the birth pin: startedAt no earlier than ps's start second (macOS)",
        PLATFORMS,
        "        return -1 < delta <= STARTED_AT_SLACK_SECONDS\n",
        "        return delta <= STARTED_AT_SLACK_SECONDS\n",
        (
            f"{REGISTRY}::TestMacPlatformOnThisMachine"
            "::test_started_at_before_the_process_birth_is_a_reused_pid",
        ),
    ),
    Mutant(
        "birth-pin-not-consulted-by-the-scan",
        "the birth pin: a scan marks live only an entry whose birth matches",
        NATIVE,
        "        entry.live = birth is not None and platform.birth_matches(entry.data, birth)\n",
        "        entry.live = birth is not None\n",
        (f"{REFUSALS}::test_reused_pid_with_another_start_time_is_not_a_live_match",),
    ),
    Mutant(
        "birth-pin-zombie-is-live",
        "the birth pin: a zombie has exited, whatever its start time says (Linux)",
        PLATFORMS,
        'fields is not None and len(fields) > 19 and fields[0] != b"Z":',
        "fields is not None and len(fields) > 19:",
        (f"{REGISTRY}::test_a_zombie_is_not_live_on_either_platform",),
    ),
    Mutant(
        "peer-protocol-2-accepted",
        "peer protocol 1: any other protocol is refused",
        NATIVE,
        "    if type(protocol) is not int or protocol != 1:",
        "    if type(protocol) is not int or protocol not in (1, 2):",
        (f"{REGISTRY}::test_target_refuses_a_peer_protocol_other_than_1",),
    ),
    Mutant(
        "peer-protocol-true-accepted",
        "peer protocol 1: JSON true is not protocol 1",
        NATIVE,
        "    if type(protocol) is not int or protocol != 1:",
        "    if protocol != 1:",
        (
            "tests/hostile/test_hostile_registry.py"
            "::test_an_entry_with_a_spoilt_identity_field_is_never_targeted_and_never_raises",
        ),
        select="True",
    ),
    Mutant(
        "target-guesses-among-several",
        "target(): exactly one live match; several is an error, never a guess",
        NATIVE,
        "    if len(found) == 1:\n        return found[0]\n",
        "    if len(found) >= 1:\n        return found[0]\n",
        (f"{REFUSALS}::test_several_live_entries_for_one_session_id_are_refused",),
    ),
    Mutant(
        "third-read-compare-skipped",
        "the host's third read: compared with the four expected facts before the write",
        NATIVE,
        "    if third != expected:\n",
        "    if False:\n",
        (f"{REFUSALS}::test_registry_rewritten_before_the_hosts_third_reading_is_refused",),
    ),
    Mutant(
        "third-read-not-made",
        "the host's third read: the registry is read again where the chat lives",
        NATIVE,
        "        third = target(config_dir, platform, session_id)\n",
        "        third = expected\n",
        (f"{REFUSALS}::test_registry_rewritten_before_the_hosts_third_reading_is_refused",),
    ),
    Mutant(
        "third-read-ignores-the-inode",
        "the host's third read: the socket inode is one of the four facts pinned",
        NATIVE,
        "        return isinstance(other, Target) and self.as_dict() == other.as_dict()\n",
        "        return isinstance(other, Target) and (self.pid, self.birth, self.socket_path)"
        " == (other.pid, other.birth, other.socket_path)\n",
        ("tests/door/test_twice_read.py",),
    ),
    Mutant(
        "frame-may-carry-a-second-line",
        "one line: a frame is exactly one newline-terminated line",
        NATIVE,
        '    if not line.endswith(b"\\n") or b"\\n" in line[:-1]:\n',
        '    if not line.endswith(b"\\n"):\n',
        (f"{WIRE}::test_a_frame_with_a_line_break_inside_is_never_written",),
    ),
    Mutant(
        "frame-reads-the-answer-back",
        "nothing read back: connect, sendall, shut down the write side, close",
        NATIVE,
        "            sock.shutdown(socket.SHUT_WR)\n",
        "            sock.shutdown(socket.SHUT_WR)\n            sock.recv(1)\n",
        (f"{WIRE}::test_a_receiver_that_never_answers_nor_closes_is_written_to_and_left",),
    ),
    Mutant(
        "frame-asserts-a-permission-mode",
        "the frame asserts no permission mode for the sender",
        NATIVE,
        '        "priority": "next",\n',
        '        "priority": "next",\n        "permissionMode": "bypassPermissions",\n',
        (
            "tests/door/test_delivery.py::test_frame_is_one_line_naming_the_receiver_and_the_outbox_id",
        ),
    ),
    Mutant(
        "unreadable-entry-called-gone",
        "a chat whose registry entry could not be read is never said to be gone",
        NATIVE,
        "    if not scan.skipped:\n        return said\n",
        "    if True:\n        return said\n",
        (f"{REGISTRY}::test_a_chat_whose_entry_could_not_be_read_is_not_called_gone",),
    ),
    Mutant(
        "torn-entry-given-up-at-once",
        "a torn registry entry is read again over 150 ms, long enough for a stalled rewrite",
        NATIVE,
        "            time.sleep(TORN_RETRY_DELAY * 2 ** (attempt - 1))\n",
        "            time.sleep(TORN_RETRY_DELAY)\n",
        (f"{REGISTRY}::test_an_entry_empty_through_four_pauses_is_read_at_the_fifth",),
    ),
    Mutant(
        "a-fifo-named-like-a-transcript-holds-the-listing",
        "whatever file sits where a chat's transcript would be, reading its last lines never"
        " waits: a FIFO there is no transcript, and the listing goes on",
        "hosts/mac/transcripts.py",
        "os.open(os.fspath(path), os.O_RDONLY | os.O_NONBLOCK)",
        "os.open(os.fspath(path), os.O_RDONLY)",
        (LISTING,),
        select="fifo",
    ),
    Mutant(
        "a-moved-chat-loses-its-recorded-mode",
        "a live chat's recorded permission mode is read from its transcript wherever its"
        " project folder is, not only where its cwd puts it",
        "hosts/mac/local.py",
        "        if read is None:\n",
        "        if False:\n",
        (LISTING,),
        select="another_project",
    ),
    Mutant(
        "a-line-cut-by-a-read-window-is-read-as-a-line",
        "a transcript read backwards takes only whole lines: the piece of a line that a read"
        " window cut is never parsed as the line",
        "hosts/mac/transcripts.py",
        "        if line_start == 0 and cut:\n",
        "        if False:\n",
        ("tests/properties/test_transcript_reader.py",),
        select="newest_line_taken",
    ),
    Mutant(
        "a-folder-named-like-a-transcript-is-read",
        "only a regular file is a transcript: a folder or a FIFO named like one is no"
        " transcript to either reader, and reading goes on",
        "hosts/mac/transcripts.py",
        "    if not stat.S_ISREG(info.st_mode):\n",
        "    if False:\n",
        ("tests/properties/test_transcript_reader.py",),
        select="no_regular_file",
    ),
    Mutant(
        "a-reused-buffer-is-read-past-this-read",
        "a buffer reused across a listing's transcripts holds earlier files' bytes: only what"
        " this read put there is searched",
        "hosts/mac/transcripts.py",
        '        line_end = data.find(b"\\n", at, length)\n',
        '        line_end = data.find(b"\\n", at)\n',
        ("tests/properties/test_transcript_reader.py",),
        select="newest_line_taken",
    ),
)
