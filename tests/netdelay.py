"""A delaying TCP proxy on the loopback interface, in its own process.

This machine's kernel has no netem, yet the ssh tests and benchmarks need ordinary network
round trips between paramiko and a real sshd on 127.0.0.1, and a "Mac that hangs". The
proxy gives both: every byte it carries, in each direction, arrives `delay` seconds after
it was read, and because it is a separate process, SIGSTOP of its pid freezes exactly the
links that pass through it while their connections stay open.

Run it from the repository root as a module or as a script:

    python -m tests.netdelay --listen 127.0.0.1:0 --target 127.0.0.1:2222 --delay 0.02
    python tests/netdelay.py --listen 127.0.0.1:0 --target 127.0.0.1:2222 --delay 0.02

It binds, prints one line `LISTENING <port>`, and serves until it is killed. Tests use
`DelayProxy`, which runs that process and talks to it through signals only.

Only 127.0.0.1 and ::1 are accepted, for listening and for the target: these tests must
never touch another network.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import math
import os
import selectors
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from enum import Enum
from pathlib import Path
from types import TracebackType

# What `DelayProxy` runs. The script path works from any working directory and needs no
# package: tests/ has no __init__.py, and the proxy imports only the standard library.
SCRIPT = Path(__file__).resolve()

LOOPBACK = (ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1"))

# Bytes one direction may hold before the proxy stops reading from its source. The cap only
# bounds memory when the far side does not read; it is far above the bandwidth-delay
# product of any loopback test (it limits throughput to 16 MiB per `delay`).
QUEUE_CAP = 16 * 1024 * 1024

# How long `DelayProxy.start` waits for the LISTENING line, and `stop` for the process to
# exit after SIGTERM before it uses SIGKILL.
START_TIMEOUT = 10.0
STOP_TIMEOUT = 5.0


def loopback_host(host: str) -> str:
    """Return `host` (brackets removed) if it is 127.0.0.1 or ::1; raise ValueError for any
    other address or for a name."""
    bare = host.strip("[]")
    try:
        address = ipaddress.ip_address(bare)
    except ValueError:
        address = None
    if address not in LOOPBACK:
        raise ValueError(
            f"netdelay only uses the loopback addresses 127.0.0.1 and ::1, not {host!r}: "
            "the tests must never touch other networks"
        )
    return bare


def parse_endpoint(text: str) -> tuple[str, int]:
    """Split `HOST:PORT` or `[V6HOST]:PORT` into a loopback host and a port in 0..65535;
    raise ValueError if either is anything else."""
    host, colon, port_text = text.rpartition(":")
    if not colon or not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"expected HOST:PORT, got {text!r}")
    return loopback_host(host), int(port_text)


def _endpoint(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _nodelay(transport: asyncio.BaseTransport) -> None:
    # Each delayed chunk must leave as soon as it is due, not wait for Nagle to batch it.
    sock = transport.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


class _Mark(Enum):
    """What a direction carries besides data: the source's EOF, or its close or reset."""

    EOF = "eof"
    CLOSE = "close"


