"""The delaying proxy (tests/netdelay.py) the ssh tests and benchmarks put between paramiko
and sshd: it delays each way, keeps bytes intact and in order, overlaps its delays, hangs
and resumes on signals, stops cleanly, and refuses to leave the loopback interface.

Timings are only checked from below (the proxy cannot beat its own delay, and load only
adds to it) or against a bound half of what a proxy that added its delays up could not
beat: no load reaches that, only the wrong proxy or a stall of seconds.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from netdelay import DelayProxy

pytestmark = pytest.mark.ssh

REPO = Path(__file__).resolve().parents[2]

# Generous: how long a test waits for bytes that should come; never a bound on speed.
PATIENCE = 30.0


class EchoServer:
    """Echoes every connection on 127.0.0.1 until EOF, then half-closes it in turn."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.closing = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return  # closed by stop()
            threading.Thread(target=self._echo, args=(connection,), daemon=True).start()

    @staticmethod
    def _echo(connection: socket.socket) -> None:
        with connection:
            try:
                while data := connection.recv(65536):
                    connection.sendall(data)
                connection.shutdown(socket.SHUT_WR)
            except OSError:
                pass  # the client went away; nothing to echo to

    def stop(self) -> None:
        self.listener.close()


@pytest.fixture
def echo() -> Iterator[EchoServer]:
    server = EchoServer()
    yield server
    server.stop()


def connect(proxy: DelayProxy) -> socket.socket:
    """A client socket through `proxy`, Nagle off so each write leaves on its own."""
    client = socket.create_connection((proxy.host, proxy.port), timeout=PATIENCE)
    client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return client


def receive(client: socket.socket, count: int) -> bytes:
    """Exactly `count` bytes from `client` (fails the test on EOF or after PATIENCE)."""
    data = bytearray()
    while len(data) < count:
        chunk = client.recv(count - len(data))
        assert chunk, f"EOF after {len(data)} of {count} bytes"
        data += chunk
    return bytes(data)


def round_trip(client: socket.socket, payload: bytes = b"x") -> float:
    """Seconds for `payload` to go through the echo and back."""
    start = time.perf_counter()
    client.sendall(payload)
    assert receive(client, len(payload)) == payload
    return time.perf_counter() - start


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_round_trip_costs_both_delays_and_bytes_keep_their_order(echo: EchoServer) -> None:
    with DelayProxy(echo.port, 0.05) as proxy, connect(proxy) as client:
        round_trip(client)  # the first one also waits for the proxy's upstream connection
        assert round_trip(client) >= 0.1

        # Many small writes, each a distinct run of bytes, so a lost, doubled or reordered
        # chunk shows up in the comparison.
        pieces = [bytes([index]) * 16 for index in range(256)]
        for piece in pieces:
            client.sendall(piece)
        assert receive(client, 16 * 256) == b"".join(pieces)


def test_a_megabyte_arrives_intact_and_eof_comes_after_it(echo: EchoServer) -> None:
    payload = os.urandom(1024 * 1024)
    with DelayProxy(echo.port, 0.05) as proxy, connect(proxy) as client:

        def send() -> None:
            # Sent from a thread while the test reads: the echo only sends back what it
            # has read, so a writer that never reads could fill every buffer on the way.
            client.sendall(payload)
            client.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        start = time.perf_counter()
        sender.start()
        received = bytearray()
        while chunk := client.recv(65536):
            received += chunk
        elapsed = time.perf_counter() - start
        sender.join()
    # EOF reached the echo through the proxy (half-close), and its EOF came back.
    assert bytes(received) == payload
    assert elapsed >= 0.1


def test_delays_overlap_rather_than_add_up(echo: EchoServer) -> None:
    delay, chunks = 0.1, 50
    with DelayProxy(echo.port, delay) as proxy, connect(proxy) as client:
        round_trip(client)  # connected all the way to the echo

        # 50 chunks, a little apart so that the proxy reads each on its own. A proxy that
        # delayed them one after another would hold the last one back at least 50 * 0.1 s
        # each way, 10 s in all; delays overlap, not add up, so it returns about one round
        # trip (0.2 s) after it was sent. The bound is half of what the serial proxy
        # cannot beat: no load reaches it, only a proxy that adds its delays up (or a
        # machine stalled for seconds, which would be a hang).
        for index in range(chunks):
            client.sendall(bytes([index]) * 8)
            time.sleep(0.002)
        last_sent = time.perf_counter()
        expected = b"".join(bytes([index]) * 8 for index in range(chunks))
        assert receive(client, chunks * 8) == expected
        after_last = time.perf_counter() - last_sent
    assert after_last < chunks * delay / 2, after_last


def test_a_hung_proxy_holds_bytes_until_it_resumes(echo: EchoServer) -> None:
    with DelayProxy(echo.port, 0.02) as proxy, connect(proxy) as client:
        round_trip(client)  # connected all the way to the echo before it hangs
        proxy.hang()
        assert proxy.hung
        client.sendall(b"ping")
        client.settimeout(0.5)
        with pytest.raises(TimeoutError):
            client.recv(4)

        proxy.resume()
        assert not proxy.hung
        client.settimeout(PATIENCE)
        assert receive(client, 4) == b"ping"
        assert round_trip(client, b"again") >= 0.04  # the same connection still works


def test_stop_is_idempotent_and_leaves_no_process(echo: EchoServer) -> None:
    proxy = DelayProxy(echo.port, 0.01)
    proxy.stop()  # before start: nothing to do
    proxy.start()
    pid = proxy.pid
    assert pid_exists(pid)
    proxy.stop()
    proxy.stop()
    assert not pid_exists(pid)

    # A hung proxy stops too: stop() resumes it before it terminates it.
    hung = DelayProxy(echo.port, 0.01).start()
    hung.hang()
    hung.stop()
    hung.stop()
    assert not pid_exists(hung.pid)


@pytest.mark.parametrize(
    "host", ["10.0.0.1", "192.168.1.1", "0.0.0.0", "::", "127.0.0.2", "localhost", "example.com"]
)
def test_only_loopback_targets_are_accepted(host: str) -> None:
    with pytest.raises(ValueError, match="loopback"):
        DelayProxy(22, 0.01, target_host=host)


def test_the_command_line_refuses_other_networks_too() -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "tests" / "netdelay.py"), "--target", "10.0.0.1:22"]
        + ["--delay", "0.01"],
        capture_output=True,
        text=True,
        timeout=PATIENCE,
    )
    assert done.returncode == 2
    assert "loopback" in done.stderr


def test_it_runs_as_a_module_from_the_repository_root(echo: EchoServer) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.netdelay", "--target", f"127.0.0.1:{echo.port}"]
        + ["--delay", "0.01"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        word, port = process.stdout.readline().split()
        assert word == "LISTENING"
        with socket.create_connection(("127.0.0.1", int(port)), timeout=PATIENCE) as client:
            assert round_trip(client, b"module") >= 0.02
    finally:
        process.terminate()
        process.wait(timeout=PATIENCE)
        assert process.stdout is not None
        process.stdout.close()
