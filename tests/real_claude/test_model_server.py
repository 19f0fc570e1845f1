"""The scripted model server on its own: the SSE stream and the worker's script."""

from __future__ import annotations

import http.client
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .model_server import ModelServer

pytestmark = pytest.mark.real_claude

BASH = [{"name": "Bash", "input_schema": {"type": "object"}}]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ModelServer]:
    script = tmp_path / "script.json"
    script.write_text("{}")
    srv = ModelServer(tmp_path / "model.log", script)
    thread = threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(5)


def post(server: ModelServer, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    conn = http.client.HTTPConnection(*server.server_address, timeout=10)
    conn.request("POST", "/v1/messages?beta=true", json.dumps({"stream": True, **body}))
    raw = conn.getresponse().read().decode()
    conn.close()
    events = []
    for block in raw.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines["event"], json.loads(lines["data"])))
    return events


def answer(events: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    start = next(d["content_block"] for e, d in events if e == "content_block_start")
    deltas = [d["delta"] for e, d in events if e == "content_block_delta"]
    stop = next(d["delta"]["stop_reason"] for e, d in events if e == "message_delta")
    if start["type"] == "tool_use":
        return {"tool": json.loads("".join(x["partial_json"] for x in deltas))["command"]}
    return {"text": "".join(x["text"] for x in deltas), "stop": stop}


def test_stream_has_the_messages_event_order(server: ModelServer) -> None:
    events = post(server, {"tools": BASH, "messages": [{"role": "user", "content": "hi"}]})
    names = [e for e, _ in events]
    assert names == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert answer(events) == {"text": "Noted.", "stop": "end_turn"}


def test_work_then_accept_an_invitation_absorbed_in_system_content(server: ModelServer) -> None:
    typed = {"role": "user", "content": "COOP_WORK 2 0.5"}
    events = post(server, {"tools": BASH, "messages": [typed]})
    assert answer(events) == {"tool": "sleep 0.5"}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    peer = {
        "role": "system",
        "content": [
            {
                "type": "text",
                "text": "Another Claude session sent a message while "
                "you were working:\nTo take it: COOP_ACCEPT n0nce",
            }
        ],
    }
    body = {"tools": BASH, "messages": [typed, call, result, peer]}
    assert answer(post(server, body)) == {"tool": "sleep 0.5"}
    body["messages"] += [call, result]
    assert answer(post(server, body))["text"].endswith("COOP_ACCEPT n0nce")


def test_work_until_a_gate_goes_on_calling_until_it_opens(
    server: ModelServer, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    typed = {"role": "user", "content": f"COOP_WORK 1 0.5 UNTIL {gate}"}
    call = {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash"}]}
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]}
    body = {"tools": BASH, "messages": [typed, call, result, call, result]}
    assert answer(post(server, body)) == {"tool": "sleep 0.5"}  # past n: the gate is shut
    gate.touch()
    assert answer(post(server, body)) == {"text": "Done.", "stop": "end_turn"}


def test_decline_when_the_script_says_so(server: ModelServer) -> None:
    assert server.script_path is not None
    server.script_path.write_text(json.dumps({"invitation": "decline"}))
    earlier = [
        {"role": "user", "content": "COOP_ACCEPT old"},
        {"role": "assistant", "content": [{"type": "text", "text": "COOP_ACCEPT old"}]},
    ]
    body = {"tools": BASH, "messages": [*earlier, {"role": "user", "content": "COOP_ACCEPT n3w"}]}
    assert answer(post(server, body))["text"].endswith("COOP_DECLINE n3w")
    log = [json.loads(line) for line in Path(server.log_path).read_text().splitlines()]
    assert log[-1]["path"] == "/v1/messages?beta=true"
