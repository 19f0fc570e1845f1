"""SshHost: a fleet Mac reached over ssh, answering through the helper.

One paramiko Transport per Mac, kept and reused (keepalive on); on it one session
channel runs the helper, started by the fixed bootstrap line with the payload on stdin,
and every operation is one JSON line each way on that channel. A dead helper is started
again on the same Transport; a dead Transport is opened again. After a failed connect
the Mac is not tried again for its timeout, so a pass that asks a sleeping laptop many
questions waits for it once.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import paramiko

from hosts import bundle
from hosts.channel import DEFAULT_TIMEOUT, ErrorTail, HelperClient, HelperHost, Stream
from hosts.mac.host import HostError
from hosts.sshconnect import connect, resolve

KEEPALIVE_SECONDS = 15
# recv waits in slices so stderr is drained meanwhile; data wakes it at once.
RECV_SLICE = 0.2
EXIT_STATUS_WAIT = 0.2


@contextmanager
def channel_errors() -> Iterator[None]:
    """paramiko's failures on a channel as the OSError every Stream raises."""
    try:
        yield
    except paramiko.SSHException as error:
        raise OSError(str(error)) from None
    except EOFError:
        # The connection's socket is shut while the channel still looks open: the
        # Transport was closed by another thread (a long-poll that timed out).
        raise OSError("ssh connection lost") from None


class ChannelStream(Stream):
    """The helper's stdin, stdout and stderr on one ssh session channel."""

    def __init__(self, transport: paramiko.Transport, channel: paramiko.Channel) -> None:
        self.transport = transport
        self.channel = channel
        self.errors = ErrorTail()

    def _drain_errors(self) -> None:
        # stdout and stderr share the channel's window: unread stderr would stall answers.
        while self.channel.recv_stderr_ready():
            self.errors.add(self.channel.recv_stderr(1 << 16))

    def send(self, data: bytes, timeout: float) -> None:
        self.channel.settimeout(timeout)
        with channel_errors():
            self.channel.sendall(data)

    def recv(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            self._drain_errors()
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.channel.settimeout(min(left, RECV_SLICE))
            try:
                with channel_errors():
                    return bytes(self.channel.recv(1 << 16))
            except TimeoutError:
                continue

    def alive(self) -> bool:
        channel = self.channel
        return (
            self.transport.is_active()
            and not channel.closed
            and not channel.eof_received
            and not channel.exit_status_ready()
        )

    def ending(self) -> str:
        # The exit status follows the end of output by a moment; a killed helper has none.
        deadline = time.monotonic() + EXIT_STATUS_WAIT
        while not self.channel.exit_status_ready() and time.monotonic() < deadline:
            time.sleep(0.01)
        self._drain_errors()
        if not self.transport.is_active():
            status = "ssh connection lost"
        elif self.channel.exit_status_ready():
            code = self.channel.recv_exit_status()
            status = f"exit status {code}" if code >= 0 else "killed"
        else:
            status = "channel closed"
        last = self.errors.last_line()
        return f"{status}: {last}" if last else status

    def close(self, broken: bool = False) -> None:
        try:
            with channel_errors():
                self.channel.close()  # a message to the Mac, on a connection maybe shut
        except OSError:
            broken = True
        if broken:
            # It did not answer in time: the connection itself may be gone; open anew.
            self.transport.close()


class SshHost(HelperHost):
    """One fleet Mac over ssh. Settings as in fleet.toml (`timeout` for connecting and
    starting the helper, `deadline` for each request after); `ssh_config` is the file
    consulted for a Host alias (tests point it elsewhere)."""

    def __init__(
        self,
        name: str,
        host: str,
        port: int | None = None,
        user: str | None = None,
        identity_file: str | None = None,
        known_hosts: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        deadline: float | None = None,
        ssh_config: str = "~/.ssh/config",
        codex: str | None = None,
    ) -> None:
        client = HelperClient(name, self._open_helper, timeout, deadline, codex)
        super().__init__(name, client)
        self.host = host
        self.port = port
        self.user = user
        self.identity_file = identity_file
        self.known_hosts = known_hosts
        self.ssh_config = ssh_config
        self.timeout = timeout
        self._transport: paramiko.Transport | None = None
        self._failed: tuple[float, HostError] | None = None
        self._lock = threading.Lock()

    def transport(self) -> paramiko.Transport:
        """The Mac's authenticated Transport, opened when there is none or it died."""
        with self._lock:
            if self._transport is not None and self._transport.is_active():
                return self._transport
            if self._failed is not None and time.monotonic() < self._failed[0]:
                raise HostError(self.name, self._failed[1].cause)
            try:
                dest = resolve(
                    self.name,
                    self.host,
                    self.port,
                    self.user,
                    self.identity_file,
                    self.known_hosts,
                    self.ssh_config,
                )
                transport = connect(self.name, dest, self.timeout)
            except HostError as error:
                self._failed = (time.monotonic() + self.timeout, error)
                raise
            except (paramiko.SSHException, OSError, EOFError) as error:
                failure = HostError(self.name, f"ssh failed: {error}")
                self._failed = (time.monotonic() + self.timeout, failure)
                raise failure from None
            transport.set_keepalive(KEEPALIVE_SECONDS)
            self._transport, self._failed = transport, None
            return transport

    def exec_channel(self, command: str) -> paramiko.Channel:
        """A new session channel on the Mac's Transport running `command` (a fixed line),
        within `timeout`."""
        transport = self.transport()
        # paramiko waits for the answer to an exec request with no timeout of its own: a
        # Mac that hangs just then would hold this thread for good. At the timeout the
        # Transport is closed, which ends that wait.
        late = threading.Event()

        def give_up() -> None:
            late.set()
            transport.close()

        timer = threading.Timer(self.timeout, give_up)
        timer.daemon = True
        try:
            channel = transport.open_session(timeout=self.timeout)
            timer.start()
            channel.exec_command(command)
        except (paramiko.SSHException, OSError, EOFError) as error:
            transport.close()
            why = f"timed out after {self.timeout:g}s" if late.is_set() else str(error)
            raise HostError(self.name, f"cannot start the helper over ssh: {why}") from None
        finally:
            timer.cancel()
        return channel

    def _open_helper(self, length: int) -> Stream:
        channel = self.exec_channel(bundle.bootstrap_command(length))
        return ChannelStream(channel.get_transport(), channel)

    def close(self) -> None:
        self.client.close()
        with self._lock:
            if self._transport is not None:
                self._transport.close()
            self._transport = None
