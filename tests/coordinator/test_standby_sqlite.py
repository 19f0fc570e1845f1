"""`coop serve --standby` on a SQLite ledger (issue 31): two real serves on one home.
The second stands by, naming the first; when the first is SIGKILLed (the kernel drops
its flock, so the second need not wait for its lease to run out) the second takes the
lease at the next epoch and delivers, and every envelope is read exactly once by its
chat (the chat's own log)."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from officekit import Office
from waiting import wait_until

from coop_engine import lease
from coop_engine.models import Outbox

COOP = str(Path(sys.executable).with_name("coop"))


def settled(envelopes: int) -> bool:
    """Nothing left to send or to learn, once the round's `envelopes` exist (each chat's
    work envelope is made only when it accepted its invitation)."""
    if Outbox.select().count() < envelopes:
        return False
    return not Outbox.select().where(Outbox.state.in_(["pending", "uncertain"])).exists()


@pytest.mark.kill
def test_a_second_serve_stands_by_and_takes_over_a_killed_one_on_sqlite(
    office: Office, tmp_path: Path
) -> None:
    chats = [office.macs["office"].start("--think", "0.02") for _ in range(2)]
    argv = [COOP, "serve", "--standby", "--lease", "2", "--interval", "0.2"]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    serves: list[subprocess.Popen[bytes]] = []

    def said(number: int, text: str) -> bool:
        return text in logs[number].read_text()

    def invite(round_: int) -> None:
        for chat in chats:
            todo = office.engine.add_todo(f"todo {round_} for {chat.pid}")["id"]
            office.engine.invite(todo, chat.ref, "office")

    try:
        for log in logs:
            with log.open("ab") as out:
                serves.append(
                    subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=office.env())
                )
            if not serves[1:]:
                wait_until(lambda: said(0, "serving"), "the first serve serving")
        first, second = serves
        standing = f"standing by: coop serve (pid {first.pid} on office) holds this ledger"
        wait_until(lambda: said(1, standing), "the second serve standing by, naming the first")
        invite(0)
        each_round = 2 * len(chats)  # an invitation and its work, for each chat
        wait_until(lambda: settled(each_round), "the first serve delivering", interval=0.1)
        assert "invitation sent" not in logs[1].read_text()  # a standby sends nothing

        first.kill()
        first.wait(30)
        wait_until(lambda: said(1, "took over the ledger at lease epoch 2"), "the takeover")
        invite(1)
        wait_until(lambda: settled(2 * each_round), "the second serve delivering", interval=0.1)
        assert "invitation sent" in logs[1].read_text()
        seen = lease.read(office.engine.db)
        assert seen is not None and (seen.pid, seen.epoch) == (second.pid, 2)
    finally:
        for serve in serves:
            if serve.poll() is None:
                serve.send_signal(signal.SIGTERM)
                serve.wait(30)
    read = Counter(frame["msg_id"] for chat in chats for frame in chat.frames())
    envelopes = {row.id for row in Outbox.select()}
    assert len(envelopes) >= 2 * len(chats) * 2  # invitation and work, two rounds
    assert set(read) == envelopes
    assert max(read.values()) == 1, [msg for msg, n in read.items() if n > 1]
