"""`coop web`: the app in a browser, through textual-serve, behind Coop's own locks.

textual-serve starts one app process per websocket and has no locks of its own. Every
request passes `Locks.check` first, before any handler runs, so nothing starts for:
a Host other than the bound address or loopback's names with the port (403: DNS
rebinding); a websocket whose Origin is not the page's own (403: a foreign page's
websocket); a request without this start's token (401); a websocket, or a page, beyond
--max-sessions live sessions (503, a page saying so). The token (256 bits, fresh each
start) is printed once in the URL; the page trades it for an HttpOnly, SameSite=Strict
cookie and redirects to drop it from the address bar.

This module, aiohttp and textual_serve are imported only by `coop web`.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import ipaddress
import logging
import secrets
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
import textual_serve.server
from aiohttp import web as aioweb
from textual_serve.app_service import AppService
from textual_serve.server import Server

from coop_engine.home import coop_home, ensure_home

COOKIE = "coop_token"
STOP_SECONDS = 10.0  # how long the sessions' apps get to quit when coop web stops
TITLE = "Coop"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")
NOT_LOOPBACK = (
    "coop web: listening on {address}: whoever reaches this port with the URL controls Coop;"
    " prefer the default 127.0.0.1 and `ssh -L {port}:127.0.0.1:{port} HOST`, or a VPN"
)
FULL_PAGE = (
    "<!DOCTYPE html><html><head><title>Coop: sessions full</title></head><body>"
    "<p>Coop is open in {live} browser sessions already, the most this coop web allows"
    " (--max-sessions {most}). Close one, then reload this page.</p></body></html>"
)
Handler = Callable[[aioweb.Request], Awaitable[aioweb.StreamResponse]]


def host_in_url(address: str) -> str:
    """An IP address as a URL's host names it (an IPv6 one in brackets)."""
    return f"[{address}]" if ipaddress.ip_address(address).version == 6 else address


def app_command(python: str, home: str, read_only: bool) -> str:
    """The shell command textual-serve runs for each browser session: this Python
    running the app (`coop tui --in-browser`) on this home; every part shell-quoted.
    The shell execs it, so the process textual-serve holds is the app itself."""
    argv = [python, "-m", "coop_engine.cli", "--home", home, "tui", "--in-browser"]
    if read_only:
        argv.append("--read-only")
    return f"exec {shlex.join(argv)}"


class SessionApp(AppService):
    """textual-serve's app of one session, which is also waited for when it stops: an
    app that does not quit within STOP_SECONDS of being asked is killed, so no session
    outlives its websocket or coop web."""

    async def stop(self) -> None:
        await super().stop()
        process = self._process
        if process is None or process.returncode is not None:
            return
        try:
            await asyncio.wait_for(process.wait(), STOP_SECONDS)
        except TimeoutError:
            process.kill()
            await process.wait()


# textual-serve builds each session's AppService by this module-level name; pointing it
# at SessionApp (in coop web's process only) is the one way in short of copying its
# websocket handler.
textual_serve.server.AppService = SessionApp  # type: ignore[misc]


class Locks:
    """What a request must carry before textual-serve sees it (see the module's words)."""

    def __init__(self, token: str, address: str, port: int, most_sessions: int) -> None:
        self.token = token
        self.most_sessions = most_sessions
        self.live_sessions = 0
        names = {*LOOPBACK_NAMES, host_in_url(address)}
        self.hosts = frozenset(f"{name}:{port}" for name in names)

    def host_allowed(self, request: aioweb.Request) -> bool:
        """Whether the request's Host is the bound address or loopback's, with the port."""
        return request.headers.get("Host", "").lower() in self.hosts

    def origin_allowed(self, request: aioweb.Request) -> bool:
        """Whether a websocket comes from the page this server served: its Origin is
        this request's (checked) Host, over http. A missing Origin is refused."""
        origin = request.headers.get("Origin", "").lower()
        return origin == f"http://{request.headers.get('Host', '').lower()}"

    def token_right(self, given: str | None) -> bool:
        """Whether `given` is this start's token; compared in constant time."""
        if given is None:
            return False
        return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), self.token.encode())

    @aioweb.middleware
    async def check(self, request: aioweb.Request, handler: Handler) -> aioweb.StreamResponse:
        """Every request, in this order: Host (403), a websocket's Origin (403), the
        token (401), then the session cap (503); only then textual-serve's handler runs.
        A right token in the address is kept in a cookie and dropped from the address."""
        if not self.host_allowed(request):
            return aioweb.Response(status=403, text="coop web: this Host is not served\n")
        is_websocket = request.headers.get("Upgrade", "").lower() == "websocket"
        if is_websocket and not self.origin_allowed(request):
            return aioweb.Response(status=403, text="coop web: this Origin is not served\n")
        in_address = request.query.get("token")
        given = request.cookies.get(COOKIE) if in_address is None else in_address
        if not self.token_right(given):
            return aioweb.Response(status=401, text="coop web: open the URL coop web printed\n")
        if in_address is not None:
            rest = {name: value for name, value in request.query.items() if name != "token"}
            moved = aioweb.HTTPSeeOther(request.rel_url.with_query(rest))
            moved.set_cookie(COOKIE, self.token, httponly=True, samesite="Strict", path="/")
            return moved
        if request.path in ("/", "/ws") and self.live_sessions >= self.most_sessions:
            page = FULL_PAGE.format(live=self.live_sessions, most=self.most_sessions)
            return aioweb.Response(status=503, text=page, content_type="text/html")
        return await handler(request)


