"""Headless Chromium (Debian's `chromium`) driven through its DevTools protocol, with
aiohttp's websocket client (no npm): open `coop web`'s URL, wait for the app's first
bytes, press keys as a keyboard would, and capture the page as a PNG.

Run as a script it is `make screenshots`'s browser step: a real `coop web` on a fresh
home, a todo added from the browser's keyboard, and `screenshots/web.png`:
    python tests/web/chromium.py --out screenshots/web.png
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import itertools
import json
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import aiohttp

REPO = Path(__file__).resolve().parents[2]
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
    "--window-size=1400,860",
)
WAIT_SECONDS = 45.0
TITLE = "Typed in Chromium"
# Keys as Chromium's Input.dispatchKeyEvent wants them, by the character they type.
SPECIAL = {"\r": {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}}
# What the app draws, and so what the keys wait for (the app's own words).
# The outbox pane's title counts envelopes once the app opened its ledger (the footer is
# no sign: how many of its keys fit depends on the columns the browser's font allows).
MAIN_SCREEN = " envelopes"
ADD_DIALOG = "Title, then enter"
ADDED = "Added todo #"
READ_ONLY = "read-only: started with --read-only"
CONTROL_SEQUENCE = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|[@-Z\\-_])")


def chromium_program() -> str | None:
    """Where Chromium is on PATH, or None."""
    return shutil.which("chromium") or shutil.which("chromium-browser")


class Browser:
    """One page of a headless Chromium, spoken to over its DevTools websocket."""

    def __init__(self, page: aiohttp.ClientWebSocketResponse) -> None:
        self.page = page
        self.ids = itertools.count(1)
        self.drawn = bytearray()  # every byte the app sent the page (Network events)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        """Send one DevTools command and return its result; on the way, keep the app's
        bytes the page's websocket received (other events are skipped)."""
        ask = next(self.ids)
        await self.page.send_str(json.dumps({"id": ask, "method": method, "params": params}))
        while True:
            answer = json.loads(await self.page.receive_str(timeout=WAIT_SECONDS))
            if answer.get("method") == "Network.webSocketFrameReceived":
                frame = answer["params"]["response"]
                if frame.get("opcode") == 2:  # textual-serve: the app's output, as binary
                    self.drawn += base64.b64decode(frame["payloadData"])
            if answer.get("id") != ask:
                continue
            if "error" in answer:
                raise RuntimeError(f"{method}: {answer['error']}")
            result: dict[str, Any] = answer["result"]
            return result

    async def evaluate(self, expression: str) -> Any:
        done = await self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        return done["result"].get("value")

    async def wait_for(self, expression: str, what: str) -> None:
        """Until `expression` is true in the page, or fail naming `what`."""
        deadline = time.monotonic() + WAIT_SECONDS
        while not await self.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"the page never showed {what} in {WAIT_SECONDS}s")
            await asyncio.sleep(0.2)

    def screen_text(self, since: int = 0) -> str:
        """What the app drew from byte `since` on, its control sequences taken out."""
        text = self.drawn[since:].decode("utf-8", errors="replace")
        return CONTROL_SEQUENCE.sub("", text)

    async def wait_drawn(self, words: str, since: int = 0) -> None:
        """Until the app drew `words` (after byte `since`): keys pressed before the app
        shows what reads them are lost, and a loaded machine takes its time."""
        deadline = time.monotonic() + WAIT_SECONDS
        while words not in self.screen_text(since):
            if time.monotonic() > deadline:
                drawn = " ".join(self.screen_text(since).split())[-400:]
                raise AssertionError(
                    f"the app never drew {words!r} in {WAIT_SECONDS}s; it drew: {drawn!r}"
                )
            await self.evaluate("0")  # a round trip brings the frames that arrived
            await asyncio.sleep(0.1)

    async def press(self, keys: str, then: str) -> None:
        """Type `keys`, and wait until the app draws `then` in answer."""
        since = len(self.drawn)
        await self.type(keys)
        await self.wait_drawn(then, since)

    async def type(self, text: str) -> None:
        """Each character as a key pressed and released on the focused element."""
        for char in text:
            key = SPECIAL.get(char, {"key": char})
            await self.call("Input.dispatchKeyEvent", type="keyDown", text=char, **key)
            await self.call("Input.dispatchKeyEvent", type="keyUp", **key)

    async def screenshot(self, path: Path) -> None:
        shot = await self.call("Page.captureScreenshot", format="png")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(shot["data"]))


