"""What an accepting simulated chat writes: shape 1 (idle), shape 2 (busy), and finals."""

from __future__ import annotations

import json
import os
import signal

from hosts.sim.process import proc_start

INVITE = (
    "Coop invites you to todo #273: Fix the flaky importer test.\n"
    "To take it, end your reply with: COOP_ACCEPT n7Qk2xVb9"
)
GUIDANCE_START = "\n</cross-session-message>\n\n"


def test_idle_receiver_starts_a_turn_with_a_peer_entry_shape_1(start_chat) -> None:
    chat = start_chat()
    frame = chat.frame(INVITE)
    chat.send(frame)
    lines = chat.wait_turn_end()
    kinds = [(e["type"], e.get("operation") or e.get("subtype")) for e in lines]
    assert kinds == [
        ("permission-mode", None),
        ("queue-operation", "enqueue"),
        ("queue-operation", "dequeue"),
        ("user", None),
        ("assistant", None),
        ("system", "turn_duration"),
    ]
    assert lines[0]["permissionMode"] == "auto"
    [entry] = chat.peer_entries(lines, frame["msg_id"])
    assert entry["type"] == "user" and entry["isMeta"] is True
    assert entry["promptSource"] == "system" and entry["turnOrigin"] == "peer"
    assert entry["permissionMode"] == "auto"
    assert entry["uuid"] != frame["uuid"]  # re-minted: not a host-named socket
    assert entry["origin"] == {
        "kind": "peer",
        "from": "cwkCoop",
        "verifiedPeerPid": os.getpid(),
        "verifiedPeerProcStart": proc_start(os.getpid()),
        "msg_id": frame["msg_id"],
    }
    content = entry["message"]["content"]
    assert content.startswith(
        'Another Claude session sent a message:\n<cross-session-message from="cwkCoop">\n'
    )
    assert INVITE + GUIDANCE_START in content
    assert len(content.split(GUIDANCE_START)[1]) > 40  # one paragraph of guidance
    for key, value in {
        "isSidechain": False,
        "userType": "external",
        "sessionId": chat.session_id,
        "version": "2.1.328",
        "entrypoint": "cli",
    }.items():
        assert entry[key] == value
    assert entry["timestamp"].endswith("Z")
    assert lines[1]["commandUuid"] == lines[2]["commandUuid"] == entry["uuid"]
    assistant = lines[4]
    assert assistant["parentUuid"] == entry["uuid"]
    assert assistant["message"]["stop_reason"] is None
    assert chat.finals(lines) == ["I will take it. COOP_ACCEPT n7Qk2xVb9"]
    chat.wait_status("idle")


def test_host_named_socket_keeps_the_frame_uuid(start_chat, sim_home) -> None:
    host_socket = sim_home.root / "host" / "inbox.sock"
    chat = start_chat("--messaging-socket-path", str(host_socket))
    assert chat.socket == host_socket
    assert chat.registry()["messagingSocketPath"] == str(host_socket)
    frame = chat.frame("Please look at the importer.")
    chat.send(frame)
    lines = chat.wait_turn_end()
    [entry] = chat.peer_entries(lines, frame["msg_id"])
    assert entry["uuid"] == frame["uuid"]
    assert chat.finals(lines) == ["On it."]


def test_busy_receiver_absorbs_the_frame_mid_turn_shape_2(start_chat) -> None:
    chat = start_chat("--busy", "--busy-seconds", "0.5")
    assert chat.registry()["status"] == "busy"
    chat.wait_transcript(lambda lines: bool(chat.of_type(lines, "assistant")))
    frame = chat.frame(INVITE)
    chat.send(frame)
    lines = chat.wait_turn_end()
    ops = chat.of_type(lines, "queue-operation")
    assert [op["operation"] for op in ops] == ["enqueue", "remove"]
    remove = ops[1]
    assert remove["reason"] == "absorbed_mid_turn"
    minted = remove["commandUuid"]
    assert minted not in (frame["msg_id"], frame["uuid"])
    [attached] = chat.peer_entries(lines, frame["msg_id"])
    assert attached["type"] == "attachment" and attached["isMeta"] is True
    body = attached["attachment"]
    assert body["type"] == "queued_command"
    assert body["source_uuid"] == minted
    assert body["isMeta"] is True and body["commandMode"] == "prompt"
    assert body["origin"]["kind"] == "peer" and body["origin"]["from"] == "cwkCoop"
    assert body["origin"]["verifiedPeerPid"] == os.getpid()
    assert INVITE in body["prompt"]
    # The turn goes on with more tool calls after the absorption, then its final.
    after = lines[lines.index(attached) :]
    tool_uses = [
        e
        for e in chat.of_type(after, "assistant")
        if e["message"]["content"][0]["type"] == "tool_use"
    ]
    assert len(tool_uses) >= 2
    [final] = chat.finals(lines)
    assert "COOP_ACCEPT n7Qk2xVb9" in final
    # The turn began with the human's typed prompt; the rest are tool results.
    typed, *results = chat.of_type(lines, "user")
    assert typed["promptSource"] == "typed"
    assert all(e["message"]["content"][0]["type"] == "tool_result" for e in results)
    chat.wait_status("idle")


