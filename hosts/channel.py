"""Speaking the helper protocol over any pair of byte streams.

`HelperClient` starts the helper through an opener (an ssh channel, a local pipe), sends
the payload and `hello`, then one JSON request line per call, and reads the answer
line. A helper that died is started again on the next call; a request it did not answer
in time ends that helper, so a late answer can never be taken for the next one.

The call that starts a helper sends its own request with the payload and `hello`, in the
same write, when the operation only reads (`PIPELINED`): the helper answers requests in
order and answers any request before a good `hello` with "hello must come first", so the
first answer costs one round trip less than hello and then the request. An operation
that writes on the Mac (a frame sent, Codex's queue changed) waits for the hello's answer
first: a Mac whose hello is not accepted here is never asked to write. Reads asked
together (`call_many`: a send's readings before its intent) go in one write likewise,
and are answered in order.

Two budgets: `timeout` for starting the helper (connecting, shipping the payload), and
`deadline` for each request after that. An operation that waits by design (the `watch`
long-poll) is given its own wait on top of the deadline.
"""

from __future__ import annotations

import json
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable

from hosts import bundle, shapes
from hosts.mac.host import OPERATIONS, Host, HostError, HostsError
from hosts.mac.native import NativeRefusal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

PROTOCOL = 1
DEFAULT_TIMEOUT = 10.0
ERROR_TAIL = 4096
# The largest answer a helper gives is a transcript read of 8 MiB or a tail of 16 MiB,
# JSON-escaped; a line longer than this is a Mac that cannot be trusted, not an answer.
LONGEST_ANSWER = 64 << 20
# The operations that only read on the Mac: the first call of a new helper sends these
# with the hello, and only these are asked together; any other waits for the hello's answer.
PIPELINED = frozenset(
    {
        "chats",
        "survey",
        "health",
        "watch",
        "target",
        "registry_entry",
        "policy_inputs",
        "transcript_position",
        "transcript_scan",
        "transcript_read",
        "transcript_tail",
        "codex_threads",
        "find_session",
        "codex_position",
        "codex_queued",
        "rollout_scan",
        "rollout_read",
        "rollout_tail",
    }
)
# Errors the helper raised that mean the caller asked wrongly, as LocalHost raises them.
CALLER_ERRORS: dict[str, type[Exception]] = {"ValueError": ValueError, "TypeError": TypeError}


class Stream(ABC):
    """One running helper: its stdin, stdout and stderr."""

    @abstractmethod
    def send(self, data: bytes, timeout: float) -> None:
        """Write all of `data`; OSError when the helper is gone or stopped reading."""

    @abstractmethod
    def recv(self, timeout: float) -> bytes:
        """Some stdout bytes; b"" at end of output; TimeoutError after `timeout`."""

    @abstractmethod
    def alive(self) -> bool:
        """Whether the helper may still answer (not exited, channel open)."""

    @abstractmethod
    def ending(self) -> str:
        """How the helper ended, for a message: exit status and its last stderr line."""

    @abstractmethod
    def close(self, broken: bool = False) -> None:
        """Stop the helper. `broken`: it misbehaved, so its connection is suspect too."""


class ErrorTail:
    """The last few kilobytes a helper wrote on stderr."""

    def __init__(self) -> None:
        self.data = b""

    def add(self, chunk: bytes) -> None:
        self.data = (self.data + chunk)[-ERROR_TAIL:]

    def last_line(self) -> str:
        lines = [line for line in self.data.decode("utf-8", "replace").splitlines() if line]
        return lines[-1].strip()[:300] if lines else ""


Opener = Callable[[int], Stream]


def waits(op: str, args: dict[str, Any]) -> float:
    """How long the operation itself waits on the Mac before answering: the long-poll's
    own timeout; nothing for any other."""
    wait = args.get("timeout") if op == "watch" else None
    return float(wait) if isinstance(wait, (int, float)) and not isinstance(wait, bool) else 0.0


