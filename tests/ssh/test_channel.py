"""The helper protocol itself, over in-memory streams: what the client does when the
helper answers, refuses, dies, hangs or prints something else."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hosts import bundle
from hosts.channel import PIPELINED, HelperClient, Stream
from hosts.mac.helper import Helper
from hosts.mac.host import OPERATIONS, HostError
from hosts.mac.native import NativeRefusal

pytestmark = pytest.mark.ssh


class MemoryStream(Stream):
    """A helper answered in this process; `script` bends its behaviour per request."""

    def __init__(self, length: int, script: dict[str, str], before: bytes = b"") -> None:
        self.skip = length  # the payload comes first and is not a request
        self.helper = Helper()
        self.script = script
        self.out = before
        self.closed: list[bool] = []
        self.dead = False
        self.flooding = 0  # bytes of one answer line still to send: 65 MiB, then its end
        self.requests: list[dict] = []
        # What crossed the stream, in order: each write's ops ("payload" for the
        # payload), and "answer" for each read that waited for the helper.
        self.turns: list[str] = []

    def send(self, data: bytes, timeout: float) -> None:
        if self.dead:
            raise BrokenPipeError
        dropped = min(self.skip, len(data))
        self.skip -= dropped
        ops = ["payload"] if dropped else []
        for raw in data[dropped:].splitlines():
            if self.dead:
                break  # a dead helper reads no more
            request = json.loads(raw)
            self.requests.append(request)
            ops.append(request["op"])
            action = self.script.get(request["op"])
            if action == "die":
                self.dead = True
            elif action == "garbage":
                self.out += b"Traceback? no: this is not JSON\n"
            elif action == "flood":
                self.flooding = 65 << 20
            elif action == "deep":
                self.out += b'{"id": %d, "ok": true, "result": ' % request["id"]
                self.out += b"[" * 200_000 + b"]" * 200_000 + b"}\n"
            elif action == "misshapen":
                chats = [{"session_id": "x", "pid": "12", "live": True, "entry": {}}]
                answer = {"id": request["id"], "ok": True, "result": {"chats": chats}}
                self.out += json.dumps(answer).encode() + b"\n"
            elif action != "hang":
                self.out += self.helper.respond(raw)
        self.turns.append("+".join(ops))

    def recv(self, timeout: float) -> bytes:
        if self.turns[-1] != "answer":
            self.turns.append("answer")
        if self.out:  # the answers to earlier requests come first, as a helper's do
            chunk, self.out = self.out[:7], self.out[7:]  # answers arrive in pieces
            return chunk
        if self.flooding:
            size = min(self.flooding, 1 << 20)
            self.flooding -= size
            return b"x" * size + (b"" if self.flooding else b"\n")
        if self.dead:
            return b""
        raise TimeoutError

    def alive(self) -> bool:
        return not self.dead and not self.closed

    def ending(self) -> str:
        return "exit status 137: Killed"

    def close(self, broken: bool = False) -> None:
        self.closed.append(broken)


class Opener:
    def __init__(self, script: dict[str, str] | None = None, before: bytes = b"") -> None:
        self.script = script or {}
        self.before = before
        self.streams: list[MemoryStream] = []

    def __call__(self, length: int) -> Stream:
        assert length == len(bundle.payload())
        stream = MemoryStream(length, self.script, self.before)
        self.streams.append(stream)
        return stream


def test_the_first_request_is_hello_with_the_macs_name_then_each_op_once() -> None:
    opener = Opener()
    client = HelperClient("lap top; $(id)", opener, timeout=1)
    assert client.call("health", {})["host"] == "lap top; $(id)"
    client.call("chats", {"with_policy": False})
    (stream,) = opener.streams
    assert [r["op"] for r in stream.requests] == ["hello", "health", "chats"]
    assert stream.requests[0]["args"]["name"] == "lap top; $(id)"
    assert [r["id"] for r in stream.requests] == [1, 2, 3]


def test_the_call_that_starts_a_helper_sends_its_read_with_the_payload_and_hello_at_once() -> None:
    """One round trip to the first answer, not two: the request does not wait for the
    hello's answer (the helper answers in order, and nothing before a good hello)."""
    opener = Opener()
    client = HelperClient("laptop", opener, timeout=1)
    assert client.call("chats", {"with_policy": True})["chats"] == []
    assert client.hello is not None and client.hello["host"] == "laptop"
    client.call("health", {})
    (stream,) = opener.streams
    assert stream.turns == ["payload+hello+chats", "answer", "health", "answer"]


