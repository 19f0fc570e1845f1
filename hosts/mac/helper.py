"""The program Coop runs on a fleet Mac, standard library only.

It reads one JSON request per line on stdin, `{"id": n, "op": ..., "args": {...}}`, and
answers each with one line on stdout: `{"id": n, "ok": true, "result": ...}` or
`{"id": n, "ok": false, "error": {"kind": "refusal" | "error", "message", "detail",
"type"}}`. The first request is `hello` with this Mac's fleet name; every other
operation is a `LocalHost` operation answered here, where the chat lives. It exits at
end of input.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hosts.mac.host import OPERATIONS
from hosts.mac.local import LocalHost
from hosts.mac.native import NativeRefusal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

PROTOCOL = 1


class BadRequest(Exception):
    """A request line that is not a request; answered, never fatal."""


def host_from_environment(name: str, codex: str | None = None) -> LocalHost:
    """The LocalHost this Mac's environment describes (CLAUDE_CONFIG_DIR, CODEX_HOME),
    with the `codex` executable fleet.toml names for it (else the one on PATH)."""
    home = os.environ.get("CODEX_HOME")
    return LocalHost(name, codex_home=Path(home).expanduser() if home else None, codex=codex)


def _error(
    kind: str, message: str, detail: str | None = None, type_: str | None = None
) -> dict[str, Any]:
    return {"kind": kind, "message": message, "detail": detail, "type": type_}


class Helper:
    """Answers requests one at a time with a LocalHost named by `hello`."""

    def __init__(self) -> None:
        self.host: LocalHost | None = None

    def hello(self, args: dict[str, Any]) -> dict[str, Any]:
        name = args.get("name")
        if not isinstance(name, str) or not name:
            raise BadRequest("hello needs this Mac's name")
        codex = args.get("codex")
        if codex is not None and (not isinstance(codex, str) or not codex):
            raise BadRequest("hello's codex names an executable")
        self.host = host_from_environment(name, codex)
        return {
            "protocol": PROTOCOL,
            "host": name,
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "platform": sys.platform,
            "config_dir": str(self.host.config_dir),
        }

    def run(self, op: str, args: dict[str, Any]) -> Any:
        if op == "hello":
            return self.hello(args)
        if op not in OPERATIONS:
            raise ValueError(f"unknown host operation {op!r}")
        if self.host is None:
            raise BadRequest("hello must come first")
        return self.host.call(op, **args)

    def respond(self, raw: bytes) -> bytes:
        """One answer line for one request line, whatever the line holds."""
        request_id: Any = None
        try:
            request = json.loads(raw)
            if not isinstance(request, dict):
                raise BadRequest("a request is a JSON object")
            request_id = request.get("id")
            op, args = request.get("op"), request.get("args", {})
            if not isinstance(request_id, int) or not isinstance(op, str):
                raise BadRequest("a request has an integer id and a string op")
            if not isinstance(args, dict):
                raise BadRequest("args is a JSON object")
            reply: dict[str, Any] = {"id": request_id, "ok": True, "result": self.run(op, args)}
            line = json.dumps(reply, separators=(",", ":"))
        except NativeRefusal as refusal:
            error = _error("refusal", str(refusal), refusal.detail)
            line = json.dumps({"id": request_id, "ok": False, "error": error})
        except BadRequest as problem:
            error = _error("error", f"bad request: {problem}", type_="BadRequest")
            line = json.dumps({"id": request_id, "ok": False, "error": error})
        except json.JSONDecodeError as problem:
            error = _error("error", f"bad request: not JSON: {problem}", type_="BadRequest")
            line = json.dumps({"id": request_id, "ok": False, "error": error})
        except Exception as failure:  # one failed operation must not end the session
            error = _error("error", str(failure), type_=type(failure).__name__)
            line = json.dumps({"id": request_id, "ok": False, "error": error})
        return line.encode("ascii") + b"\n"


def serve(stdin: BinaryIO, stdout: BinaryIO) -> None:
    """Answer every request line until end of input."""
    helper = Helper()
    try:
        for raw in iter(stdin.readline, b""):
            if raw.strip():
                stdout.write(helper.respond(raw))
                stdout.flush()
    finally:
        if helper.host is not None:
            helper.host.close()  # its runtime files (a long-poll's watch list) go with it


def main() -> None:
    # The bootstrap read the payload through sys.stdin.buffer, which may hold the first
    # requests already: keep reading through that same object.
    stdin = sys.stdin.buffer
    stdout = open(sys.stdout.fileno(), "wb", closefd=False)  # noqa: SIM115
    # Anything printed by accident goes to stderr, never into the answers.
    sys.stdout = sys.stderr
    try:
        serve(stdin, stdout)
    except BrokenPipeError:
        pass  # Coop went away; nobody is left to answer


if __name__ == "__main__":
    main()
