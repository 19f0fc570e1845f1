"""A scripted stand-in for the Anthropic Messages API, for the real Claude Code offline.

Run as a program inside the chat's network namespace:

    python model_server.py --port-file PATH --log PATH [--script PATH]

It binds 127.0.0.1 on a free port, writes the port to ``--port-file`` and serves until
killed. ``POST /v1/messages`` answers as a scripted worker (streamed server-sent events
when the request asks for a stream, one JSON message otherwise):

- ``COOP_WORK <n> [<seconds>] [UNTIL <path>]`` in the turn's input: run ``n`` Bash tool
  calls ``sleep <seconds>`` (default 1) one after another before answering, so that a
  frame can arrive mid-turn; with ``UNTIL``, go on calling until ``path`` exists (a test
  opens that gate once what had to happen mid-turn has happened).
- ``COOP_SLOW <seconds>`` in the turn's input: stream the answer slowly over that many
  seconds, without tool calls (a chat busy without tool calls).
- ``COOP_ACCEPT <token>`` in the turn's input (an invitation asks for it): the final
  answer ends with ``COOP_ACCEPT <token>``, or ``COOP_DECLINE <token>`` when the script
  file says ``{"invitation": "decline"}``; ``"silent"`` answers without either.
- Otherwise a plain answer.

The turn's input is everything the chat sent since the model's last final answer (an
assistant message without tool calls): typed prompts, tool results, and peer messages,
which may ride in trailing text blocks or system-role content. The script file
(JSON, optional, re-read on every request) lets a test change the invitation answer
while the server runs. Every request is logged as one JSON line.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ACCEPT_ASK = re.compile(r"COOP_ACCEPT\s+([A-Za-z0-9_\-]+)")
WORK_ASK = re.compile(r"COOP_WORK\s+(\d+)(?:\s+(\d+(?:\.\d+)?))?(?:\s+UNTIL\s+(\S+))?")
SLOW_ASK = re.compile(r"COOP_SLOW\s+(\d+(?:\.\d+)?)")
MODEL = "claude-sonnet-4-5"


def _texts(content: Any) -> list[str]:
    """Every piece of text inside a message's content, tool results included."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                out.append(block["text"])
            if "content" in block:
                out.extend(_texts(block["content"]))
    return out


def _is_final(message: dict[str, Any]) -> bool:
    content = message.get("content")
    if message.get("role") != "assistant":
        return False
    if isinstance(content, list):
        return not any(isinstance(b, dict) and b.get("type") == "tool_use" for b in content)
    return True


def turn_input(body: dict[str, Any]) -> tuple[str, int]:
    """The text sent since the last final answer, and the tool calls made since then."""
    messages = body.get("messages") or []
    start = 0
    for i, message in enumerate(messages):
        if isinstance(message, dict) and _is_final(message):
            start = i + 1
    texts: list[str] = []
    tool_calls = 0
    for message in messages[start:]:
        if not isinstance(message, dict):
            continue
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, list):
                tool_calls += sum(
                    1 for b in content if isinstance(b, dict) and b.get("type") == "tool_use"
                )
            continue
        texts.extend(_texts(message.get("content")))
    return "\n".join(texts), tool_calls


def is_main_loop(body: dict[str, Any]) -> bool:
    """Whether the request is the chat's own conversation (it offers the Bash tool)."""
    tools = body.get("tools") or []
    return any(isinstance(t, dict) and t.get("name") == "Bash" for t in tools)


def _gate_closed(gate: str | None) -> bool:
    return gate is not None and not Path(gate).exists()


