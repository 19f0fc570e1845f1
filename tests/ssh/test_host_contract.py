"""One suite, three ways to ask a Mac: LocalHost in-process, PipeHost through the helper
over pipes, SshHost through the helper over real OpenSSH. Each test states what every
Host answers; `host_on` runs it once per implementation against the same chats."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from typing import Any

import pytest
from fleet_macs import Mac
from simchats import turn_over
from waiting import wait_until

from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.mac.native import RECEIVER_CHANGED, NativeRefusal, frame
from hosts.sim.launch import SimChat

pytestmark = pytest.mark.ssh


def send(host: Host, session_id: str, text: str) -> tuple[str, dict[str, Any]]:
    """Target, then send one frame through `host`; the outbox id and the host's answer."""
    outbox_id = str(uuid.uuid4())
    pinned = host.target(session_id)
    line = frame(session_id, outbox_id, text).decode()
    return outbox_id, host.send_frame(pinned, session_id, line)


def probe(chat: SimChat) -> str:
    """A line of our own written straight to the chat's socket, once the chat has read
    it: whatever reached that socket before the probe was read before it."""
    marker = json.dumps({"probe": str(uuid.uuid4())})
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(30)
        sock.connect(str(chat.socket))
        sock.sendall(marker.encode() + b"\n")
    wait_until(lambda: json.loads(marker) in chat.frames(), "the probe read by the chat")
    return marker


def truth(mac: Mac) -> LocalHost:
    """The laptop asked in-process, to compare every implementation with."""
    return LocalHost("laptop", config_dir=mac.config_dir, codex_home=mac.codex_home)


def test_chats_lists_each_entry_with_liveness_socket_verdict_and_policy_inputs(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat("--name", "importer-worker")
    listing = host_on.chats(with_policy=True)
    assert listing["host"] == "laptop" and listing["skipped"] == []
    (seen,) = listing["chats"]
    assert (seen["session_id"], seen["pid"], seen["name"]) == (
        chat.session_id,
        chat.pid,
        "importer-worker",
    )
    assert (seen["host"], seen["live"], seen["socket"], seen["status"]) == (
        "laptop",
        True,
        "ok",
        "idle",
    )
    assert (
        seen["policy_inputs"] == truth(laptop).chats(with_policy=True)["chats"][0]["policy_inputs"]
    )
    assert "policy_inputs" not in host_on.chats()["chats"][0]


def test_chats_reports_registry_files_it_skipped_and_why(host_on: Host, laptop: Mac) -> None:
    sessions = laptop.config_dir / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "4242.json").write_text("{torn")
    listing = host_on.chats()
    assert listing["chats"] == []
    assert listing["skipped"] == [{"file": "4242.json", "reason": "torn or not JSON after 5 reads"}]


def test_target_answers_the_four_facts_of_the_one_live_chat(host_on: Host, laptop: Mac) -> None:
    chat = laptop.chat()
    facts = host_on.target(chat.session_id)
    assert facts == {
        "pid": chat.pid,
        "birth": facts["birth"],
        "socket_path": str(chat.socket),
        "socket_inode": os.stat(chat.socket).st_ino,
    }
    assert facts == truth(laptop).target(chat.session_id)


def test_target_of_a_session_no_chat_has_is_a_refusal_with_its_detail(
    host_on: Host, laptop: Mac
) -> None:
    with pytest.raises(NativeRefusal) as refused:
        host_on.target("0badc0de-0000-4000-8000-000000000000")
    assert str(refused.value) == "No live chat with session 0badc0de-0000-4000-8000-000000000000"
    assert refused.value.detail == "no registry entry"


