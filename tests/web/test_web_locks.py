"""`coop web`'s locks, against the real server on a free port, with plain HTTP and
websocket clients: without this start's token (none, or a wrong one), from a foreign
Host, or a websocket from a foreign Origin, the page, its static files and the websocket
are refused, and no app process is started; one session over --max-sessions is refused
with a page that says so. With the token, the address trades it for an HttpOnly,
SameSite=Strict cookie, and the websocket streams the live app until its panes show."""

from __future__ import annotations

import asyncio
import json
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from webkit import (
    PANES,
    Web,
    client,
    coop,
    coop_web,
    get,
    read_until,
    run,
    session_headers,
    shows_panes,
    websocket_status,
)

from coop_engine.cli.web import app_command

CLAIM_CHECK_SECONDS = 3.0  # how often an app asks the ledger's claim (coop_tui/coordination.py)
PATHS = ("/", "/static/js/textual.js", "/static/css/xterm.css", "/download/anything")


@pytest.fixture
def web(tmp_path: Path) -> Iterator[Web]:
    with coop_web(tmp_path / "home") as served:
        yield served


def test_the_url_is_printed_alone_on_stdout_with_a_fresh_token_of_256_bits(web: Web) -> None:
    assert web.url == f"http://127.0.0.1:{web.port}/?token={web.token}"
    assert len(web.token) == 43  # secrets.token_urlsafe(32): 32 random bytes
    with coop_web(web.home) as again:
        assert again.token != web.token


def test_without_the_token_nothing_is_served_and_no_app_starts(web: Web) -> None:
    async def look() -> None:
        for path in PATHS:
            assert (await get(web, path))[0] == 401, path
            assert (await get(web, f"{path}?width=80"))[0] == 401, path
        assert await websocket_status(web, {"Origin": web.origin}) == 401

    run(look())
    assert web.apps() == []


def test_a_wrong_token_in_the_address_or_the_cookie_is_refused_and_no_app_starts(
    web: Web,
) -> None:
    wrong = web.token[:-1] + ("A" if web.token[-1] != "A" else "B")

    async def look() -> None:
        for token in (wrong, "", web.token[:20], web.token + "x"):
            assert (await get(web, f"/?token={token}"))[0] == 401
            for path in PATHS:
                assert (await get(web, path, web.cookie(token)))[0] == 401, path
            headers = {**web.cookie(token), "Origin": web.origin}
            assert await websocket_status(web, headers) == 401
        # The right cookie does not carry a wrong token in the address.
        assert (await get(web, f"/?token={wrong}", web.cookie()))[0] == 401

    run(look())
    assert web.apps() == []


def test_a_foreign_host_is_refused_even_with_the_token_and_no_app_starts(web: Web) -> None:
    hosts = (
        f"evil.example:{web.port}",
        "127.0.0.1",
        f"127.0.0.1:{web.port + 1}",
        f"localhost.evil.example:{web.port}",
    )

    async def look() -> None:
        for host in hosts:
            for path in (*PATHS, f"/?token={web.token}"):
                status, _ = await get(web, path, {**web.cookie(), "Host": host})
                assert status == 403, (host, path)
            headers = {**session_headers(web), "Host": host}
            assert await websocket_status(web, headers) == 403, host

    run(look())
    assert web.apps() == []


def test_a_websocket_from_a_foreign_origin_is_refused_even_with_the_token(web: Web) -> None:
    async def look() -> None:
        for origin in ("http://evil.example", f"https://127.0.0.1:{web.port}", "null"):
            assert await websocket_status(web, {**web.cookie(), "Origin": origin}) == 403
        assert await websocket_status(web, web.cookie()) == 403  # no Origin at all

    run(look())
    assert web.apps() == []


def test_the_token_in_the_address_becomes_an_httponly_strict_cookie_and_leaves_the_address(
    web: Web,
) -> None:
    async def look() -> None:
        async with client() as session:
            async with session.get(web.url, allow_redirects=False) as answer:
                assert answer.status == 303
                assert answer.headers["Location"] == "/"
                cookie = answer.headers["Set-Cookie"]
        assert cookie.startswith(f"coop_token={web.token};")
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie and "Path=/" in cookie
        status, page = await get(web, "/", web.cookie())
        assert status == 200 and f"ws://127.0.0.1:{web.port}/ws" in page
        for host in ("localhost", "[::1]"):  # the page points back where it was asked
            headers = {**web.cookie(), "Host": f"{host}:{web.port}"}
            status, page = await get(web, "/", headers)
            assert status == 200 and f"ws://{host}:{web.port}/ws" in page

    run(look())
    assert web.apps() == []  # a page is not a session: only its websocket starts one