def plan(body: dict[str, Any], script: dict[str, Any]) -> dict[str, Any]:
    """What to answer: {"tool": command} or {"text": ..., "slow": seconds}."""
    text, tool_calls = turn_input(body)
    if not is_main_loop(body):
        return {"text": "Coop test chat", "slow": 0.0}
    work = WORK_ASK.search(text)
    if work and (tool_calls < int(work.group(1)) or _gate_closed(work.group(3))):
        seconds = work.group(2) or "1"
        return {"tool": f"sleep {seconds}"}
    slow = SLOW_ASK.search(text)
    answer = "Done." if work else "Noted."
    asks = ACCEPT_ASK.findall(text)
    if asks:
        token = asks[-1]
        choice = script.get("invitation", "accept")
        if choice == "accept":
            answer = f"I will take it. COOP_ACCEPT {token}"
        elif choice == "decline":
            answer = f"Not this one. COOP_DECLINE {token}"
        else:
            answer = "I read the invitation."
    return {"text": answer, "slow": float(slow.group(1)) if slow else 0.0}


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            parsed = json.loads(raw or b"{}")
        except ValueError:
            parsed = {"_raw": raw.decode("utf-8", "replace")}
        return parsed if isinstance(parsed, dict) else {"_raw": parsed}

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.server.log({"method": "GET", "path": self.path})
        path = self.path.split("?")[0]
        if path.startswith("/v1/models"):
            self._json(200, {"data": [{"type": "model", "id": MODEL, "display_name": MODEL}]})
        else:
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = self._body()
        path = self.path.split("?")[0]
        if path == "/v1/messages/count_tokens":
            self.server.log({"method": "POST", "path": self.path})
            chars = len(json.dumps(body.get("messages", "")))
            self._json(200, {"input_tokens": max(1, chars // 4)})
            return
        if path != "/v1/messages":
            self.server.log({"method": "POST", "path": self.path, "body": body})
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        answer = plan(body, self.server.script())
        self.server.log(
            {"method": "POST", "path": self.path, "answer": answer, "body": body},
        )
        if body.get("stream"):
            self._stream(answer)
        else:
            self._json(200, self._message(answer))

    def _message(self, answer: dict[str, Any]) -> dict[str, Any]:
        block: dict[str, Any]
        if "tool" in answer:
            block = {
                "type": "tool_use",
                "id": f"toolu_{uuid.uuid4().hex[:24]}",
                "name": "Bash",
                "input": {"command": answer["tool"], "description": "Wait a moment"},
            }
        else:
            block = {"type": "text", "text": answer["text"]}
        return {
            "id": f"msg_{uuid.uuid4().hex[:24]}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [block],
            "stop_reason": "tool_use" if "tool" in answer else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }

    def _stream(self, answer: dict[str, Any]) -> None:
        message = self._message(answer)
        block = message["content"][0]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.send_header("request-id", f"req_{uuid.uuid4().hex[:24]}")
        self.end_headers()
        self.close_connection = True
        head = {**message, "content": [], "stop_reason": None}
        head["usage"] = {"input_tokens": 10, "output_tokens": 1}
        self.wfile.write(_sse("message_start", {"type": "message_start", "message": head}))
        if block["type"] == "tool_use":
            start = {**block, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": json.dumps(block["input"])}]
        else:
            start = {"type": "text", "text": ""}
            words = re.findall(r"\S+\s*", block["text"]) or [block["text"]]
            deltas = [{"type": "text_delta", "text": w} for w in words]
        self.wfile.write(
            _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": start},
            )
        )
        pause = float(answer.get("slow") or 0.0) / max(1, len(deltas))
        for delta in deltas:
            if pause:
                self.wfile.write(_sse("ping", {"type": "ping"}))
                self.wfile.flush()
                time.sleep(pause)
            self.wfile.write(
                _sse(
                    "content_block_delta",
                    {"type": "content_block_delta", "index": 0, "delta": delta},
                )
            )
            self.wfile.flush()
        self.wfile.write(_sse("content_block_stop", {"type": "content_block_stop", "index": 0}))
        self.wfile.write(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        self.wfile.write(_sse("message_stop", {"type": "message_stop"}))
        self.wfile.flush()


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log_path: Path, script_path: Path | None) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log_path = log_path
        self.script_path = script_path
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def script(self) -> dict[str, Any]:
        if self.script_path is None:
            return {}
        try:
            value = json.loads(self.script_path.read_text())
        except (OSError, ValueError):
            return {}
        return value if isinstance(value, dict) else {}

    def log(self, record: dict[str, Any]) -> None:
        record = {"seq": next(self._seq), "at": time.time(), **record}
        with self._lock, self.log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    parser.add_argument("--script", type=Path)
    args = parser.parse_args(argv)
    server = ModelServer(args.log, args.script)
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.replace(args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
