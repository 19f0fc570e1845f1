"""The process test_kill kills: delivery cycles through Coop's own door, forever.

    kill_child.py cycles HOME CONFIG_DIR CHAT MANAGED_DIR EPOCH [PAUSE [PASS_PAUSE]]

A cycle adds a todo, invites the chat `CHAT` (on the Mac "office", whose Claude folder
is CONFIG_DIR), and runs one coordinator pass: `Coordinator.tick`, the same pass `coop
tick` runs, so the envelope goes through the Claude door exactly as it does in use (the
two readings, the prediction, the intent recorded, the host's third read and the write,
the transport recorded), and the passes observe receipts and decide verdicts. Nothing
of the delivery is copied here: moving Coop's intent after the send is what the test
must see.

The engine's clock runs SPEED times as fast as real time from EPOCH (the same in every
child), so the receiver's admission limits, which Coop paces itself inside, never hold
a cycle up. Prints "ready" once set up, so the test knows when kills land in cycles.

PAUSE (seconds): a slow moment after each write returns, before the door records it, as
a loaded machine would have; the door's code is untouched. The test's kills "at the
write" use it, so they land between the write and its record on any machine.
PASS_PAUSE (seconds): the same after each pass, before the next cycle's todo: the kills
"after the pass" land once the transport is recorded.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

SPEED = 100.0


def cycles(
    home: str,
    config_dir: str,
    chat: str,
    managed_dir: str,
    epoch: str,
    pause: str = "0",
    pass_pause: str = "0",
) -> None:
    from coop_engine.db import open_ledger
    from coop_engine.engine import Engine
    from coop_engine.loop.coordinator import Coordinator
    from hosts.mac.local import LocalHost

    start = float(epoch)

    def clock() -> float:
        return start + (time.time() - start) * SPEED

    engine = Engine(open_ledger(Path(home)), clock=clock)
    office = LocalHost("office", config_dir=Path(config_dir), managed_dir=Path(managed_dir))
    if float(pause):
        write = office.send_frame

        def write_then_pause(*args: Any, **kwargs: Any) -> Any:
            answer = write(*args, **kwargs)
            time.sleep(float(pause))
            return answer

        office.send_frame = write_then_pause  # type: ignore[method-assign]
    coordinator = Coordinator(engine, {"office": office}, log=lambda line: None)
    print("ready", flush=True)
    while True:
        todo = engine.add_todo("Survive SIGKILL")["id"]
        engine.invite(todo, chat, "office")
        coordinator.tick()
        time.sleep(float(pass_pause))


if __name__ == "__main__":
    mode, *args = sys.argv[1:]
    {"cycles": cycles}[mode](*args)
