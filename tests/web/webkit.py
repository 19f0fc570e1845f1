"""A real `coop web` for the tests: started as a subprocess on a free port and a temp
home, its URL read from its one line on stdout, its app processes found as its
descendants in /proc, and the websocket protocol of textual-serve's page spoken by hand
(aiohttp's client)."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp

REPO = Path(__file__).resolve().parents[2]
START_SECONDS = 30.0
PANES = (b"Macs", b"Chats", b"Outbox")  # the main screen's panes' border titles


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def coop(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The real CLI on this home."""
    argv = [sys.executable, "-m", "coop_engine.cli", "--home", str(home), *args]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)


def children_of(pid: int) -> list[int]:
    """Every living descendant of `pid`, from each process's parent in /proc."""
    parents: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z":  # a zombie is already gone
            parents[int(entry)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        for child, its_parent in parents.items():
            if its_parent == parent:
                found.append(child)
                frontier.append(child)
    return found


@dataclass
class Web:
    """A running `coop web`: its process, URL, token, port and home."""

    process: subprocess.Popen[str]
    url: str
    home: Path
    port: int

    @property
    def token(self) -> str:
        return parse_qs(urlsplit(self.url).query)["token"][0]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def origin(self) -> str:
        return self.base

    def cookie(self, token: str | None = None) -> dict[str, str]:
        return {"Cookie": f"coop_token={self.token if token is None else token}"}

    def apps(self) -> list[int]:
        """The processes this coop web started (each session's shell and app)."""
        return children_of(self.process.pid)


@contextmanager
def coop_web(home: Path, *options: str) -> Iterator[Web]:
    """`coop web --port FREE OPTIONS` on `home` until the block ends (SIGTERM; its
    sessions' apps are asked to quit and waited for)."""
    port = free_port()
    argv = [sys.executable, "-m", "coop_engine.cli", "--home", str(home), "web"]
    process = subprocess.Popen(
        [*argv, "--port", str(port), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()  # printed once the port is bound
        if not url:
            assert process.stderr is not None
            raise AssertionError(f"coop web printed no URL: {process.stderr.read()}")
        yield Web(process, url, home, port)
    finally:
        left = children_of(process.pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(START_SECONDS)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        for pid in left:  # an app that outlived its server: ours, by its pid
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def client() -> aiohttp.ClientSession:
    """A client that keeps no cookies of its own: each request carries what the test
    gives it, nothing more."""
    return aiohttp.ClientSession(cookie_jar=aiohttp.DummyCookieJar())


async def get(web: Web, path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
    """GET `path` (no redirect followed): its status and body."""
    async with client() as session:
        async with session.get(
            f"{web.base}{path}", headers=headers or {}, allow_redirects=False
        ) as answer:
            return answer.status, await answer.text()


async def websocket_status(web: Web, headers: dict[str, str]) -> int:
    """The status a websocket upgrade to /ws gets (101 when it was accepted; it is
    closed again at once)."""
    async with client() as session:
        try:
            async with session.ws_connect(f"ws://127.0.0.1:{web.port}/ws", headers=headers):
                return 101
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status


def session_headers(web: Web) -> dict[str, str]:
    """What the page's own websocket carries: the cookie and the served origin."""
    return {**web.cookie(), "Origin": web.origin}


async def read_until(
    socket_: aiohttp.ClientWebSocketResponse, seen: bytearray, done: Callable[[], bool]
) -> None:
    """Read the terminal stream into `seen` until `done()` (or START_SECONDS pass)."""
    deadline = time.monotonic() + START_SECONDS
    while not done():
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"not in {START_SECONDS}s; the stream ends {bytes(seen[-600:])!r}")
        try:
            message = await socket_.receive(timeout=left)
        except TimeoutError:
            continue
        if message.type == aiohttp.WSMsgType.BINARY:
            seen.extend(message.data)
        elif message.type == aiohttp.WSMsgType.TEXT:
            seen.extend(message.data.encode())
        elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
            raise AssertionError(f"the session closed; the stream ends {bytes(seen[-600:])!r}")


def shows_panes(seen: bytearray) -> bool:
    return all(word in seen for word in PANES)