class LockedServer(Server):
    """textual-serve's Server with Coop's locks in front of every route, its page
    addressed by the Host the browser used, and no banner of its own on stdout."""

    def __init__(self, command: str, locks: Locks, address: str, port: int) -> None:
        super().__init__(command, host=address, port=port, title=TITLE)
        self.locks = locks
        self.sessions: dict[asyncio.Task[Any], aioweb.Request] = {}

    def initialize_logging(self) -> None:
        """textual-serve's log goes to stderr: stdout carries only the URL."""
        logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(message)s")

    async def _make_app(self) -> aioweb.Application:
        app = await super()._make_app()
        app.middlewares.insert(0, self.locks.check)
        return app

    async def on_startup(self, app: aioweb.Application) -> None:
        """Nothing: `serve` prints the URL once the port is bound."""

    async def handle_index(self, request: aioweb.Request) -> aioweb.StreamResponse:  # type: ignore[override]
        """textual-serve's page, its static files and websocket at the Host the browser
        used (already checked), so a page opened through `ssh -L` or as localhost
        connects back where its cookie is."""
        base = f"http://{request.headers['Host']}"
        context: dict[str, Any] = {
            "font_size": 16,
            "app_websocket_url": f"ws://{request.headers['Host']}/ws",
            "config": {"static": {"url": f"{base}/static/"}},
            "application": {"name": TITLE},
        }
        return aiohttp_jinja2.render_template("app_index.html", request, context)

    async def handle_websocket(self, request: aioweb.Request) -> aioweb.WebSocketResponse:
        """One app process for this websocket, counted as a live session while it runs.
        The count is taken and checked with no await between, so two websockets never
        both get the last place."""
        if self.locks.live_sessions >= self.locks.most_sessions:
            raise aioweb.HTTPServiceUnavailable(text="coop web: sessions full\n")
        self.locks.live_sessions += 1
        session = asyncio.current_task()
        assert session is not None  # aiohttp runs each request's handler in a task
        self.sessions[session] = request
        try:
            return await super().handle_websocket(request)
        finally:
            self.locks.live_sessions -= 1
            del self.sessions[session]

    async def end_sessions(self, seconds: float) -> None:
        """End every live session, waiting at most `seconds` in all: its connection is
        closed, so textual-serve's handler leaves its read loop and asks the app to quit,
        and SessionApp waits for the app (a cancelled handler would wait on a websocket
        that can no longer be written)."""
        live = list(self.sessions)
        for request in self.sessions.values():
            if request.transport is not None:
                request.transport.close()
        if live:
            await asyncio.wait(live, timeout=seconds)


def web(args: argparse.Namespace) -> int:
    """Serve the app until SIGINT or SIGTERM; print its URL on stdout once the port is
    bound. A port or an address that cannot be bound is one line, exit 2, nothing
    served. A fleet.toml the apps could not read is refused here, in one line (exit 1),
    not in each browser session."""
    from hosts.fleet import load_fleet

    home = ensure_home(coop_home())
    load_fleet(home).close()
    token = secrets.token_urlsafe(32)
    locks = Locks(token, args.bind, args.port, args.max_sessions)
    command = app_command(sys.executable, str(home), args.read_only)
    server = LockedServer(command, locks, args.bind, args.port)
    if not ipaddress.ip_address(args.bind).is_loopback:
        print(NOT_LOOPBACK.format(address=args.bind, port=args.port), file=sys.stderr)
    try:
        return asyncio.run(_serve(server, args.bind, args.port, token))
    except KeyboardInterrupt:
        return 130


async def _serve(server: LockedServer, address: str, port: int, token: str) -> int:
    server.initialize_logging()
    runner = aioweb.AppRunner(await server._make_app(), handle_signals=False)
    await runner.setup()
    site = aioweb.TCPSite(runner, address, port)
    try:
        await site.start()
    except OSError as error:
        await runner.cleanup()
        print(f"coop: cannot listen on {address} port {port}: {error.strerror}", file=sys.stderr)
        return 2
    print(f"http://{host_in_url(address)}:{port}/?token={token}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await server.end_sessions(STOP_SECONDS)
        await runner.cleanup()
    return 0
