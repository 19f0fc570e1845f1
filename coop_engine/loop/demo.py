"""`coop demo`'s fleet: simulated chats on this machine, staged in every situation the
seeds describe, driven by the real coordinator.

Two Macs: the office (this process's LocalHost) and a "laptop" with its own Claude
config dir, reached through the same helper protocol as ssh (a PipeHost). A Codex home
with threads, and todos with deliveries in every state. `stop()` ends every process the
demo started.

Its ledger lives in a Coop home: the one named (`--home`, `$COOP_HOME`), which must not
hold a ledger yet (the demo stages its own), else a temporary one that goes with the
demo. The demo says where before anything else, so that the CLI can be tried on it
from another terminal (`coop --home DIR outbox`): beside the demo's coordinator the CLI
is its client, and asks the demo's simulated Macs (loop/desk.py).
"""

from __future__ import annotations

import shlex
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from coop_engine.db import LEDGER_FILE, open_ledger
from coop_engine.engine import Engine
from coop_engine.errors import Conflict
from coop_engine.formats import printable
from coop_engine.home import ensure_home, shown_path
from coop_engine.loop.coordinator import Coordinator
from coop_engine.loop.office import Office
from coop_engine.models import Dispatch, Session
from hosts.fleet import Fleet
from hosts.mac.local import LocalHost
from hosts.pipe import PipeHost
from hosts.sim.launch import (
    CODEX_EXECUTABLE,
    SimChat,
    SimFleet,
    SimHolder,
    codex_holder,
    codex_thread,
)

HINT = (
    "try: enter on an envelope · r send again · a adoption · c inspect a chat · i invite"
    " · ? help · q quit"
)
MACS = ("office", "laptop")
SETTLE_SECONDS = 20.0
# The setup's clock starts in the past, so that by now the bypass chat's first
# invitation has been held longer than its 60 s dialog expiry plus the 60 s grace.
HEADSTART = 200.0


def coop_command() -> list[str]:
    script = Path(sys.executable).with_name("coop")
    return [str(script)] if script.exists() else [sys.executable, "-m", "coop_engine.cli"]


class DemoFleet:
    """The processes and folders of a demo; `stop()` ends every one of them."""

    def __init__(self, root: Path, home: Path) -> None:
        self.root = root
        self.home = home
        self.sockets = Path(tempfile.mkdtemp(prefix="coop-demo-", dir="/tmp"))
        self.macs = {
            mac: SimFleet(root / mac / "claude", socket_dir=self.sockets / mac) for mac in MACS
        }
        self.codex_home = root / "office" / "codex"
        self.holders: list[SimHolder] = []
        self.laptop: PipeHost | None = None
        self.panes = 0

    def fleet(self) -> Fleet:
        office = LocalHost(
            "office",
            config_dir=self.macs["office"].config_dir,
            codex_home=self.codex_home,
            codex=str(CODEX_EXECUTABLE),
        )
        self.laptop = PipeHost(
            "laptop", env={"CLAUDE_CONFIG_DIR": str(self.macs["laptop"].config_dir)}
        )
        return Fleet("office", {"office": office, "laptop": self.laptop})

    def start(self, mac: str, name: str, *args: str) -> SimChat:
        """One simulated chat on `mac`, in a project folder of its own."""
        cwd = self.root / mac / "src" / name
        cwd.mkdir(parents=True, exist_ok=True)
        self.panes += 1
        env = {
            "CLAUDE_CONFIG_DIR": str(self.macs[mac].config_dir),
            "COOP_HOME": str(self.home),
            "PIPPA_COOP_HOST": mac,
            # A simulated pane of its own, not the one the app runs in.
            "COOP_SIM_TMUX": f"{mac}:@{self.panes}.%{self.panes}",
        }
        return self.macs[mac].start("--name", name, "--cwd", str(cwd), *args, env=env)

    def codex_thread(self, *args: str) -> str:
        """A saved Codex thread on the office Mac; its id."""
        return str(codex_thread(self.codex_home, *args)["thread_id"])

    def hold(self, thread_id: str) -> None:
        """Open the thread, as the Codex app would: it takes its queue every 2 s."""
        self.holders.append(codex_holder(self.codex_home, thread_id, "--poll", "2"))

    def stop(self) -> None:
        for holder in self.holders:
            holder.stop()
        for chats in self.macs.values():
            chats.stop_all()
        if self.laptop is not None:
            self.laptop.close()
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
    gone.kill()  # an exited chat: its registry entry lingers
    refactor, notes = (
        demo.codex_thread("--name", name, "--turns", "2")
        for name in ("importer-refactor", "release-notes")
    )
    demo.hold(refactor)  # open in the Codex app: its queue is taken within seconds
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
    # Codex threads take envelopes through Codex's own queue: the open one runs it, the
    # saved one keeps it queued until someone opens the thread.
    split = engine.add_todo("Split the importer module", project="importer-refactor")["id"]
    engine.invite(split, f"codex:{refactor}", "office")
    changelog = engine.add_todo("Draft the 2.0 changelog", project="release-notes")["id"]
    engine.invite(changelog, f"codex:{notes}", "office")
    taken = engine.add_todo("Bump the SDK pin", project="laptop")["id"]
    demo.start("laptop", "taker", "--run", " ".join([*coop_command(), "todo", "take", str(taken)]))
    say("letting the chats answer…")
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        coordinator.tick()
        if _settled():
            break
        time.sleep(0.3)