def test_send_frame_writes_exactly_the_one_line_after_its_own_registry_read(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat()
    outbox_id, result = send(host_on, chat.session_id, "Please look at the importer")
    assert result["ok"] is True and result["written"] is True and result["stage"] == "done"
    (received,) = wait_until(chat.frames, "the frame received")
    assert received["msg_id"] == outbox_id and received["session_id"] == chat.session_id
    assert received["message"]["content"] == "Please look at the importer"


def test_send_frame_refuses_a_registry_rewritten_after_the_engines_reads(
    host_on: Host, laptop: Mac
) -> None:
    chat, other = laptop.chat(), laptop.chat()
    pinned = host_on.target(chat.session_id)
    chat.rewrite_entry(messagingSocketPath=str(other.socket))
    line = frame(chat.session_id, str(uuid.uuid4()), "work").decode()
    result = host_on.send_frame(pinned, chat.session_id, line)
    assert result == {"ok": False, "written": False, "stage": "verify", "error": RECEIVER_CHANGED}
    # Each socket read a probe sent after the refusal, and nothing before it.
    for receiver in (chat, other):
        marker = probe(receiver)
        assert receiver.frames() == [json.loads(marker)]


def test_registry_entry_is_the_live_entry_or_none(host_on: Host, laptop: Mac) -> None:
    chat = laptop.chat("--name", "reader")
    entry = host_on.registry_entry(chat.session_id)
    assert entry is not None and entry["pid"] == chat.pid and entry["name"] == "reader"
    assert host_on.registry_entry("not-a-session") is None


def test_policy_inputs_are_read_where_the_chat_lives(host_on: Host, laptop: Mac) -> None:
    chat = laptop.chat("--permission-mode", "acceptEdits")
    inputs = host_on.policy_inputs(chat.session_id)
    assert inputs == truth(laptop).policy_inputs(chat.session_id)
    assert inputs["cmdline_readable"] is True and inputs["cmdline_mode"] == "acceptEdits"
    with pytest.raises(NativeRefusal):
        host_on.policy_inputs("not-a-session")


def test_transcript_position_scan_read_and_tail_follow_byte_offsets(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat()
    before = host_on.transcript_position(chat.session_id)
    outbox_id, _ = send(host_on, chat.session_id, "Say hello")
    wait_until(
        lambda: chat.transcript.exists() and outbox_id in chat.transcript.read_text(),
        "the frame in the transcript",
    )
    position = host_on.transcript_position(chat.session_id)
    assert position["path"] == str(chat.transcript) and position["size"] > before["size"]
    scan = host_on.transcript_scan(chat.session_id, before["size"], [outbox_id], position["inode"])
    assert scan["rotated"] is False and scan["lines"]
    assert all(outbox_id in text for _, text in scan["lines"])
    first_offset = scan["lines"][0][0]
    read = host_on.transcript_read(chat.session_id, first_offset, 1 << 20)
    assert read["lines"][0] == scan["lines"][0] and read["start"] == first_offset
    tail = host_on.transcript_tail(chat.session_id, 1 << 20)
    assert tail["size"] >= position["size"]
    assert any(outbox_id in text for _, text in tail["lines"])
    again = truth(laptop).transcript_scan(
        chat.session_id, before["size"], [outbox_id], position["inode"]
    )
    assert again["lines"][: len(scan["lines"])] == scan["lines"]  # the chat writes on


def test_find_session_counts_the_live_chats_carrying_an_id(host_on: Host, laptop: Mac) -> None:
    chat = laptop.chat()
    found = host_on.find_session("claude", chat.session_id)
    assert (found["host"], found["matches"], found["pids"]) == ("laptop", 1, [chat.pid])
    assert host_on.find_session("claude", "nobody")["matches"] == 0


def test_codex_threads_and_find_session_read_the_macs_codex_home(
    host_on: Host, laptop: Mac
) -> None:
    made = subprocess.run(
        [
            sys.executable,
            "-m",
            "hosts.sim",
            "codex",
            "--codex-home",
            str(laptop.codex_home),
            "--name",
            "refactor importer",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    thread_id = json.loads(made.stdout)["thread_id"]
    listing = host_on.codex_threads()
    assert listing == json.loads(json.dumps(truth(laptop).codex_threads()))
    (thread,) = listing["threads"]
    assert (thread["id"], thread["name"]) == (thread_id, "refactor importer")
    assert host_on.find_session("codex", thread_id)["matches"] == 1


def test_health_counts_live_and_registered_chats(host_on: Host, laptop: Mac) -> None:
    laptop.chat()
    gone = laptop.chat()
    gone.kill()  # its entry lingers, as a crashed chat's does
    health = host_on.health()
    assert (health["host"], health["chats_live"], health["chats_registered"]) == ("laptop", 1, 2)


def test_an_unknown_operation_or_argument_is_the_callers_error(host_on: Host) -> None:
    with pytest.raises(ValueError, match="unknown host operation 'rm -rf'"):
        host_on.call("rm -rf")
    with pytest.raises(TypeError):
        host_on.call("health", surprise=1)


def test_answers_are_json_values_equal_to_what_the_mac_answers_in_process(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat("--name", "same")
    local = truth(laptop)
    for op, args in [
        ("chats", {"with_policy": True}),
        ("target", {"session_id": chat.session_id}),
        ("registry_entry", {"session_id": chat.session_id}),
        ("transcript_position", {"session_id": chat.session_id}),
        ("transcript_tail", {"session_id": chat.session_id, "max_bytes": 4096}),
    ]:
        answer = host_on.call(op, **args)
        assert answer == json.loads(json.dumps(local.call(op, **args))), op


def test_a_socket_opened_to_group_is_refused_on_the_mac(host_on: Host, laptop: Mac) -> None:
    chat = laptop.chat()
    os.chmod(chat.socket, 0o660)
    with pytest.raises(NativeRefusal, match="Native socket ownership or permissions changed"):
        host_on.target(chat.session_id)


# --- the pass's survey and the long-poll --------------------------------------------------


def envelope_reading(chat: Any, outbox_id: str, offset: int, *needles: str) -> dict[str, Any]:
    return {
        "id": outbox_id,
        "session_id": chat.session_id,
        "offset": offset,
        "inode": None,
        "needles": [outbox_id, *needles],
    }


def test_a_survey_answers_the_registry_and_each_envelopes_sightings_in_one_request(
    host_on: Host, laptop: Mac
) -> None:
    chat, other = laptop.chat("--name", "worker"), laptop.chat()
    before = host_on.transcript_position(chat.session_id)["size"]
    outbox_id, _ = send(host_on, chat.session_id, "Survey me")
    wait_until(
        lambda: chat.transcript.exists() and outbox_id in chat.transcript.read_text(),
        "the frame in the transcript",
    )
    answer = host_on.survey(None, [envelope_reading(chat, outbox_id, before)])
    assert answer["full"] is True and answer["gone"] == []
    assert sorted(c["session_id"] for c in answer["chats"]) == sorted(
        [chat.session_id, other.session_id]
    )
    seen = answer["sightings"][outbox_id]
    assert seen["lines"] and all(outbox_id in text for _, text in seen["lines"])
    assert seen["end"] > before and answer["more"] is False
    assert answer["watch"]["paths"][0] == str(laptop.config_dir / "sessions")
    assert str(chat.transcript) in answer["watch"]["paths"]
    assert answer["codex"] is None  # not asked for


def test_a_survey_after_the_last_cursor_carries_only_what_changed(
    host_on: Host, laptop: Mac
) -> None:
    chat, other = laptop.chat(), laptop.chat()
    first = host_on.survey(None, [])
    unchanged = host_on.survey(first["cursor"], [])
    assert (unchanged["full"], unchanged["chats"], unchanged["gone"]) == (False, [], [])
    other.kill()
    wait_until(
        lambda: truth(laptop).registry_entry(other.session_id) is None, "the killed chat not live"
    )
    after = host_on.survey(unchanged["cursor"], [])
    changed = {c["session_id"]: c for c in after["chats"]}
    assert chat.session_id not in changed
    assert str(other.pid) in after["gone"] or changed[other.session_id]["live"] is False
    # A cursor that is not this helper's last (another office's, an old one): everything.
    stale = host_on.survey(first["cursor"], [])
    assert stale["full"] is True and chat.session_id in {c["session_id"] for c in stale["chats"]}


def test_a_survey_asked_for_codex_tells_its_list_only_when_it_changed(
    host_on: Host, laptop: Mac
) -> None:
    first = host_on.survey(None, [], "")
    assert first["codex"]["threads"] == truth(laptop).codex_threads()
    again = host_on.survey(first["cursor"], [], first["codex"]["digest"])
    assert again["codex"] == {"digest": first["codex"]["digest"], "threads": None}


def test_a_survey_refuses_envelopes_it_cannot_read(host_on: Host) -> None:
    for bad in ([{"id": "x"}], [{"id": "x", "session_id": "s", "offset": -1, "needles": ["x"]}]):
        with pytest.raises(ValueError):
            host_on.survey(None, bad)


def test_the_long_poll_answers_when_a_watched_transcript_grows_and_not_before(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat()
    outbox_id, _ = send(host_on, chat.session_id, "Wake the long-poll")
    turn_over(chat, outbox_id)  # nothing more to write: the quiet watch below is quiet
    surveyed = host_on.survey(None, [envelope_reading(chat, outbox_id, 0)])
    paths, digest = surveyed["watch"]["paths"], surveyed["watch"]["digest"]
    poller = host_on.long_poller()
    try:
        quiet = poller.watch(paths, digest, 0.5)
        assert quiet["changed"] is False and quiet["digest"] == digest
        answers: list[dict[str, Any]] = []
        waiting = threading.Thread(target=lambda: answers.append(poller.watch(paths, digest, 20)))
        waiting.start()
        time.sleep(0.2)
        # The long-poll waits on its own connection: the Mac's other requests go on.
        assert host_on.health()["chats_live"] == 1 and waiting.is_alive()
        with chat.transcript.open("a") as transcript:
            transcript.write('{"type":"system","note":"appended"}\n')
        waiting.join(20)
        assert answers and answers[0]["changed"] is True
    finally:
        poller.close()


def test_a_survey_that_changes_what_is_watched_wakes_the_long_poll_on_the_old_paths(
    host_on: Host, laptop: Mac
) -> None:
    chat = laptop.chat()
    name = uuid.uuid4().hex
    idle = host_on.survey(None, [], None, name)
    watch_file = idle["watch"]["paths"][-1]
    assert watch_file.endswith(f"{name}.watch") and json.loads(open(watch_file).read()) == [
        str(laptop.config_dir / "sessions")
    ]
    poller = host_on.long_poller()
    try:
        answers: list[dict[str, Any]] = []
        paths, digest = idle["watch"]["paths"], idle["watch"]["digest"]
        waiting = threading.Thread(target=lambda: answers.append(poller.watch(paths, digest, 20)))
        waiting.start()
        time.sleep(0.2)
        outbox_id, _ = send(host_on, chat.session_id, "Now watch my transcript")
        wait_until(chat.transcript.exists, "the transcript written")
        host_on.survey(idle["cursor"], [envelope_reading(chat, outbox_id, 0)], None, name)
        waiting.join(20)
        assert answers and answers[0]["changed"] is True
    finally:
        poller.close()


def test_the_long_poll_tells_of_a_chat_that_died_though_no_file_changed(
    host_on: Host, laptop: Mac
) -> None:
    chat, _ = laptop.chat(), laptop.chat()
    surveyed = host_on.survey(None, [])
    paths, digest = surveyed["watch"]["paths"], surveyed["watch"]["digest"]
    poller = host_on.long_poller()
    try:
        assert poller.watch(paths, digest, 0.3)["changed"] is False
        chat.kill()  # its registry entry stays, as after a crash
        assert chat.registry.exists()
        wait_until(
            lambda: truth(laptop).registry_entry(chat.session_id) is None,
            "the killed chat not live",
        )
        assert poller.watch(paths, digest, 0.3)["changed"] is True
    finally:
        poller.close()
