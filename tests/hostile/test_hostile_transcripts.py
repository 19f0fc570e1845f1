"""Hostile transcripts: lines that are not UTF-8, carry NUL bytes, are JSON but not
objects, one 50 MB line, a file replaced by a shorter one, a file deleted while read.
The invitation still lands and is accepted, a replaced file is a recorded conflict, and
`coop chat show` prints it all without a traceback.

Also proved in tests/door/test_delivery.py: a torn last line waits for its newline, and
a file growing while read loses no line; tests/door/test_receipts.py: non-object JSON,
NUL bytes and wrong provenance at the parser."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostilekit import env_for, shown_cleanly
from simchats import turn_over
from waiting import wait_until

from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Dispatch, Notification, Outbox
from hosts.mac.local import LocalHost
from hosts.sim.launch import SimChat, SimFleet

FIFTY_MB = 50 << 20


class Office:
    def __init__(self, tmp: Path, sims: SimFleet) -> None:
        self.home = tmp / "home"
        self.engine = Engine(open_ledger(self.home), actor="dad")
        self.host = LocalHost("office", config_dir=sims.config_dir, managed_dir=tmp / "managed")
        self.log: list[str] = []
        self.coordinator = Coordinator(self.engine, {"office": self.host}, self.log.append)

    def invite(self, chat: SimChat, title: str = "Fix the flaky importer test") -> str:
        todo = self.engine.add_todo(title)["id"]
        return str(self.engine.invite(todo, chat.ref, "office")["outbox"])

    def until(self, check: Callable[[], bool]) -> None:
        """Passes until `check` holds."""

        def passed() -> bool:
            self.coordinator.tick()
            return check()

        wait_until(passed, "the passes' outcome", interval=0.05, detail=lambda: self.log[-8:])


@pytest.fixture
def office(tmp_path: Path, sims: SimFleet) -> Iterator[Office]:
    office = Office(tmp_path, sims)
    try:
        yield office
    finally:
        office.engine.db.close()


def hostile_lines(outbox_id: str, nonce: str) -> bytes:
    """What a transcript may hold between Coop's bookmark and the peer entry."""
    return b"".join(
        [
            b"\xff\xfe not UTF-8 " + outbox_id.encode() + b" \x80\n",
            b'{"type": "user", "nul": "\x00\x00", "id": "' + outbox_id.encode() + b'"}\n',
            b"[1, 2, 3]\n",
            b'"' + outbox_id.encode() + b'"\n',
            b"42\nnull\n\n",
            b'{"type": "assistant", "message": "COOP_ACCEPT ' + nonce.encode() + b'"}\n',
            # One line of 50 MB, naming the envelope and its nonce, that is not JSON.
            b"{" + outbox_id.encode() + b" COOP_ACCEPT " + nonce.encode() + b" "
            + b"x" * FIFTY_MB + b"\n",
        ]
    )  # fmt: skip


def test_hostile_lines_between_the_bookmark_and_the_peer_entry_are_skipped(
    office: Office, sims: SimFleet, run_coop: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    chat = sims.start("--history", "--think", "0.02")
    outbox_id = office.invite(chat)
    nonce = Outbox.get_by_id(outbox_id).payload["nonce"]
    send_frame = LocalHost._op_send_frame

    def after_the_bookmark(self: LocalHost, **args: Any) -> Any:
        with open(chat.transcript, "ab") as transcript:
            transcript.write(hostile_lines(outbox_id, nonce))
        return send_frame(self, **args)

    monkeypatch.setattr(LocalHost, "_op_send_frame", after_the_bookmark)
    dispatch = Outbox.get_by_id(outbox_id).dispatch_id

    def accepted_and_working() -> bool:
        work = Outbox.get_or_none((Outbox.dispatch == dispatch) & (Outbox.kind == "work"))
        return work is not None and work.state == "delivered"

    office.until(accepted_and_working)
    invitation = Outbox.get_by_id(outbox_id)
    assert invitation.conflict is None and invitation.receipt["shape"] == "user"
    assert Dispatch.get_by_id(dispatch).state == "accepted"
    assert chat.transcript.stat().st_size > FIFTY_MB
    env = env_for(sims.config_dir)
    for args in (("chat", "show", chat.session_id), ("chat", "show", chat.session_id, "--json")):
        shown = run_coop(*args, env=env, timeout=120)
        shown_cleanly(shown, (0,))
    shown_cleanly(run_coop("chats", env=env), (0,))


def test_a_transcript_replaced_by_a_shorter_file_is_a_recorded_conflict(
    office: Office, sims: SimFleet
) -> None:
    chat = sims.start("--history", "--think", "0.02", "--answer", "silent")
    outbox_id = office.invite(chat)
    office.until(lambda: Outbox.get_by_id(outbox_id).state == "delivered")
    turn_over(chat, outbox_id)
    first_line = chat.transcript.read_bytes().split(b"\n", 1)[0] + b"\n"
    replacement = chat.transcript.with_suffix(".new")
    replacement.write_bytes(first_line)
    replacement.rename(chat.transcript)  # a new, shorter file under the same name
    office.coordinator.tick()
    row = Outbox.get_by_id(outbox_id)
    assert row.state == "delivered"
    assert row.conflict == "transcript was replaced or truncated; reading it again from 0"
    notice = Notification.select().where(Notification.kind == "delivery conflict").get()
    assert outbox_id in notice.text
    assert [frame["msg_id"] for frame in chat.frames()] == [outbox_id]


def test_a_transcript_deleted_while_read_costs_nothing_and_reading_goes_on(
    office: Office, sims: SimFleet
) -> None:
    chat = sims.start("--history", "--think", "0.02")
    first = office.invite(chat, "The first todo")
    office.until(lambda: Outbox.get_by_id(first).state == "delivered")
    chat.transcript.unlink()  # the user cleared the history mid-conversation
    second = office.invite(chat, "The second todo")
    office.until(lambda: Outbox.get_by_id(second).state == "delivered")
    frames = [frame["msg_id"] for frame in chat.frames()]
    assert frames.count(first) == 1 and frames.count(second) == 1
    assert all(json.loads(line) for line in chat.transcript.read_text().splitlines())