def _settled() -> bool:
    accepted = Dispatch.select().where(Dispatch.state == "accepted").count()
    takers = Session.select().where(Session.mode == "observed").count()
    return accepted >= 5 and takers >= 1


class Demo:
    """A staged demo fleet for as long as the `with` block lasts: its folders, its
    processes, its ledger's home and the Office the app is given. `home`: the Coop home
    named (`--home`, `$COOP_HOME`), or None for a temporary one."""

    def __init__(self, home: str | None, say: Callable[[str], None]) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="coop-demo-"))
        self.named = bool(home)
        self.home = Path(home).expanduser().resolve() if home else self.root / "coop-home"
        self.say = say
        self.fleet = DemoFleet(self.root, self.home)
        self.office: Office | None = None

    def __enter__(self) -> Demo:
        try:
            self._claim_home()
            self.say(self.where())
            fleet = self.fleet.fleet()
            stage(self.fleet, fleet, self.say)
        except BaseException:
            self.__exit__()
            raise
        self.office = Office(fleet)
        return self

    def _claim_home(self) -> None:
        """The home, made private when new; Conflict when it holds a ledger already: the
        demo's todos and envelopes are never staged into one (a person's own, say)."""
        ensure_home(self.home)
        if (self.home / LEDGER_FILE).exists():
            raise Conflict(
                f"the Coop home {shown_path(self.home)} holds a ledger ({LEDGER_FILE})"
                " already: the demo stages its own; name a new or empty folder with --home"
            )

    def where(self) -> str:
        """The line that says where the demo's home is, and how to try the CLI on it."""
        shown = printable(str(self.home))
        command = printable(shlex.join(["coop", "--home", str(self.home), "outbox"]))
        lifetime = "kept after the demo" if self.named else "removed when the demo ends"
        return f"coop demo: its home is {shown} ({lifetime}); try the CLI on it: {command}"

    def farewell(self) -> str:
        """The line said once the demo ended: where its ledger stays, or that it went."""
        shown = printable(str(self.home))
        if self.named:
            return f"coop demo: its ledger stays in {shown}; its chats have stopped"
        return f"coop demo: its home {shown} went with it"

    def __exit__(self, *_: object) -> None:
        self.fleet.stop()
        # The chats' folders and logs go with them; a --home ledger lives outside root.
        shutil.rmtree(self.root, ignore_errors=True)
