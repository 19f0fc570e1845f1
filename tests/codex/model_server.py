"""A scripted stand-in for the OpenAI Responses API, for the real Codex CLI offline.

Run as a program inside the CLI's loopback-only network namespace:

    python model_server.py --port-file PATH --log PATH

It binds 127.0.0.1 on a free port, writes the port to ``--port-file`` (atomically) and
serves until killed. ``POST /v1/responses`` answers every turn with one assistant
message, streamed as server-sent events (``response.created``, the message item added,
its text delta, the item done, ``response.completed``). ``GET /v1/models`` answers an
empty catalogue. Every request is logged as one JSON line (path and, for posts, the
request's ``input`` item types), so a test can tell the CLI really asked.
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

ANSWER = "Noted."
# An invitation's instruction, as Coop's prompt words it: the scripted model takes it.
INVITATION = re.compile(r"end your reply with: COOP_ACCEPT ([A-Za-z0-9]+)")
STALL = "COOP-STALL"  # a prompt holding this is never answered (a turn that hangs)
STALL_SECONDS = 600


def answer_for(body: dict[str, Any]) -> str | None:
    """The reply to the last user message: an invitation is accepted with its nonce;
    a stalled prompt gets none (None)."""
    users = [
        item
        for item in body.get("input") or []
        if isinstance(item, dict) and item.get("role") == "user"
    ]
    parts = users[-1].get("content") if users else None
    said = "".join(str(part.get("text") or "") for part in parts or [] if isinstance(part, dict))
    if STALL in said:
        return None
    invited = INVITATION.search(said)
    return f"I will take it.\n\nCOOP_ACCEPT {invited.group(1)}" if invited else ANSWER


def _sse(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()


def turn_events(model: str, text: str) -> list[dict[str, Any]]:
    """The event sequence of one streamed response holding one assistant message."""
    response_id = f"resp_{uuid.uuid4().hex}"
    item_id = f"msg_{uuid.uuid4().hex}"
    item = {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    usage = {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 2,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 12,
    }
    head = {"id": response_id, "object": "response", "model": model, "status": "in_progress"}
    return [
        {"type": "response.created", "response": head},
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "status": "in_progress", "content": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": item_id,
            "output_index": 0,
            "content_index": 0,
            "delta": text,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item},
        {
            "type": "response.completed",
            "response": {**head, "status": "completed", "output": [item], "usage": usage},
        },
    ]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.server.log({"method": "GET", "path": path})
        if path.endswith("/models"):
            self._json(200, {"models": [], "data": []})
        else:
            self._json(404, {"error": {"message": "not found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        path = self.path.split("?")[0]
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {}
        if not isinstance(body, dict):
            body = {}
        inputs = body.get("input")
        kinds = (
            [i.get("type") for i in inputs if isinstance(i, dict)]
            if isinstance(inputs, list)
            else []
        )
        self.server.log({"method": "POST", "path": path, "input_types": kinds})
        if not path.endswith("/responses"):
            self._json(404, {"error": {"message": "not found"}})
            return
        text = answer_for(body)
        if text is None:
            time.sleep(STALL_SECONDS)  # the turn never ends; the holder may be killed
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        for event in turn_events(str(body.get("model") or "coop-test-model"), text):
            self.wfile.write(_sse(event))
        self.wfile.flush()


class ModelServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, log_path: Path) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.log_path = log_path
        self._lock = threading.Lock()
        self._seq = itertools.count(1)

    def log(self, record: dict[str, Any]) -> None:
        record = {"seq": next(self._seq), "at": time.time(), **record}
        with self._lock, self.log_path.open("a") as f:
            f.write(json.dumps(record) + "\n")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--port-file", type=Path, required=True)
    parser.add_argument("--log", type=Path, required=True)
    args = parser.parse_args(argv)
    server = ModelServer(args.log)
    tmp = args.port_file.with_name(args.port_file.name + ".tmp")
    tmp.write_text(str(server.server_address[1]))
    tmp.replace(args.port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
