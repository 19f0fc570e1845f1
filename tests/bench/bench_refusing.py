"""Benchmark of a chat whose inbox refuses connections: refusing_chat_cpu (issue 29 item 4).

A real `coop serve` on a home of its own, this machine alone, with one chat in its
registry: a live process whose inbox socket passes the private-socket checks but is
never listened on, so every connect is refused and nothing is ever written. The serve
runs twice for the same window, as one process each: first with nothing to send (the
baseline, measured in this run), then with one invitation to that chat waiting. The
figures are the serve process's CPU over the window (utime + stime from /proc), as a
fraction of one core, its passes per minute, and the tries the ledger recorded (the
envelope's `refusals`: each try in a row that wrote nothing).

Before the refusals were bounded, the issue measured this from outside: 1,719 tries in
90 s (a pass every 0.05 s, each try's ledger write waking the loop again) and 46% of a
core. Bounded means: tried at once, again, then after waits doubling from 5 s (at most a
handful of tries in the window), the CPU within a small margin of the idle baseline, the
envelope still pending with nothing counted as sent, and Dad told once.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.models import HostQueue, Notification, Outbox
from tests.bench.common import COUNTING_SERVE, cpu_seconds, report, run_main
from tests.refusing import RefusingChat
from tests.serving import started_serve

WINDOW = 25.0  # seconds each serve is measured for
# A ratio of two figures near zero is noise: the baseline counts as at least 1% of a core.
BASELINE_FLOOR = 0.01
MOST_RATIO = 2.0
MOST_EXTRA_CPU = 0.02  # of a core, above the idle baseline
# Tries at 0, at once, +5 s, +10 s fit in 25 s: 4. Tens at most, never hundreds.
MOST_TRIES = 10
SESSION = "7d2e1b63-8e4f-4c0a-9f32-6a5d4c3b2e10"


def _serve(root: Path, env: dict[str, str], seconds: float) -> tuple[float, float]:
    """A real `coop serve` (passes counted) from the moment it says it serves, for
    `seconds`: its CPU as a fraction of one core, and its passes per minute."""
    counted, log = root / "passes.txt", root / "serve.log"
    counted.write_text("")
    serve = started_serve([sys.executable, "-c", COUNTING_SERVE, str(counted)], log, env)
    try:
        before_cpu, before_passes = cpu_seconds(serve.pid), len(counted.read_text().split())
        time.sleep(seconds)
        cpu = cpu_seconds(serve.pid) - before_cpu
        passes = len(counted.read_text().split()) - before_passes
    finally:
        serve.terminate()
        serve.wait(30)
    return cpu / seconds, passes * 60 / seconds


def refusing_chat_cpu() -> bool:
    root = Path(tempfile.mkdtemp(prefix="rc", dir="/tmp"))  # a socket path is short
    home = root / "home"
    home.mkdir(mode=0o700)
    # This machine alone, and no desktop notification from a benchmark.
    (home / "fleet.toml").write_text('office = "office"\n\n[notify]\nquiet = true\n')
    config = root / "claude"
    chat = RefusingChat(config / "sessions", root / "inbox", root, SESSION)
    env = {
        **os.environ,
        "COOP_HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(config),
        "HOME": str(root),
    }
    db = open_ledger(home)
    try:
        idle, idle_passes = _serve(root, env, WINDOW)
        engine = Engine(db)
        todo = engine.add_todo("Benchmark: a chat whose inbox refuses")["id"]
        outbox_id = engine.invite(todo, chat.ref, "office")["outbox"]
        cpu, passes = _serve(root, env, WINDOW)
        row = Outbox.get_by_id(outbox_id)
        tries = int(row.refusals or 0)
        queued = HostQueue.select().where(HostQueue.outbox == outbox_id).count()
        notices = Notification.select().where(Notification.kind == "not sent").count()
        unsent = row.state == "pending" and row.transport_at is None
    finally:
        db.close()
        chat.close()
        shutil.rmtree(root, ignore_errors=True)
    goal = 1 <= tries <= MOST_TRIES and cpu <= idle + MOST_EXTRA_CPU and unsent and notices == 1
    return (
        report(
            "refusing_chat_cpu",
            cpu / max(idle, BASELINE_FLOOR),
            maximum=MOST_RATIO,
            cpu_core_fraction=cpu,
            baseline_cpu_idle=idle,
            tries=tries,
            host_queue_rows=queued,
            passes_per_min=passes,
            baseline_passes_per_min=idle_passes,
            notices=notices,
            still_unsent=unsent,
            window_s=WINDOW,
            goal=f"tries<={MOST_TRIES} cpu<=idle+{MOST_EXTRA_CPU:g} unsent notices=1 "
            + ("ok" if goal else "MISSED"),
        )
        and goal
    )


if __name__ == "__main__":
    run_main([refusing_chat_cpu])