class _Direction:
    """One direction of one proxied connection: what side `index` sends reaches the other
    side `delay` seconds after it was read, in order.

    The queue holds (due time, item) in read order; since due times only grow, its head is
    always the next thing due, and one loop timer (the event loop's heap of due times) for
    the head is all a direction needs. Chunks read while earlier ones wait queue behind
    them, so delays overlap instead of adding up.
    """

    def __init__(self, link: _Link, index: int) -> None:
        self.link = link
        self.index = index
        self.queue: deque[tuple[float, bytes | _Mark]] = deque()
        self.queued_bytes = 0
        self.timer: asyncio.TimerHandle | None = None
        self.sink_full = False
        self.eof_delivered = False

    def push(self, item: bytes | _Mark) -> None:
        """Queue data (or EOF, CLOSE) to be delivered `delay` seconds from now."""
        loop = self.link.loop
        self.queue.append((loop.time() + self.link.delay, item))
        if isinstance(item, bytes):
            self.queued_bytes += len(item)
            self.update_reading()
        if self.timer is None:
            self.timer = loop.call_at(self.queue[0][0], self._deliver)

    def discard(self) -> None:
        """Forget everything queued: its destination is gone."""
        self.queue.clear()
        self.queued_bytes = 0
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def set_sink_full(self, full: bool) -> None:
        """Record whether the destination's write buffer is over its high-water mark."""
        self.sink_full = full
        self.update_reading()

    def update_reading(self) -> None:
        """Read from the source only while there is room: the destination keeps up and this
        direction holds less than QUEUE_CAP."""
        source = self.link.transports[self.index]
        if source is None or not self.link.connected or source.is_closing():
            return
        wanted = not self.sink_full and self.queued_bytes < QUEUE_CAP
        if wanted and not source.is_reading():
            source.resume_reading()
        elif not wanted and source.is_reading():
            source.pause_reading()

    def _deliver(self) -> None:
        self.timer = None
        # The timer was set for the head, and asyncio may run it a clock tick early, so the
        # head is due; so is everything queued behind it with the same or an earlier time.
        limit = max(self.link.loop.time(), self.queue[0][0])
        sink = self.link.transports[1 - self.index]
        while self.queue and self.queue[0][0] <= limit:
            _, item = self.queue.popleft()
            if sink is None:
                continue
            if isinstance(item, bytes):
                self.queued_bytes -= len(item)
                sink.write(item)
            elif item is _Mark.EOF:
                if sink.can_write_eof():
                    try:
                        sink.write_eof()
                    except OSError:
                        pass  # the far side is gone already: nothing left to half-close
                self.eof_delivered = True
                self.link.closed_both_ways()
            else:
                sink.close()
        if self.queue:
            self.timer = self.link.loop.call_at(self.queue[0][0], self._deliver)
        self.update_reading()


class _Side(asyncio.Protocol):
    """One socket of a proxied connection: 0 is the accepted client, 1 the target."""

    def __init__(self, link: _Link, index: int) -> None:
        self.link = link
        self.index = index

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        _nodelay(transport)
        self.link.attached(self.index, transport)

    def data_received(self, data: bytes) -> None:
        self.link.directions[self.index].push(data)

    def eof_received(self) -> bool:
        self.link.directions[self.index].push(_Mark.EOF)
        # Keep the transport open: the other direction may still carry data (half-close).
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.lost(self.index)

    def pause_writing(self) -> None:
        self.link.directions[1 - self.index].set_sink_full(True)

    def resume_writing(self) -> None:
        self.link.directions[1 - self.index].set_sink_full(False)


class _Link:
    """One accepted connection and its own upstream connection to the target."""

    def __init__(self, loop: asyncio.AbstractEventLoop, target: tuple[str, int], delay: float):
        self.loop = loop
        self.target = target
        self.delay = delay
        self.transports: list[asyncio.Transport | None] = [None, None]
        self.directions = (_Direction(self, 0), _Direction(self, 1))
        self.connected = False
        self.gone = [False, False]
        self.task: asyncio.Task[None] | None = None

    def attached(self, index: int, transport: asyncio.Transport) -> None:
        self.transports[index] = transport
        if index == 0:
            # Nothing read from the client could go anywhere before the target answers.
            transport.pause_reading()
            self.task = self.loop.create_task(self._connect())

    async def _connect(self) -> None:
        try:
            await self.loop.create_connection(lambda: _Side(self, 1), *self.target)
        except OSError as error:
            print(f"netdelay: cannot reach {_endpoint(*self.target)}: {error}", file=sys.stderr)
            client = self.transports[0]
            if client is not None:
                client.close()
            return
        if self.gone[0]:
            upstream = self.transports[1]
            if upstream is not None:
                upstream.close()
            return
        self.connected = True
        self.directions[0].update_reading()

    def closed_both_ways(self) -> None:
        """Once each side's EOF has reached the other, nothing more can flow: close both."""
        if all(direction.eof_delivered for direction in self.directions):
            for transport in self.transports:
                if transport is not None:
                    transport.close()

    def lost(self, index: int) -> None:
        """Side `index` is closed or reset: close the other side after the delay, as a real
        link would, and drop what was on its way to the closed side."""
        self.gone[index] = True
        self.transports[index] = None
        self.directions[1 - index].discard()
        other = self.transports[1 - index]
        if other is not None and not other.is_closing():
            self.directions[index].push(_Mark.CLOSE)
        else:
            self.directions[index].discard()