def test_a_write_that_starts_a_helper_waits_for_the_hellos_answer() -> None:
    """A Mac whose hello was not taken here is never asked to write: a frame to send goes
    only after the hello's answer was read and accepted."""
    opener = Opener()
    client = HelperClient("laptop", opener, timeout=1)
    expected = {"pid": 1, "birth": "0", "socket_path": "/nowhere", "socket_inode": 1}
    sent = client.call("send_frame", {"expected": expected, "session_id": "nobody", "line": "{}"})
    assert sent["written"] is False
    (stream,) = opener.streams
    assert stream.turns[:3] == ["payload+hello", "answer", "send_frame"]
    assert set(PIPELINED) <= set(OPERATIONS)
    assert not PIPELINED & {"send_frame", "codex_queue_add", "codex_queue_delete"}


def test_a_read_sent_with_a_refused_hello_is_not_answered_and_the_helper_is_ended() -> None:
    opener = Opener()
    client = HelperClient("", opener, timeout=1)  # a hello the helper refuses
    with pytest.raises(HostError, match="hello failed on the Mac: BadRequest"):
        client.call("chats", {})
    (stream,) = opener.streams
    assert stream.turns[0] == "payload+hello+chats"
    assert stream.helper.host is None  # the chats request was never run
    assert stream.closed == [False]


def test_reads_asked_together_go_in_one_write_and_each_gets_its_own_answer() -> None:
    opener = Opener()
    client = HelperClient("laptop", opener, timeout=1)
    client.call("health", {})
    target, health = client.call_many([("target", {"session_id": "nobody"}), ("health", {})])
    assert isinstance(target, NativeRefusal) and target.detail == "no registry entry"
    assert health["host"] == "laptop"
    (stream,) = opener.streams
    assert stream.turns == ["payload+hello+health", "answer", "target+health", "answer"]


def test_a_write_is_never_asked_together() -> None:
    opener = Opener()
    client = HelperClient("laptop", opener, timeout=1)
    with pytest.raises(ValueError, match="not a read"):
        client.call_many([("health", {}), ("codex_queue_add", {})])
    assert opener.streams == []


def test_reads_asked_together_after_a_helper_died_mid_answer_all_fail_with_its_cause() -> None:
    opener = Opener({"chats": "die"})
    client = HelperClient("laptop", opener, timeout=1)
    answers = client.call_many([("health", {}), ("chats", {}), ("health", {})])
    assert answers[0]["host"] == "laptop"
    assert [str(a) for a in answers[1:]] == [
        "laptop: helper crashed during chats (exit status 137: Killed)"
    ] * 2


def test_a_refusal_on_the_mac_is_a_native_refusal_here_with_its_detail() -> None:
    client = HelperClient("laptop", Opener(), timeout=1)
    with pytest.raises(NativeRefusal) as refused:
        client.call("target", {"session_id": "nobody"})
    assert refused.value.detail == "no registry entry"


def test_a_helper_that_dies_during_a_request_is_a_host_error_and_restarts_next_time() -> None:
    opener = Opener({"chats": "die"})
    client = HelperClient("laptop", opener, timeout=1)
    client.call("health", {})
    with pytest.raises(HostError) as failed:
        client.call("chats", {})
    assert failed.value.host == "laptop"
    assert failed.value.cause == "helper crashed during chats (exit status 137: Killed)"
    opener.script.clear()
    assert client.call("health", {})["host"] == "laptop"
    assert len(opener.streams) == 2


def test_a_request_not_answered_in_time_ends_that_helper_so_no_late_answer_is_misread() -> None:
    opener = Opener({"chats": "hang"})
    client = HelperClient("laptop", opener, timeout=0.2)
    with pytest.raises(HostError, match=r"timed out after 0.2s waiting for an answer to chats"):
        client.call("chats", {})
    assert opener.streams[0].closed == [True]
    opener.script.clear()
    client.call("chats", {})
    assert len(opener.streams) == 2