@contextmanager
def chromium(program: str) -> Iterator[int]:
    """A headless Chromium on a fresh profile until the block ends; its DevTools port."""
    with tempfile.TemporaryDirectory(
        prefix="coop-chromium-", ignore_cleanup_errors=True
    ) as profile:
        process = subprocess.Popen(
            [program, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            active = Path(profile) / "DevToolsActivePort"
            deadline = time.monotonic() + WAIT_SECONDS
            while not (active.exists() and active.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"Chromium gave no DevTools port ({process.poll()})")
                time.sleep(0.1)
            yield int(active.read_text().split()[0])
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


async def open_page(devtools: int) -> tuple[aiohttp.ClientSession, Browser]:
    """The browser's first page tab, to drive (the session is the caller's to close)."""
    session = aiohttp.ClientSession()
    async with session.get(f"http://127.0.0.1:{devtools}/json/list") as answer:
        targets = await answer.json()
    page = next(target for target in targets if target["type"] == "page")
    socket = await session.ws_connect(page["webSocketDebuggerUrl"], max_msg_size=0)
    return session, Browser(socket)


def todo_titles(home: Path) -> list[str]:
    listed = subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", "--home", str(home), "todo", "list", "--json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    return [todo["title"] for todo in json.loads(listed.stdout or "[]")]


async def add_todo_from_the_browser(
    devtools: int, url: str, home: Path, shot: Path, *, read_only: bool = False
) -> None:
    """Open `url`, wait for the app's main screen, press + and type a todo's title, enter
    twice, and wait for the app's toast; then the screenshot. Read-only, + draws the
    app's refusal instead, and the title's keys go to the main screen."""
    session, browser = await open_page(devtools)
    try:
        await browser.call("Page.enable")
        await browser.call("Network.enable")
        await browser.call("Page.navigate", url=url)
        # The address traded its token for the cookie, and the app sent its first bytes.
        await browser.wait_for("location.search === ''", "the address without its token")
        await browser.wait_for(
            "document.body && document.body.classList.contains('-first-byte')",
            "the app's first bytes",
        )
        # A headless page has no window focus of its own: give the terminal the keyboard.
        await browser.call("Emulation.setFocusEmulationEnabled", enabled=True)
        await browser.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
        await browser.wait_for("document.activeElement.tagName === 'TEXTAREA'", "xterm focused")
        await wait_for_ledger(home)
        await browser.wait_drawn(MAIN_SCREEN)
        if read_only:
            await browser.press("+", then=READ_ONLY)
            await browser.type(f"{TITLE}\r\r")
        else:
            await browser.press("+", then=ADD_DIALOG)
            await browser.press(f"{TITLE}\r\r", then=ADDED)
        await asyncio.sleep(0.5)  # the canvas painted what was drawn
        await browser.screenshot(shot)
    finally:
        await browser.page.close()
        await session.close()


async def wait_for_ledger(home: Path) -> None:
    """Until the app opened its ledger (it is created on the first open)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while not (home / "coop.db").exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"the app never opened its ledger in {home}")
        await asyncio.sleep(0.2)


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def main() -> int:
    """`make screenshots`'s browser step: exit 0 once the todo typed in Chromium is in
    the ledger and the page is saved, 1 (one line) otherwise."""
    parser = argparse.ArgumentParser(description="screenshots/web.png: coop web in Chromium")
    parser.add_argument("--out", type=Path, default=REPO / "screenshots" / "web.png")
    args = parser.parse_args()
    program = chromium_program()
    if program is None:
        print("chromium is not installed (apt-get install chromium)", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="coop-web-") as folder:
        home = Path(folder) / "home"
        argv = [sys.executable, "-m", "coop_engine.cli", "--home", str(home), "web"]
        web = subprocess.Popen(
            [*argv, "--port", str(free_port())], stdout=subprocess.PIPE, text=True, cwd=REPO
        )
        try:
            assert web.stdout is not None
            url = web.stdout.readline().strip()
            with chromium(program) as devtools:
                asyncio.run(add_todo_from_the_browser(devtools, url, home, args.out))
            deadline = time.monotonic() + WAIT_SECONDS
            while TITLE not in todo_titles(home):
                if time.monotonic() > deadline:
                    print("the todo typed in Chromium never reached the ledger", file=sys.stderr)
                    return 1
                time.sleep(0.3)
        finally:
            web.terminate()
            web.wait(30)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