class _StdinWatch(asyncio.Protocol):
    """Ends the proxy when its stdin reaches EOF, i.e. when the process that started it is
    gone, so an abandoned proxy never outlives its test run."""

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done = done

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def serve(
    listen: tuple[str, int], target: tuple[str, int], delay: float, watch_stdin: bool
) -> None:
    """Listen on `listen`, print `LISTENING <port>` once bound, and proxy every accepted
    connection to `target` with `delay` seconds each way; return only when `watch_stdin`
    is set and stdin reaches EOF."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: _Side(_Link(loop, target, delay), 0), *listen, reuse_address=True
    )
    port = server.sockets[0].getsockname()[1]
    print(f"LISTENING {port}", flush=True)
    done: asyncio.Future[None] = loop.create_future()
    if watch_stdin:
        await loop.connect_read_pipe(lambda: _StdinWatch(done), sys.stdin)
    async with server:
        await done


def main(argv: list[str] | None = None) -> int:
    """The command line: parse, refuse non-loopback addresses (exit status 2), serve."""
    parser = argparse.ArgumentParser(description="A delaying TCP proxy on the loopback interface.")
    parser.add_argument("--listen", default="127.0.0.1:0", help="HOST:PORT (default %(default)s)")
    parser.add_argument("--target", required=True, help="HOST:PORT to forward to")
    parser.add_argument("--delay", type=float, required=True, help="seconds, one way")
    parser.add_argument("--watch-stdin", action="store_true", help="exit when stdin reaches EOF")
    args = parser.parse_args(argv)
    try:
        listen = parse_endpoint(args.listen)
        target = parse_endpoint(args.target)
        if target[1] == 0:
            raise ValueError("the target needs a port")
        if not (math.isfinite(args.delay) and args.delay >= 0):
            raise ValueError(f"--delay must be a finite number of seconds >= 0: {args.delay}")
    except ValueError as error:
        parser.error(str(error))
    try:
        asyncio.run(serve(listen, target, args.delay, args.watch_stdin))
    except KeyboardInterrupt:
        return 130
    return 0


class DelayProxy:
    """A netdelay process between a test and a loopback server.

    `DelayProxy(port, 0.02).start()` forwards connections on 127.0.0.1:`proxy.port` to
    127.0.0.1:`port` with 20 ms each way (40 ms more per round trip). Listening happens on
    the target's address, so a ::1 target gets a ::1 proxy; `host` says which.
    """

    def __init__(self, target_port: int, delay: float, target_host: str = "127.0.0.1") -> None:
        """Check the target and the delay (ValueError for a non-loopback address, a port
        outside 1..65535 or a delay that is negative or not finite); nothing runs yet."""
        self.host = loopback_host(target_host)
        if not 0 < target_port <= 65535:
            raise ValueError(f"target_port must be in 1..65535, not {target_port}")
        if not (math.isfinite(delay) and delay >= 0):
            raise ValueError(f"delay must be a finite number of seconds >= 0, not {delay}")
        self.target_port = target_port
        self.delay = delay
        self._process: subprocess.Popen[bytes] | None = None
        self._port: int | None = None
        self._hung = False
        self._stopped = False

    @property
    def port(self) -> int:
        """The port the proxy listens on (after `start`)."""
        if self._port is None:
            raise RuntimeError("DelayProxy is not started")
        return self._port

    @property
    def pid(self) -> int:
        """The proxy process's pid (after `start`)."""
        if self._process is None:
            raise RuntimeError("DelayProxy is not started")
        return self._process.pid

    @property
    def hung(self) -> bool:
        """Whether the proxy is stopped by `hang` and not yet resumed."""
        return self._hung

    def start(self) -> DelayProxy:
        """Run the proxy process and return once it listens; raise RuntimeError if it exits
        or does not listen within START_TIMEOUT seconds (the process is then stopped)."""
        if self._process is not None:
            raise RuntimeError("DelayProxy.start runs once")
        command = [
            sys.executable,
            str(SCRIPT),
            "--listen",
            _endpoint(self.host, 0),
            "--target",
            _endpoint(self.host, self.target_port),
            "--delay",
            repr(self.delay),
            # The stdin pipe closes when this process ends, however it ends, and the proxy
            # then exits with it.
            "--watch-stdin",
        ]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self._port = self._await_listening(self._process)
        except BaseException:
            self.stop()
            raise
        return self

    @staticmethod
    def _await_listening(process: subprocess.Popen[bytes]) -> int:
        assert process.stdout is not None
        deadline = time.monotonic() + START_TIMEOUT
        line = b""
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            while not line.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not selector.select(left):
                    raise RuntimeError(f"netdelay did not listen within {START_TIMEOUT} s")
                # One os.read at a time: a buffered read could wait for more than is there.
                chunk = os.read(process.stdout.fileno(), 256)
                if not chunk:
                    code = process.wait()
                    raise RuntimeError(f"netdelay exited with status {code} before listening")
                line += chunk
        word, _, port = line.decode().strip().partition(" ")
        if word != "LISTENING" or not port.isdigit():
            raise RuntimeError(f"netdelay printed {line!r}, not LISTENING <port>")
        return int(port)

    def hang(self) -> None:
        """SIGSTOP the proxy and return once it is stopped: its links pass no more bytes,
        and their connections stay open (the kernel keeps the sockets)."""
        process = self._running()
        if self._hung:
            # A second waitpid would wait for a stop that already happened, forever.
            return
        process.send_signal(signal.SIGSTOP)
        # Wait for the stop itself, so that nothing a test sends after hang() can still be
        # read and forwarded by a proxy that had not stopped yet.
        _, status = os.waitpid(process.pid, os.WUNTRACED)
        if not os.WIFSTOPPED(status):
            # waitpid reaped it instead: tell Popen, which can no longer wait for it.
            process.returncode = os.waitstatus_to_exitcode(status)
            raise RuntimeError(f"netdelay exited with status {process.returncode}")
        self._hung = True

    def resume(self) -> None:
        """SIGCONT the proxy: bytes that waited while it was hung now flow, late by the
        time it was stopped."""
        self._running().send_signal(signal.SIGCONT)
        self._hung = False

    def _running(self) -> subprocess.Popen[bytes]:
        if self._process is None or self._stopped:
            raise RuntimeError("DelayProxy is not running")
        if self._process.poll() is not None:
            raise RuntimeError(f"netdelay exited with status {self._process.returncode}")
        return self._process

    def stop(self) -> None:
        """End the proxy (resumed first if hung, then SIGTERM, SIGKILL after STOP_TIMEOUT s)
        and reap it, so its pid is gone when this returns. Safe to call more than once and
        before `start`."""
        process = self._process
        if process is None or self._stopped:
            return
        self._stopped = True
        # A stopped process only acts on SIGTERM once it runs again.
        process.send_signal(signal.SIGCONT)
        self._hung = False
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout):
            if pipe is not None:
                pipe.close()

    def __enter__(self) -> DelayProxy:
        return self.start()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


if __name__ == "__main__":
    sys.exit(main())
