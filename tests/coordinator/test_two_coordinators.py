"""Two coordinators on one ledger (a `coop serve` and an app, or a `coop tick` run by
hand) never send the same envelope: the intent to send is a compare-and-set."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
from officekit import Office
from waiting import wait_until

from coop_engine.models import Outbox

COOP = str(Path(sys.executable).with_name("coop"))


@pytest.mark.kill
def test_serve_and_ticks_racing_send_each_envelope_once(office: Office, tmp_path: Path) -> None:
    chats = [office.macs["office"].start("--think", "0.05") for _ in range(4)]
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        [COOP, "serve", "--interval", "0.2"], stdout=log, stderr=subprocess.STDOUT, env=office.env()
    )
    stop = threading.Event()

    def tick_by_hand() -> None:
        while not stop.is_set():
            subprocess.run([COOP, "tick"], capture_output=True, env=office.env())

    racers = [threading.Thread(target=tick_by_hand) for _ in range(2)]
    for racer in racers:
        racer.start()
    try:
        for round_ in range(5):
            for chat in chats:
                todo = office.engine.add_todo(f"todo {round_} for {chat.pid}")["id"]
                office.engine.invite(todo, chat.ref, "office")
            time.sleep(0.3)
        wait_until(
            lambda: not Outbox.select().where(Outbox.state.in_(["pending", "uncertain"])).exists(),
            "every delivery settled",
            interval=0.2,
        )
    finally:
        stop.set()
        for racer in racers:
            racer.join()
        server.send_signal(signal.SIGTERM)
        server.wait(10)
        log.close()
    sent = Counter(frame["msg_id"] for chat in chats for frame in chat.frames())
    envelopes = {row.id for row in Outbox.select()}
    assert set(sent) == envelopes
    assert max(sent.values()) == 1, [msg for msg, n in sent.items() if n > 1]