class HelperClient:
    """The client side of the protocol for one Mac, safe to share between threads."""

    def __init__(
        self,
        name: str,
        opener: Opener,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float | None = None,
        codex: str | None = None,
    ) -> None:
        self.name = name
        self.opener = opener
        self.codex = codex  # the Mac's `codex` executable, when fleet.toml names one
        self.timeout = timeout
        self.deadline = deadline if deadline is not None else timeout
        self.hello: dict[str, Any] | None = None
        self._stream: Stream | None = None
        self._buffer = b""
        self._next_id = 0
        self._lock = threading.Lock()

    def call(self, op: str, args: dict[str, Any]) -> Any:
        """Answer one operation on the Mac: its result, a NativeRefusal, or HostError."""
        [answer] = self._exchange([(op, args)])
        if isinstance(answer, Exception):
            raise answer
        return answer

    def call_many(self, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Several reads (PIPELINED) sent in one write and answered in order, in one
        round trip: each its result, or the error it raised (a refusal; HostError when
        the helper could not answer it)."""
        for op, _ in requests:
            if op not in PIPELINED:
                raise ValueError(f"{op!r} is not a read: it is asked on its own")
        return self._exchange(requests)

    def _exchange(self, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Each request's result or error, the requests sent together (with the payload
        and hello too, when they start a helper and are all reads)."""
        for op, _ in requests:
            if op not in OPERATIONS:
                raise ValueError(f"unknown host operation {op!r}")  # as LocalHost, before I/O
        with self._lock:
            try:
                stream = self._stream
                if stream is None or not stream.alive():
                    together = all(op in PIPELINED for op, _ in requests)
                    stream, ids = self._start(requests if together else [])
                    if not together:
                        ids = self._send(stream, requests)
                else:
                    ids = self._send(stream, requests)
            except (HostsError, ValueError, TypeError) as error:
                return [error] * len(requests)
            return self._answers(stream, requests, ids)

    def running(self) -> bool:
        """Whether a helper is running now (the next call starts one otherwise)."""
        stream = self._stream
        return stream is not None and stream.alive()

    def close(self) -> None:
        with self._lock:
            self._drop()

    def abort(self) -> None:
        """End the helper without waiting for the request in flight (which then fails
        with a HostError in its own thread): for stopping a long-poll."""
        stream = self._stream
        if stream is not None:
            stream.close(broken=True)

    def _drop(self, broken: bool = False) -> None:
        stream, self._stream, self._buffer = self._stream, None, b""
        if stream is not None:
            stream.close(broken)

    def _start(self, first: list[tuple[str, dict[str, Any]]]) -> tuple[Stream, list[int]]:
        """A new helper: the payload, `hello` and the `first` requests sent in one
        write; the hello's answer read. The stream, and the ids `first` was sent with,
        whose answers are still to be read."""
        self._drop()
        payload = bundle.payload()
        stream = self.opener(len(payload))
        self._stream = stream
        hello: dict[str, Any] = {"name": self.name, "protocol": PROTOCOL}
        if self.codex is not None:
            hello["codex"] = self.codex
        hello_id, hello_line = self._line("hello", hello)
        lines = [self._line(op, args) for op, args in first]
        try:
            stream.send(payload + hello_line + b"".join(line for _, line in lines), self.timeout)
        except OSError:
            cause = self._died("hello", stream, starting=True)
            self._drop(broken=True)
            raise HostError(self.name, cause) from None
        try:
            self.hello = self._answer(stream, "hello", hello, hello_id, starting=True)
        except (HostsError, ValueError, TypeError):
            self._drop()  # a helper that did not take its hello answers nothing more
            raise
        return stream, [request_id for request_id, _ in lines]

    def _line(self, op: str, args: dict[str, Any]) -> tuple[int, bytes]:
        """The next request's id and its line."""
        self._next_id += 1
        line = json.dumps({"id": self._next_id, "op": op, "args": args}, separators=(",", ":"))
        return self._next_id, line.encode() + b"\n"

    def _send(self, stream: Stream, requests: list[tuple[str, dict[str, Any]]]) -> list[int]:
        """The requests' lines, in one write to a running helper; their ids."""
        lines = [self._line(op, args) for op, args in requests]
        try:
            stream.send(b"".join(line for _, line in lines), self.deadline)
        except OSError:
            cause = self._died(requests[0][0], stream, False)  # how it ended, before closing
            self._drop(broken=True)
            raise HostError(self.name, cause) from None
        return [request_id for request_id, _ in lines]

    def _answers(
        self, stream: Stream, requests: list[tuple[str, dict[str, Any]]], ids: list[int]
    ) -> list[Any]:
        """The answers to requests sent on `stream`, in order; once the helper is ended
        (a broken answer, no answer), the requests after get that error too."""
        answers: list[Any] = []
        ended: HostError | None = None
        for (op, args), request_id in zip(requests, ids, strict=True):
            if ended is not None:
                answers.append(ended)
                continue
            try:
                answers.append(self._answer(stream, op, args, request_id))
            except (HostsError, ValueError, TypeError) as error:
                answers.append(error)
                if self._stream is not stream and isinstance(error, HostError):
                    ended = error
        return answers

    def _answer(
        self,
        stream: Stream,
        op: str,
        args: dict[str, Any],
        request_id: int,
        starting: bool = False,
    ) -> Any:
        """The answer to the request `request_id` sent on `stream`: its result checked,
        a refusal, or HostError."""
        budget = self.timeout if starting else self.deadline + waits(op, args)
        reply = self._read_reply(stream, op, starting, budget)
        if reply.get("id") != request_id:
            self._drop(broken=True)
            raise HostError(self.name, f"helper answered request {reply.get('id')}, not {op}")
        if reply.get("ok") is True:
            try:
                return shapes.check(op, reply.get("result"))
            except shapes.Malformed as wrong:
                self._drop(broken=True)
                raise HostError(
                    self.name, f"helper's answer to {op} is malformed: {wrong}"
                ) from None
        error = reply.get("error")
        raise self._failure(op, error if isinstance(error, dict) else {})

    def _read_reply(self, stream: Stream, op: str, starting: bool, budget: float) -> dict[str, Any]:
        deadline = time.monotonic() + budget
        while True:
            while b"\n" not in self._buffer and len(self._buffer) <= LONGEST_ANSWER:
                self._buffer += self._receive(stream, op, starting, deadline, budget)
            raw, _, self._buffer = self._buffer.partition(b"\n")
            if len(raw) > LONGEST_ANSWER:
                self._drop(broken=True)
                raise HostError(
                    self.name, f"helper's answer to {op} exceeded {LONGEST_ANSWER >> 20} MiB"
                )
            try:
                reply = json.loads(raw)
            except (ValueError, RecursionError):
                reply = None
            if isinstance(reply, dict):
                return reply
            # Before the helper's first answer a login shell's start-up files may print;
            # after it, anything but an answer means the stream can no longer be trusted.
            if not starting:
                self._drop(broken=True)
                raise HostError(
                    self.name, f"helper sent something that is not an answer: {raw[:80]!r}"
                )

    def _receive(
        self, stream: Stream, op: str, starting: bool, deadline: float, budget: float
    ) -> bytes:
        try:
            chunk = stream.recv(max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self._drop(broken=True)
            what = "the helper to start" if starting else f"an answer to {op}"
            raise HostError(self.name, f"timed out after {budget:g}s waiting for {what}") from None
        except OSError:
            chunk = b""
        if not chunk:
            cause = self._died(op, stream, starting)
            self._drop()
            raise HostError(self.name, cause)
        return chunk

    def _died(self, op: str, stream: Stream, starting: bool) -> str:
        if starting:
            return f"helper did not start ({stream.ending()})"
        return f"helper crashed during {op} ({stream.ending()})"

    def _failure(self, op: str, error: dict[str, Any]) -> Exception:
        message = str(error.get("message"))
        if error.get("kind") == "refusal":
            detail = error.get("detail")
            return NativeRefusal(message, detail if isinstance(detail, str) else None)
        caller_error = CALLER_ERRORS.get(str(error.get("type")))
        if caller_error is not None:
            return caller_error(message)
        return HostError(self.name, f"{op} failed on the Mac: {error.get('type')}: {message}")


class HelperHost(Host):
    """A Mac answered by a helper through `client`. Its long-poll runs on a second helper
    opened the same way (over ssh, a second channel on the one Transport), so a request
    never waits behind a `watch`."""

    def __init__(self, name: str, client: HelperClient) -> None:
        self.name = name
        self.client = client

    def call(self, op: str, **args: Any) -> Any:
        return self.client.call(op, args)

    def read_together(self, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        return self.client.call_many(requests)

    def long_poller(self) -> Host:
        client = self.client
        return HelperHost(
            self.name,
            HelperClient(self.name, client.opener, client.timeout, client.deadline, client.codex),
        )

    def close(self) -> None:
        self.client.close()

    def abort(self) -> None:
        self.client.abort()
