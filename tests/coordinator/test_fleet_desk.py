"""The fleet commands ask a running coordinator over its hub, and say so: the same rows
with `"via": "serve"`, or `"direct"` when no coordinator runs (none started, one
stopped, one SIGKILLed that left its socket). A Mac the coordinator knows is down is
answered at once, not asked again."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from officekit import Office
from serving import started_serve

from coop_engine.loop.desk import Desk
from coop_engine.loop.hub import hub_path
from hosts.fleet import Fleet
from hosts.mac.host import Host, HostError
from hosts.mac.local import LocalHost

COOP = str(Path(sys.executable).with_name("coop"))


def coop(office: Office, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [COOP, *args], capture_output=True, text=True, env=office.env(), timeout=30
    )


def listing(office: Office, *args: str) -> Any:
    done = coop(office, *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def start_serve(office: Office, log: Path) -> subprocess.Popen[bytes]:
    return started_serve([COOP, "serve"], log, office.env())


def without_via(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in row.items() if k not in ("via", "checked_at", "latency_ms")}
        for row in rows
    ]


def test_fleet_listings_ask_the_running_coordinator_and_say_so(
    office: Office, tmp_path: Path
) -> None:
    chat = office.macs["office"].start("--name", "listed")
    direct = listing(office, "chats")
    assert [row["via"] for row in direct] == ["direct"]
    assert direct[0]["session_id"] == chat.session_id
    serve = start_serve(office, tmp_path / "serve.log")
    try:
        through = listing(office, "chats")
        assert [row["via"] for row in through] == ["serve"]
        assert without_via(through) == without_via(direct)
        (mac,) = listing(office, "hosts")
        assert (mac["via"], mac["name"], mac["reachable"], mac["chats_live"]) == (
            "serve",
            "office",
            True,
            1,
        )
        shown = listing(office, "chat", "show", chat.session_id)
        assert (shown["via"], shown["session_id"]) == ("serve", chat.session_id)
        missing = coop(office, "chat", "show", "0badc0de-0000-4000-8000-000000000000")
        assert missing.returncode == 1 and missing.stderr.startswith("coop: No chat with session")
        unknown = coop(office, "chats", "--host", "nowhere")
        assert unknown.returncode == 1 and "No Mac named 'nowhere'" in unknown.stderr
    finally:
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(30) == 0
    assert not hub_path(office.home).exists()  # serve took its socket with it
    assert [row["via"] for row in listing(office, "chats")] == ["direct"]


def test_a_socket_left_by_a_killed_coordinator_is_not_asked(office: Office, tmp_path: Path) -> None:
    office.macs["office"].start()
    serve = start_serve(office, tmp_path / "serve.log")
    serve.kill()
    serve.wait(30)
    assert hub_path(office.home).exists()
    assert [row["via"] for row in listing(office, "chats")] == ["direct"]


class Counting(Host):
    """A Mac that counts what it is asked."""

    def __init__(self, inner: LocalHost) -> None:
        self.inner, self.name, self.asked = inner, inner.name, 0

    def call(self, op: str, **args: Any) -> Any:
        self.asked += 1
        return self.inner.call(op, **args)


def test_a_mac_the_coordinator_knows_is_down_is_answered_at_once_not_asked(
    office: Office,
) -> None:
    office.macs["laptop"].start()
    down = Counting(office.hosts["laptop"])
    fleet = Fleet("office", {"office": office.hosts["office"], "laptop": down})
    desk = Desk(fleet, {"laptop": "timed out after 5s waiting for an answer to survey"})
    chats = desk.chats(None)
    assert chats["failed"] == [
        {"host": "laptop", "cause": "timed out after 5s waiting for an answer to survey"}
    ]
    rows = {row["name"]: row for row in desk.hosts()}
    assert rows["laptop"]["reachable"] is False
    assert rows["laptop"]["reason"].startswith("timed out after 5s")
    assert down.asked == 0
    try:
        desk.chats("laptop")
    except HostError as error:
        assert error.host == "laptop"
    else:
        raise AssertionError("the one Mac named was down: the command's own failure")
    assert Desk(fleet).chats("laptop")["rows"] and down.asked == 1  # asked when not known down
