"""`coop web` in a real browser: headless Chromium (Debian's `chromium`, installed by
`make test`) opens the URL coop web printed, the address trades its token for the cookie,
the live app draws in the page, and keys typed there reach it: `+`, a title and enter add
a todo to the ledger, and the page is saved as screenshots/web.png. In --read-only the
same keys draw the app's refusal and leave the ledger as it was. Each key waits until the
app drew what reads it (its bytes, seen on the page's websocket), never a fixed time."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from chromium import TITLE, WAIT_SECONDS, add_todo_from_the_browser, chromium, chromium_program
from prerequisites import missing
from waiting import wait_until
from webkit import REPO, coop, coop_web

SCREENSHOT = REPO / "screenshots" / "web.png"


@pytest.fixture
def program() -> str:
    found = chromium_program()
    if found is None:
        missing("chromium (apt-get install chromium; make test installs it as root)")
    return found


def titles(home: Path) -> list[str]:
    return [todo["title"] for todo in json.loads(coop(home, "todo", "list", "--json").stdout)]


def test_keys_typed_in_chromium_add_a_todo_through_the_live_app(
    tmp_path: Path, program: str
) -> None:
    home = tmp_path / "home"
    with coop_web(home) as web, chromium(program) as devtools:
        asyncio.run(add_todo_from_the_browser(devtools, web.url, home, SCREENSHOT))
        wait_until(
            lambda: TITLE in titles(home),
            "the todo typed in Chromium",
            timeout=WAIT_SECONDS,
            interval=0.3,
        )
    assert SCREENSHOT.read_bytes().startswith(b"\x89PNG")


def test_in_read_only_the_same_keys_in_chromium_leave_the_ledger_unchanged(
    tmp_path: Path, program: str
) -> None:
    home = tmp_path / "home"
    assert coop(home, "todo", "add", "Already there").returncode == 0
    before = titles(home)
    with coop_web(home, "--read-only") as web, chromium(program) as devtools:
        asyncio.run(
            add_todo_from_the_browser(devtools, web.url, home, tmp_path / "ro.png", read_only=True)
        )
        time.sleep(2.0)  # what a write would need to land
        assert titles(home) == before == ["Already there"]
    assert (tmp_path / "ro.png").read_bytes().startswith(b"\x89PNG")
