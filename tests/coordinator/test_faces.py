"""Every face asks the same fleet (issue 29, item 2): beside the demo's running
coordinator (its simulated office and laptop, as `coop demo` runs them in the app), the
CLI on the demo's home is the coordinator's client. `coop invite`, `coop resend`, `coop
withdraw` and `coop tick` give the coordinator's answers, never those of the CLI's own
fleet (this machine's Claude config dir, where no chat runs): a tick records no live
chat exited, a Codex envelope is withdrawn from the demo's Codex queue, a chat is
invited by the name the demo's Macs give it, a CLI taker on the demo's laptop is
adopted by `coop adopt --once`, and a Send again after a refusal by policy
reads the receiver's settings now and sends nothing while they refuse or cannot be read.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from servekit import code_under_test
from waiting import wait_until

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.demo import Demo
from coop_engine.loop.hub import hub_path
from coop_engine.loop.serve import Server
from hosts.sim.launch import SimChat

COOP = str(Path(sys.executable).with_name("coop"))
REFUSED = "refused-by-receiver-policy"
STILL_REFUSES = (
    "coop: the receiver still refuses peer messages: its crossSessionInbound must change"
    " first (predicted at send: refuse (settings-flag); today: refuse (settings-flag))"
)


@dataclass
class RunningDemo:
    """The demo staged on `home`, its coordinator running in this process as the app
    runs it, and the environment of a `coop` typed in another terminal."""

    demo: Demo
    home: Path
    server: Server
    env: dict[str, str]

    def coop(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [COOP, *args], capture_output=True, text=True, env={**self.env, **env}, timeout=180
        )

    def listing(self, *args: str) -> list[dict[str, Any]]:
        done = self.coop(*args, "--json")
        assert done.returncode == 0, done.stderr
        rows: list[dict[str, Any]] = json.loads(done.stdout)
        return rows

    def envelope(self, project: str, kind: str = "invitation") -> dict[str, Any]:
        """The first envelope of this kind for the todo of this project."""
        todos = {row["id"]: row for row in self.listing("todo", "list")}
        return next(
            row
            for row in self.listing("outbox")
            if row["kind"] == kind and todos[row["todo"]].get("project") == project
        )

    def chat(self, mac: str, session: str) -> SimChat:
        """The demo's simulated chat behind a session reference."""
        native_id = session.partition(":")[2]
        chats = self.demo.fleet.macs[mac].chats
        return next(chat for chat in chats if chat.session_id == native_id)


@pytest.fixture(scope="module")
def running() -> Iterator[RunningDemo]:
    # Short: the hub's socket path must fit AF_UNIX's 107 bytes.
    top = Path(tempfile.mkdtemp(prefix="cf", dir="/tmp"))
    home = top / "home"
    nobody = top / "no-chats-here"  # the CLI's own fleet: a Mac where no chat runs
    nobody.mkdir()
    env = {
        "COOP_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(nobody),
        "PATH": os.environ["PATH"],
        **code_under_test(),
    }
    try:
        with Demo(str(home), say=lambda line: None) as demo:
            assert demo.office is not None
            engine = Engine(open_ledger(home), actor="coop")
            # Its adoption pass runs once at start, then only when `coop adopt --once` asks.
            server = demo.office.coordinator(engine, home, adoption_interval=3600.0)
            thread = server.start_thread()
            try:
                wait_until(lambda: hub_path(home).exists(), "the demo's coordinator's hub")
                yield RunningDemo(demo, home, server, env)
            finally:
                server.stop()
                thread.join(60)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_tick_beside_the_demo_is_its_coordinators_pass_and_exits_no_live_chat(
    running: RunningDemo,
) -> None:
    live = {
        chat.session_id
        for fleet in running.demo.fleet.macs.values()
        for chat in fleet.chats
        if chat.process.poll() is None
    }
    subjects = {
        f"session:{row['id']}": row["native_id"]
        for row in running.listing("sessions")
        if row["native_id"] in live
    }
    assert len(subjects) >= 5, subjects  # the chats that took their invitations, at least
    since = max(event["id"] for event in running.listing("events"))
    done = running.coop("tick")
    assert done.returncode == 0, done.stderr
    exited = [
        subjects[event["subject"]]
        for event in running.listing("events")
        if event["id"] > since
        and event["command"] == "record_status"
        and event["to"] == "exited"
        and event["subject"] in subjects
    ]
    assert exited == []  # recorded, even if the demo's next pass saw them live again
    assert done.stderr == "coop: the running coordinator made a pass on office, laptop\n"


