"""PipeHost: a Mac reached through the helper protocol over a local subprocess's pipes.

The helper runs with the same bootstrap line and payload as over ssh, in an environment
of its own (for example another CLAUDE_CONFIG_DIR), so a simulated laptop is asked
exactly the way a real one is.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Mapping

from hosts import bundle
from hosts.channel import DEFAULT_TIMEOUT, ErrorTail, HelperClient, HelperHost, Stream
from hosts.mac.host import HostError

STOP_SECONDS = 2.0
EXIT_STATUS_WAIT = 0.2


class PipeStream(Stream):
    """A helper process and its three pipes."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None) -> None:
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
        )
        self.errors = ErrorTail()
        self.selector = selectors.DefaultSelector()
        assert self.process.stdout is not None and self.process.stderr is not None
        self.stdout = self.process.stdout.fileno()
        self.stderr = self.process.stderr.fileno()
        self.selector.register(self.stdout, selectors.EVENT_READ)
        self.selector.register(self.stderr, selectors.EVENT_READ)

    def send(self, data: bytes, timeout: float) -> None:
        stdin = self.process.stdin
        if stdin is None or stdin.closed:
            raise BrokenPipeError("helper's stdin is closed")
        # A pipe write blocks only while the helper is not reading; its timeout is the
        # reply's, which follows.
        stdin.write(data)
        stdin.flush()

    def recv(self, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            for key, _ in self.selector.select(left):
                chunk = os.read(key.fd, 1 << 16)
                if key.fd == self.stdout:
                    return chunk  # b"" is end of output
                if chunk:
                    self.errors.add(chunk)  # stderr is drained so it can never fill up
                else:
                    self.selector.unregister(key.fd)

    def _drain_errors(self) -> None:
        """Read what stderr holds now, without waiting for more."""
        import select

        while self.stderr in self.selector.get_map():
            ready, _, _ = select.select([self.stderr], [], [], 0)
            chunk = os.read(self.stderr, 1 << 16) if ready else None
            if not chunk:
                if chunk is not None:
                    self.selector.unregister(self.stderr)
                return
            self.errors.add(chunk)

    def alive(self) -> bool:
        return self.process.poll() is None

    def ending(self) -> str:
        try:
            # Its output ended: its exit status follows in a moment.
            code: int | None = self.process.wait(EXIT_STATUS_WAIT)
        except subprocess.TimeoutExpired:
            code = None
        self._drain_errors()
        if code is None:
            status = "output closed"
        elif code < 0:
            status = f"killed by signal {-code}"
        else:
            status = f"exit status {code}"
        last = self.errors.last_line()
        return f"{status}: {last}" if last else status

    def close(self, broken: bool = False) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            try:
                self.process.stdin.close()
            except OSError:
                pass
        if broken:
            self.process.kill()
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.selector.close()
        for pipe in (self.process.stdout, self.process.stderr):
            if pipe is not None:
                pipe.close()


class PipeHost(HelperHost):
    """A fleet Mac simulated by a local helper process with its own environment.

    `env` is laid over this process's environment (for example
    `{"CLAUDE_CONFIG_DIR": "/tmp/laptop/claude"}`); `python` runs the bootstrap."""

    def __init__(
        self,
        name: str,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        python: str = sys.executable,
        cwd: str | None = None,
        deadline: float | None = None,
        codex: str | None = None,
    ) -> None:
        super().__init__(name, HelperClient(name, self._open, timeout, deadline, codex))
        self.env = dict(env or {})
        self.python = python
        self.cwd = cwd

    def _open(self, length: int) -> Stream:
        argv = bundle.bootstrap_argv(length, python=self.python)
        try:
            return PipeStream(argv, {**os.environ, **self.env}, self.cwd)
        except OSError as error:
            raise HostError(self.name, f"cannot start the helper: {error}") from None
