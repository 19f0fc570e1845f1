"""`coop demo`: a simulated fleet on this machine, then the app over it.

Two Macs: the office (this process's LocalHost) and a "laptop" with its own Claude
config dir, reached through the same helper protocol as ssh (a PipeHost). Simulated
chats in every situation the seeds describe, a Codex home with threads, and todos with
deliveries in every state. Everything lives in a temporary COOP_HOME unless --home is
given; quitting stops every process the demo started.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost
from hosts.pipe import PipeHost

HINT = (
    "try: enter on an envelope · r send again · a adoption · c inspect a chat · i invite"
    " · ? help · q quit"
)
SETTLE_SECONDS = 20.0
# The setup's clock starts in the past, so that by now the bypass chat's first
# invitation has been held longer than its 60 s dialog expiry plus the 60 s grace.
HEADSTART = 200.0


def coop_command() -> list[str]:
    script = Path(sys.executable).with_name("coop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "coop_engine.cli"]


class Chat:
    def __init__(self, process: subprocess.Popen[str], ready: dict[str, Any], mac: str) -> None:
        self.process = process
        self.ready = ready
        self.mac = mac

    @property
    def ref(self) -> str:
        return f"claude:{self.ready['session_id']}"


class DemoFleet:
    """The processes and folders of a demo; `stop()` ends every one of them."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.dirs = {mac: root / mac / "claude" for mac in ("office", "laptop")}
        self.codex_home = root / "office" / "codex"
        self.sockets = Path(tempfile.mkdtemp(prefix="coop-demo-", dir="/tmp"))
        self.chats: list[Chat] = []
        self.logs: list[IO[str]] = []
        self.laptop: PipeHost | None = None

    def fleet(self) -> Fleet:
        office = LocalHost("office", config_dir=self.dirs["office"], codex_home=self.codex_home)
        self.laptop = PipeHost("laptop", env={"CLAUDE_CONFIG_DIR": str(self.dirs["laptop"])})
        return Fleet("office", {"office": office, "laptop": self.laptop})

    def env(self, mac: str) -> dict[str, str]:
        return {
            **os.environ,
            "CLAUDE_CONFIG_DIR": str(self.dirs[mac]),
            "COOP_HOME": str(self.home),
            "PIPPA_COOP_HOST": mac,
        }

    def start(self, mac: str, name: str, *args: str) -> Chat:
        """One simulated chat; returns once its inbox is bound."""
        folder = self.dirs[mac]
        folder.mkdir(parents=True, exist_ok=True)
        cwd = self.root / mac / "src" / name
        cwd.mkdir(parents=True, exist_ok=True)
        log = open(self.root / f"{mac}-{name}.log", "w")  # noqa: SIM115 - closed in stop()
        self.logs.append(log)
        command = [
            sys.executable,
            "-m",
            "hosts.sim",
            "chat",
            "--config-dir",
            str(folder),
            "--socket-dir",
            str(self.sockets / mac),
            "--name",
            name,
            "--cwd",
            str(cwd),
            *args,
        ]
        process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log, text=True, env=self.env(mac)
        )
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the simulated chat {name} did not start; see {log.name}")
        chat = Chat(process, json.loads(line), mac)
        self.chats.append(chat)
        return chat

    def codex_thread(self, *args: str) -> None:
        command = [
            sys.executable,
            "-m",
            "hosts.sim",
            "codex",
            "--codex-home",
            str(self.codex_home),
            *args,
        ]
        subprocess.run(command, check=True, capture_output=True)

    def stop(self) -> None:
        for chat in self.chats:
            if chat.process.poll() is None:
                chat.process.terminate()
        for chat in self.chats:
            try:
                chat.process.wait(5)
            except subprocess.TimeoutExpired:
                chat.process.kill()
                chat.process.wait()
        if self.laptop is not None:
            self.laptop.close()
        for log in self.logs:
            log.close()
        shutil.rmtree(self.sockets, ignore_errors=True)