def test_with_the_token_the_websocket_streams_the_app_until_its_panes_show(tmp_path: Path) -> None:
    with coop_web(tmp_path / "home", "--max-sessions", "1") as web:

        async def look() -> None:
            async with client() as session:
                url = f"ws://127.0.0.1:{web.port}/ws?width=120&height=36"
                async with session.ws_connect(url, headers=session_headers(web)) as stream:
                    seen = bytearray()
                    await read_until(stream, seen, lambda: shows_panes(seen))
                    assert all(word in seen for word in PANES)
                    running = web.apps()
                    assert len(running) == 1, "each session is one app process"
                    # One over the limit: refused, the page says so, nothing more starts.
                    assert await websocket_status(web, session_headers(web)) == 503
                    status, page = await get(web, "/", web.cookie())
                    assert status == 503
                    assert "Coop is open in 1 browser sessions already" in page
                    assert "--max-sessions 1" in page
                    assert sorted(web.apps()) == sorted(running)
            # The session closed: its app quits, and the place is free again.
            for _ in range(200):
                if not web.apps():
                    break
                await asyncio.sleep(0.1)
            assert web.apps() == []
            assert (await get(web, "/", web.cookie()))[0] == 200

        run(look())


def test_in_read_only_the_add_todo_keys_over_the_websocket_leave_the_ledger_unchanged(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    assert coop(home, "todo", "add", "Already there").returncode == 0
    before = coop(home, "todo", "list", "--json").stdout
    with coop_web(home, "--read-only") as web:

        async def look() -> None:
            async with client() as session:
                url = f"ws://127.0.0.1:{web.port}/ws?width=120&height=36"
                async with session.ws_connect(url, headers=session_headers(web)) as stream:
                    seen = bytearray()
                    await read_until(stream, seen, lambda: shows_panes(seen))
                    for keys in ("+", "From the browser", "\r", "\r"):
                        await stream.send_json(["stdin", keys])
                    await read_until(stream, seen, lambda: b"started with --read-only" in seen)
                    # It only watches: no coordinator of its own claims the ledger.
                    await asyncio.sleep(CLAIM_CHECK_SECONDS + 1)
                    status = json.loads(coop(home, "status", "--json").stdout)
                    assert status["coordinator"]["state"] == "none"

        run(look())
    assert coop(home, "todo", "list", "--json").stdout == before


@pytest.mark.parametrize(
    ("option", "value"),
    [("--port", "0"), ("--port", "65536"), ("--port", "http"), ("--bind", "office.example")],
)
def test_a_bad_port_or_address_is_one_line_exit_2_and_nothing_served(
    tmp_path: Path, option: str, value: str
) -> None:
    done = coop(tmp_path / "home", "web", option, value)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and option in done.stderr


def test_a_port_already_taken_is_one_line_and_nothing_served(web: Web) -> None:
    done = coop(web.home, "web", "--port", str(web.port))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith(f"coop: cannot listen on 127.0.0.1 port {web.port}: ")
    assert len(done.stderr.strip().splitlines()) == 1


def test_listening_beyond_loopback_warns_that_the_url_controls_coop(tmp_path: Path) -> None:
    with coop_web(tmp_path / "home", "--bind", "0.0.0.0") as web:
        assert web.url.startswith("http://0.0.0.0:")
        web.process.terminate()
        assert web.process.stderr is not None
        warning = web.process.stderr.read()
    assert "whoever reaches this port with the URL controls Coop" in warning
    assert "ssh -L" in warning and "VPN" in warning


def test_on_loopback_nothing_is_said_on_stderr(web: Web) -> None:
    web.process.terminate()
    web.process.wait(30)
    assert web.process.stderr is not None
    assert web.process.stderr.read() == ""


def test_stopping_coop_web_ends_each_live_sessions_app(tmp_path: Path) -> None:
    with coop_web(tmp_path / "home") as web:

        async def look() -> list[int]:
            async with client() as session:
                url = f"ws://127.0.0.1:{web.port}/ws?width=100&height=30"
                async with session.ws_connect(url, headers=session_headers(web)) as stream:
                    seen = bytearray()
                    await read_until(stream, seen, lambda: shows_panes(seen))
                    running = web.apps()
                    web.process.terminate()
                    await asyncio.to_thread(web.process.wait, 30)
                    return running

        running = run(look())
        assert web.process.returncode == 0 and len(running) == 1
        assert not [pid for pid in running if Path(f"/proc/{pid}").exists()]


def test_the_apps_command_is_this_python_on_this_home_every_part_shell_quoted() -> None:
    home = "/tmp/a home/$(touch pwned); `id` 'q\"x"
    command = app_command(sys.executable, home, read_only=True)
    words = shlex.split(command)
    assert words == [
        "exec",
        sys.executable,
        "-m",
        "coop_engine.cli",
        "--home",
        home,
        "tui",
        "--in-browser",
        "--read-only",
    ]
    assert "--read-only" not in app_command(sys.executable, home, read_only=False)


def test_a_fleet_the_apps_could_not_read_is_one_line_exit_1_and_nothing_served(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "fleet.toml").write_text("office = [not toml\n")
    done = coop(home, "web", "--port", "1")
    assert done.returncode == 1 and done.stdout == ""
    assert "fleet.toml" in done.stderr and len(done.stderr.strip().splitlines()) == 1