def test_something_other_than_an_answer_ends_the_helper() -> None:
    opener = Opener({"chats": "garbage"})
    client = HelperClient("laptop", opener, timeout=1)
    with pytest.raises(HostError, match="helper sent something that is not an answer"):
        client.call("chats", {})
    assert opener.streams[0].closed == [True]


@pytest.mark.parametrize(
    ("action", "said"),
    [
        ("flood", "helper's answer to chats exceeded 64 MiB"),
        ("deep", "helper sent something that is not an answer"),
        ("misshapen", "helper's answer to chats is malformed: chats.chats[0].pid is str, not int"),
    ],
)
def test_a_hostile_answer_is_one_host_error_and_the_helper_is_ended(action: str, said: str) -> None:
    """A Mac that floods, nests without end or answers the wrong shape is unreachable
    with one reason; the next request starts a fresh helper."""
    opener = Opener({"chats": action})
    client = HelperClient("laptop", opener, timeout=5)
    with pytest.raises(HostError) as failed:
        client.call("chats", {})
    assert failed.value.cause.startswith(said), failed.value.cause
    assert opener.streams[0].closed == [True]
    opener.script.clear()
    assert client.call("chats", {})["chats"] == []
    assert len(opener.streams) == 2


def test_lines_a_login_shell_prints_before_the_helper_starts_are_skipped() -> None:
    client = HelperClient("laptop", Opener(before=b"Welcome to the laptop\n\n"), timeout=1)
    assert client.call("health", {})["host"] == "laptop"


def test_an_unknown_operation_is_refused_before_any_helper_starts() -> None:
    opener = Opener()
    with pytest.raises(ValueError):
        HelperClient("laptop", opener).call("exec", {"command": "id"})
    assert opener.streams == []


def test_the_helper_answers_bad_lines_and_goes_on() -> None:
    helper = Helper()
    assert json.loads(helper.respond(b"not json"))["error"]["message"].startswith("bad request")
    assert json.loads(helper.respond(b"[1]"))["error"]["type"] == "BadRequest"
    early = json.loads(helper.respond(b'{"id": 1, "op": "health", "args": {}}'))
    assert early == {
        "id": 1,
        "ok": False,
        "error": {
            "kind": "error",
            "message": "bad request: hello must come first",
            "detail": None,
            "type": "BadRequest",
        },
    }


def test_the_bootstrap_line_is_fixed_and_carries_only_the_payloads_length() -> None:
    length = len(bundle.payload())
    assert bundle.bootstrap_command(length) == (
        f"python3 -I -u -c 'import sys;exec(sys.stdin.buffer.read({length}))'"
    )


def test_the_payload_runs_the_helper_with_nothing_but_the_standard_library(tmp_path) -> None:
    # An isolated interpreter in an empty folder: no repository, no site-packages.
    payload = bundle.payload()
    requests = b'{"id":1,"op":"hello","args":{"name":"m"}}\n{"id":2,"op":"health","args":{}}\n'
    done = subprocess.run(
        bundle.bootstrap_argv(len(payload), python=sys.executable),
        input=payload + requests,
        capture_output=True,
        cwd=tmp_path,
        env={"CLAUDE_CONFIG_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"},
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    hello, health = (json.loads(line) for line in done.stdout.splitlines())
    assert hello["result"]["config_dir"] == str(tmp_path)
    assert health["result"]["chats_registered"] == 0
    assert b"import paramiko" not in payload  # the office's ssh code stays home


def test_a_helper_that_cannot_start_says_how_it_ended() -> None:
    from hosts.pipe import PipeHost

    host = PipeHost("laptop", python="/bin/false")
    with pytest.raises(HostError) as failed:
        host.health()
    assert failed.value.cause.startswith("helper did not start (exit status 1")
    missing = PipeHost("laptop", python="/nonexistent/python3")
    with pytest.raises(HostError, match="cannot start the helper"):
        missing.health()
