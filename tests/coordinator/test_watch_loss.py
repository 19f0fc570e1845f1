"""When the kernel drops a watch's events (its inotify queue overflowed while the
process was stopped or starved), the watcher looks again at once: the coordinator's
pass is woken and the app reads its ledger, as for a change. Until this, the watch's
filter dropped watchdog's word of the loss, and a receipt written in the overflow waited
for the next timed pass (up to 30 s).

The watch runs in a child process, the way it runs in `coop serve` or the app; the child
is stopped, the folder gets more events than the kernel keeps for one watch, and the
child goes on. Its handler wants none of the flooded files, so only the loss can wake it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from waiting import wait_until

REPO = Path(__file__).resolve().parents[2]

CHILD = """
import sys, time
from watchdog.observers import Observer
from coop_engine.loop.watching import watch_changes

folder, told = sys.argv[1], sys.argv[2]

def tell():
    with open(told, "a") as out:
        out.write("woke\\n")

if sys.argv[3] == "serve":
    from coop_engine.loop.serve import _Signal

    handler = _Signal(tell, lambda path: False)  # wants no file: a change wakes nothing
else:
    from coop_tui.app import _LedgerWatch

    class App:  # what the app's watch asks of the app: a message posted
        def post_message(self, message):
            tell()

    handler = _LedgerWatch(App())
observer = Observer()
watch_changes(observer, handler, folder)
observer.start()
print("watching", flush=True)
time.sleep(600)
"""


def queue_limit() -> int:
    """The events the kernel keeps for an inotify instance before it drops the rest."""
    return int(Path("/proc/sys/fs/inotify/max_queued_events").read_text())


@pytest.mark.parametrize("face", ["serve", "app"])
def test_events_the_kernel_lost_wake_the_watcher(tmp_path: Path, face: str) -> None:
    folder, told = tmp_path / "watched", tmp_path / "told"
    folder.mkdir()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder), str(told), face],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "watching"
        os.kill(child.pid, signal.SIGSTOP)
        # Each file is two events (created, closed after writing): past the kernel's queue.
        for index in range(queue_limit() // 2 + 1000):
            (folder / f"f{index}").write_bytes(b"")
        os.kill(child.pid, signal.SIGCONT)
        wait_until(
            lambda: told.exists() and "woke" in told.read_text(),
            f"the {face}'s watch woken by the events the kernel lost",
            timeout=20,
        )
    finally:
        child.kill()
        child.wait(10)
