"""A Mac with a simulated Codex home beside tuikit's staged fleet, for the Codex door's
pilot tests.

Unlike tuikit, this starts real processes: the Codex simulator writes saved threads,
`hosts/sim/bin/codex app-server` answers the queue API, and a holder process holds a
thread open and takes its queued items as Codex does. The Mac is a LocalHost named
`studio` with no Claude chats, so a coordinator pass over it touches no staged envelope.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuikit import Staged, id_sequence

from coop_engine import queries
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import database
from hosts.mac.local import LocalHost
from hosts.sim.launch import CODEX_EXECUTABLE, SimHolder, codex_holder, codex_thread

MAC = "studio"
WAIT = 30.0  # seconds: a generous bound on waits, never asserted as a speed


class CodexMac:
    """The `studio` Mac: its Codex home, its host, the holders started on it."""

    def __init__(self) -> None:
        # Absolute: the app-server runs inside the Codex home, the simulator in the repo.
        self.home = (Path(MAC) / "codex").absolute()
        config_dir = Path(MAC) / "claude"
        (config_dir / "sessions").mkdir(parents=True, exist_ok=True)
        self.host = LocalHost(
            MAC, config_dir=config_dir, codex_home=self.home, codex=str(CODEX_EXECUTABLE)
        )
        self.holders: list[SimHolder] = []
        self.log: list[str] = []
        self.new_id = id_sequence(43)  # the coordinator's envelopes (a work envelope)

    def thread(self, *args: str) -> str:
        """A saved Codex thread nobody holds open; its id."""
        return str(codex_thread(self.home, "--cwd", "/srv/app", *args)["thread_id"])

    def holder(self, thread_id: str, *args: str) -> SimHolder:
        """A process holding the thread open, polling Codex's queue every 0.2 s."""
        holder = codex_holder(self.home, thread_id, "--poll", "0.2", *args)
        self.holders.append(holder)
        return holder

    def invite(self, staged: Staged, thread_id: str, title: str) -> dict[str, Any]:
        """Dad invites the thread to a new todo: the invitation is pending."""
        engine = staged.engine(seed=41)
        todo = engine.add_todo(title)["id"]
        return engine.invite(todo, f"codex:{thread_id}", MAC)

    def tick(self, staged: Staged) -> None:
        """One coordinator pass over this Mac alone, as Coop, as `coop tick` runs one:
        sends, observes. On the ledger connection of the moment (the app opens its own,
        and a command's writes must share its transaction's connection)."""
        coop = Engine(database.obj, clock=staged.clock, actor="coop", new_id=self.new_id)
        Coordinator(coop, staged.fleet.hosts, self.log.append).tick(only={MAC})

    def tick_until(
        self, staged: Staged, outbox_id: str, done: Callable[[dict[str, Any]], object]
    ) -> dict[str, Any]:
        """Passes until the envelope, as the ledger shows it, is `done`."""
        deadline = time.monotonic() + WAIT
        while True:
            self.tick(staged)
            row = queries.envelope_row(outbox_id)
            if done(row):
                return row
            if time.monotonic() > deadline:
                raise AssertionError(f"not within {WAIT}s: {row}\n" + "\n".join(self.log))
            time.sleep(0.1)

    def taken(self, thread_id: str, outbox_id: str) -> bool:
        """Whether Codex took the envelope from the thread's queue (nothing waits there
        with its id, as the Mac's own reading of Codex's queue says)."""
        return not self.host.codex_queued(thread_id)["queued"].get(outbox_id)

    def taken_by_a_hung_turn(self, staged: Staged) -> tuple[str, str]:
        """An invitation queued in a thread nobody held, then taken by a holder whose
        turn never ends: Codex took it, and the ledger, not asked again, still shows it
        queued (sent, not received). (thread id, outbox id)."""
        thread = self.thread()
        outbox_id = str(self.invite(staged, thread, "Take the hung turn")["outbox"])
        self.tick_until(staged, outbox_id, lambda row: row["queued"] is True)
        self.holder(thread, "--answer", "hang")
        deadline = time.monotonic() + WAIT
        while not self.taken(thread, outbox_id):
            if time.monotonic() > deadline:
                raise AssertionError(f"the holder did not take {outbox_id} within {WAIT}s")
            time.sleep(0.05)
        return thread, outbox_id

    def close(self) -> None:
        """Every holder lets go (a hung turn is written off); the host is the fleet's to
        close."""
        for holder in self.holders:
            try:
                holder.stop()
            except subprocess.TimeoutExpired:
                holder.kill()