def test_tick_at_beside_the_demo_is_refused_in_one_line(running: RunningDemo) -> None:
    done = running.coop("tick", "--at", "2000000000")
    assert done.returncode == 1
    assert one_line(done) == (
        "coop: a coordinator runs on this home and passes as of now: tick --at is for a"
        " home no coordinator serves"
    )


def test_invite_by_the_name_the_demos_laptop_gives_its_chat(running: RunningDemo) -> None:
    added = running.coop("todo", "add", "Proofread the release notes", "--json")
    assert added.returncode == 0, added.stderr
    todo = json.loads(added.stdout)["id"]
    done = running.coop("invite", str(todo), "--session", "docs", "--json")
    assert done.returncode == 0, done.stderr
    invited = json.loads(done.stdout)
    row = next(row for row in running.listing("outbox") if row["id"] == invited["outbox"])
    docs = running.envelope("docs")
    assert (row["host"], row["session"]) == ("laptop", docs["session"])
    assert invited["session_name"] == "docs"


def test_withdraw_takes_a_queued_codex_envelope_out_of_the_demos_codex_queue(
    running: RunningDemo,
) -> None:
    def queued() -> dict[str, Any] | None:
        row = running.envelope("release-notes")
        return row if row["state"] == "uncertain" and row["queued"] else None

    row = wait_until(queued, "the release notes' invitation waiting in Codex's queue")
    done = running.coop("withdraw", row["id"], "--by", "dad")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"{row['id']} withdrawn from Codex's queue: expired (withdrawn-from-queue)"
    )
    assert running.envelope("release-notes")["reason"] == "withdrawn-from-queue"


def refused_by_policy(running: RunningDemo) -> dict[str, Any]:
    """The locked chat's invitation, once its refusal by policy was recorded."""

    def refused() -> dict[str, Any] | None:
        row = running.envelope("locked")
        return row if row["reason"] == REFUSED else None

    return wait_until(refused, "the locked chat's invitation refused by its policy")


def sends_nothing(running: RunningDemo, row: dict[str, Any], argv: list[str]) -> str:
    """Run `coop resend` and, after a coordinator pass, check that nothing was created
    and no frame reached the receiver; stderr's one line."""
    chat = running.chat(row["host"], row["session"])
    frames, envelopes = len(chat.frames()), len(running.listing("outbox"))
    done = running.coop(*argv)
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout == ""
    line = one_line(done)
    assert running.coop("tick").returncode == 0  # a pass that would send a second frame
    assert len(running.listing("outbox")) == envelopes
    assert len(chat.frames()) == frames
    assert running.envelope("locked")["resent_as"] is None
    return line


def test_resend_into_a_chat_that_still_refuses_is_refused_and_sends_nothing(
    running: RunningDemo,
) -> None:
    row = refused_by_policy(running)
    line = sends_nothing(running, row, ["resend", row["id"], "--by", "dad"])
    assert line == STILL_REFUSES


def test_resend_after_a_policy_refusal_with_settings_unreadable_now_sends_nothing(
    running: RunningDemo,
) -> None:
    row = refused_by_policy(running)
    settings = running.demo.fleet.macs["office"].config_dir / "settings.json"
    before = settings.read_bytes() if settings.exists() else None
    settings.write_text("{ not json")
    try:
        line = sends_nothing(running, row, ["resend", row["id"][:8], "--by", "dad"])
    finally:
        if before is None:
            settings.unlink()
        else:
            settings.write_bytes(before)
    assert line.startswith(f"coop: the receiver's settings cannot be read now ({settings}: "), line
    assert (
        "): after a refusal by its policy, Send again needs them read and no longer refusing"
        " (predicted at send: refuse (settings-flag); today: unknown ("
    ) in line, line


def test_adopt_once_beside_the_demo_is_its_adoption_pass_over_its_macs(
    running: RunningDemo,
) -> None:
    taker = running.demo.fleet.start("laptop", "newcomer")
    added = running.coop("todo", "add", "Bump the lockfile", "--json")
    todo = json.loads(added.stdout)["id"]
    inside = {"PIPPA_COOP_SESSION": taker.ref, "PIPPA_COOP_HOST": "laptop"}
    taken = running.coop("todo", "take", str(todo), **inside)
    assert taken.returncode == 0, taken.stderr
    done = running.coop("adopt", "--once", "--json")
    assert done.returncode == 0, done.stderr
    (row,) = [row for row in json.loads(done.stdout) if row["session"] == taker.ref]
    assert row["found"] == "laptop", row
    assert row["result"].startswith("adopted at generation"), row