class SetupClock:
    def __init__(self) -> None:
        self.offset = -HEADSTART

    def __call__(self) -> float:
        return time.time() + self.offset


def stage(demo: DemoFleet, fleet: Fleet, say: Callable[[str], None]) -> None:
    """Chats, todos and deliveries in every state."""
    clock = SetupClock()
    db = open_ledger(demo.home)
    engine = Engine(db, clock=clock, actor="dad")  # Dad's todos, invitations, Send again
    coordinator = Coordinator(
        Engine(db, clock=clock, actor="coop"), fleet.hosts, log=lambda line: None
    )
    say("starting simulated chats on office and laptop…")
    importer = demo.start("office", "importer", "--history")
    builder = demo.start("office", "builder", "--busy", "--busy-seconds", "6")
    reviewer = demo.start(
        "office", "reviewer", "--dangerously-skip-permissions", "--dialog-expiry", "60s"
    )
    locked = demo.start("office", "locked", "--inbound", "refuse")
    flaky = demo.start("office", "flaky", "--lose-frames", "--history")
    docs = demo.start("laptop", "docs", "--history")
    gone = demo.start("office", "gone")
    gone.process.kill()  # an exited chat: its registry entry lingers
    gone.process.wait()
    for name in ("importer-refactor", "release-notes"):
        demo.codex_thread("--name", name, "--turns", "2")
    todos = [
        ("Fix the flaky importer test", "importer", importer, "office"),
        ("Get the build green again", "builder", builder, "office"),
        ("Review the parser rewrite", "reviewer", reviewer, "office"),
        ("Rotate the signing keys", "locked", locked, "office"),
        ("Trim the CI matrix", "flaky", flaky, "office"),
        ("Write the release notes", "docs", docs, "laptop"),
    ]
    invitations = {}
    for title, project, chat, mac in todos:
        todo = engine.add_todo(title, project=project)["id"]
        invitations[project] = engine.invite(todo, chat.ref, mac)["outbox"]
    coordinator.tick()  # the reviewer's invitation goes out "200 s ago" and is held
    clock.offset = 0.0
    coordinator.tick()
    engine.resend(invitations["reviewer"], "dad")
    late = engine.add_todo("Update the changelog", project="gone")["id"]
    engine.invite(late, gone.ref, "office")
    taken = engine.add_todo("Bump the SDK pin", project="laptop")["id"]
    demo.start("laptop", "taker", "--run", " ".join([*coop_command(), "todo", "take", str(taken)]))
    say("letting the chats answer…")
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        coordinator.tick()
        if _settled(engine):
            break
        time.sleep(0.3)


def _settled(engine: Engine) -> bool:
    from coop_engine.models import Dispatch, Session

    accepted = Dispatch.select().where(Dispatch.state == "accepted").count()
    takers = Session.select().where(Session.mode == "observed").count()
    return accepted >= 4 and takers >= 1


def run_demo(home_arg: str | None, tui: bool = True, out: Callable[[str], None] = print) -> int:
    root = Path(tempfile.mkdtemp(prefix="coop-demo-"))
    home = Path(home_arg).expanduser().resolve() if home_arg else root / "coop-home"
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    demo = DemoFleet(root, home)
    fleet = demo.fleet()
    try:
        stage(demo, fleet, out)
        if not tui:
            from coop_engine import views

            for row in views.outbox():
                why = row["reason"] or row["last_error"] or ""
                out(f"{row['id'][:8]}  {row['kind']:<11} #{row['todo']}  {row['state']:<10} {why}")
            return 0
        from coop_tui.app import CoopApp

        CoopApp(home, fleet, banner=HINT, first_adoption_after=60.0).run()
        return 0
    finally:
        demo.stop()
        # The chats' folders and logs go with them; a --home ledger lives outside root.
        shutil.rmtree(root, ignore_errors=True)
