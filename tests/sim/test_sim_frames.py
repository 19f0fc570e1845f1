"""Frames the receiver drops, and inputs that must never stop the chat."""

from __future__ import annotations

import json
import socket
import time

from hosts.sim.transcript import project_folder_name

SCALE = 0.001  # the 30 s duplicate window lasts 0.03 s


def test_identical_body_from_the_same_sender_is_dropped_within_the_window(start_chat) -> None:
    chat = start_chat()  # the real 30 s window: the test is done long before it ends
    first = chat.frame("Please review the importer.")
    chat.send(first)
    chat.wait_turn_end()
    again = chat.frame("Please review the importer.")
    chat.send(again)
    chat.wait_note(f"frame {again['msg_id']}: dropped: duplicate from cwkCoop")
    [notice] = chat.of_type(chat.transcript(), "system", "informational")
    assert notice["level"] == "warning"
    assert notice["content"] == (
        "Dropped a peer message from cwkCoop: identical to the previous message from this sender."
    )
    other_sender = chat.frame("Please review the importer.", sender="someoneElse")
    chat.send(other_sender)
    lines = chat.wait_turn_end(2)
    assert chat.peer_entries(lines, first["msg_id"])
    assert not chat.peer_entries(lines, again["msg_id"])
    assert chat.peer_entries(lines, other_sender["msg_id"])


def test_identical_body_is_taken_again_once_the_window_has_passed(start_chat) -> None:
    chat = start_chat(time_scale=SCALE)
    first = chat.frame("Please review the importer.")
    chat.send(first)
    chat.wait_note(f"frame {first['msg_id']}: accept")
    admitted = time.monotonic()  # the chat admitted it before it said so
    chat.wait_turn_end()
    time.sleep(max(0.0, admitted + 30 * SCALE + 0.05 - time.monotonic()))  # the window passes
    later = chat.frame("Please review the importer.")
    chat.send(later)
    lines = chat.wait_turn_end(2)
    assert chat.peer_entries(lines, first["msg_id"])
    assert chat.peer_entries(lines, later["msg_id"])
    assert not chat.of_type(lines, "system", "informational")


def test_only_the_last_admitted_body_counts_as_a_duplicate(start_chat) -> None:
    chat = start_chat()
    bodies = ["Body A", "Body B", "Body A"]
    frames = [chat.frame(body) for body in bodies]
    for count, frame in enumerate(frames, start=1):
        chat.send(frame)
        chat.wait_turn_end(count)
    lines = chat.transcript()
    assert all(chat.peer_entries(lines, frame["msg_id"]) for frame in frames)
    assert not chat.of_type(lines, "system", "informational")


def test_a_sender_over_its_rate_limit_is_dropped_with_a_notice(start_chat) -> None:
    chat = start_chat("--think", "0")
    frames = [chat.frame(f"Message number {n}.") for n in range(31)]
    chat.send(*frames)
    chat.wait_note(f"frame {frames[30]['msg_id']}: dropped: rate-limited from cwkCoop")
    notices = chat.wait_transcript(
        lambda lines: bool(chat.of_type(lines, "system", "informational"))
    )
    [notice] = chat.of_type(notices, "system", "informational")
    assert notice["content"] == (
        "Dropped a peer message from cwkCoop: sender exceeded the peer message rate limit."
    )


def test_frame_for_another_session_is_dropped(start_chat) -> None:
    chat = start_chat()
    frame = chat.frame("Hello.", session_id="00000000-0000-4000-8000-000000000000")
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: dropped: session_id is not this chat's")
    assert not chat.transcript_path.exists()


def test_malformed_frames_and_rude_clients_never_stop_the_chat(start_chat, sim_home) -> None:
    log = sim_home.root / "frames.log"
    chat = start_chat("--frame-log", str(log))
    good = chat.frame("Still there?")
    bad_frames = [
        {**good, "message": {"role": "user", "content": ""}},
        {**good, "message": "text"},
        {**good, "type": "assistant"},
        {key: value for key, value in good.items() if key != "session_id"},
    ]
    raw = [b"garbage\n", b"\xff\xfe\n", b"[1, 2]\n", b"[" * 100000 + b"\n", b"\n"]
    chat.send(*bad_frames, *raw, b'{"type": "user", "unterminated')
    with socket.socket(socket.AF_UNIX) as quiet:
        quiet.connect(str(chat.socket))  # connects, says nothing, hangs up
    huge = b'{"pad": "' + b"x" * (1 << 21) + b'"}\n'
    try:
        chat.send(huge)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the chat may hang up on a line over its limit
    chat.send(good)
    lines = chat.wait_turn_end()
    assert [e["origin"]["msg_id"] for e in chat.of_type(lines, "user")] == [good["msg_id"]]
    for reason in (
        "message.content is not a non-empty string",
        "type is not user",
        "no session_id",
        "not UTF-8",
        "not JSON",
        "not a JSON object",
        "unterminated last line",
    ):
        chat.wait_note(reason)
    assert chat.proc.poll() is None
    logged = log.read_bytes().split(b"\n")[:-1]
    assert logged[0] == json.dumps(bad_frames[0]).encode()
    # Connections are read side by side: the good frame's line may come before the
    # first connection's last lines.
    assert json.dumps(good).encode() in logged


def test_a_frame_with_a_non_uuid_msg_id_or_no_sender_is_still_delivered(start_chat) -> None:
    chat = start_chat()
    odd_id = {**chat.frame("An id that is not a UUID."), "msg_id": "not-a-uuid"}
    no_sender = {**chat.frame("A frame without a sender."), "from": None}
    chat.send(odd_id, no_sender)
    lines = chat.wait_turn_end()
    first, second = chat.of_type(lines, "user")
    assert "msg_id" not in first["origin"] and first["origin"]["from"] == "cwkCoop"
    assert second["origin"]["from"] == "unknown"
    assert second["origin"]["msg_id"] == no_sender["msg_id"]


def test_a_silent_open_connection_does_not_block_other_senders(start_chat) -> None:
    chat = start_chat()
    with socket.socket(socket.AF_UNIX) as idle_client:
        idle_client.connect(str(chat.socket))
        frame = chat.frame("Meanwhile, on another connection.")
        chat.send(frame)
        lines = chat.wait_turn_end()
        assert chat.peer_entries(lines, frame["msg_id"])


def test_project_folder_escapes_every_non_alphanumeric_character() -> None:
    assert project_folder_name("/Users/dad/src/my_project.v2 x") == "-Users-dad-src-my-project-v2-x"


def test_long_project_folders_are_cut_at_200_and_told_apart_by_a_hash() -> None:
    base = "/tmp/" + "deep/" * 60
    one, two = project_folder_name(base + "one"), project_folder_name(base + "two")
    assert one != two
    assert one[:200] == two[:200] == project_folder_name(base)[:200]
    assert one[200] == "-" and one[201:].isalnum()