def test_sigusr2_starts_a_tool_turn_that_absorbs_a_frame(start_chat) -> None:
    chat = start_chat()
    chat.kill(signal.SIGUSR2)
    chat.wait_transcript(lambda lines: bool(chat.of_type(lines, "assistant")))
    frame = chat.frame("While you are at it, check the exporter too.")
    chat.send(frame)
    lines = chat.wait_turn_end()
    [attached] = chat.peer_entries(lines, frame["msg_id"])
    assert attached["type"] == "attachment"
    [final] = chat.finals(lines)
    assert "COOP_ACCEPT" not in final


def test_answer_decline_declines_and_never_accepts(start_chat) -> None:
    chat = start_chat("--answer", "decline")
    chat.send(chat.frame(INVITE))
    [final] = chat.finals(chat.wait_turn_end())
    assert "COOP_DECLINE n7Qk2xVb9" in final
    assert "COOP_ACCEPT" not in final


def test_answer_silent_mentions_neither(start_chat) -> None:
    chat = start_chat("--answer", "silent")
    chat.send(chat.frame(INVITE))
    [final] = chat.finals(chat.wait_turn_end())
    assert final and "COOP_ACCEPT" not in final and "COOP_DECLINE" not in final


def test_two_frames_on_one_connection_make_two_turns_in_order(start_chat, sim_home) -> None:
    log = sim_home.root / "frames.log"
    chat = start_chat("--frame-log", str(log))
    first = chat.frame("First: COOP_ACCEPT tokenOne")
    second = chat.frame("Second, no invitation here.")
    chat.send(first, second)
    lines = chat.wait_turn_end(2)
    assert chat.finals(lines) == ["I will take it. COOP_ACCEPT tokenOne", "On it."]
    logged = [json.loads(line)["msg_id"] for line in log.read_text().splitlines()]
    assert logged == [first["msg_id"], second["msg_id"]]


def test_lose_frames_receiver_reads_the_frame_and_writes_nothing(start_chat, sim_home) -> None:
    log = sim_home.root / "lost.log"
    chat = start_chat("--lose-frames", "--frame-log", str(log))
    frame = chat.frame(INVITE)
    chat.send(frame)
    chat.wait_note(f"frame {frame['msg_id']}: lost")
    assert json.loads(log.read_text())["msg_id"] == frame["msg_id"]
    assert not chat.transcript_path.exists()
    assert chat.registry()["status"] == "idle"


def test_a_frame_during_a_turn_without_tool_calls_waits_for_a_new_turn(start_chat) -> None:
    chat = start_chat("--think", "0.4")
    first = chat.frame("First message.")
    chat.send(first)
    chat.wait_transcript(lambda lines: bool(chat.peer_entries(lines, first["msg_id"])))
    second = chat.frame("Second message: COOP_ACCEPT tok2")
    chat.send(second)
    lines = chat.wait_turn_end(2)
    ops = [(e["operation"], e["commandUuid"]) for e in chat.of_type(lines, "queue-operation")]
    first_id = chat.peer_entries(lines, first["msg_id"])[0]["uuid"]
    second_id = chat.peer_entries(lines, second["msg_id"])[0]["uuid"]
    # The second is queued on arrival, mid-turn, and dequeued only when the first ends.
    assert ops == [
        ("enqueue", first_id),
        ("dequeue", first_id),
        ("enqueue", second_id),
        ("dequeue", second_id),
    ]
    [second_entry] = chat.peer_entries(lines, second["msg_id"])
    assert second_entry["type"] == "user"
    first_end = lines.index(chat.of_type(lines, "system", "turn_duration")[0])
    assert lines.index(second_entry) > first_end
    assert chat.finals(lines) == ["On it.", "I will take it. COOP_ACCEPT tok2"]
