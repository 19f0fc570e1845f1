"""A coordinator pass that meets a failure outside one envelope's cycle: the ledger
refusing a whole pass under `coop serve`, another process writing the ledger in the
middle of a pass, a projects folder that cannot be read."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import peewee as pw
import pytest
from waiting import wait_until

from coop_engine.engine import Engine
from coop_engine.loop.doors.claude import ClaudeDoor
from coop_engine.loop.serve import Server
from coop_engine.models import Outbox
from hosts.fleet import Fleet as MacFleet
from hosts.mac import transcripts
from hosts.mac.host import HostError
from hosts.mac.local import LocalHost

from .kit import Fleet, World
from .scenarios import check_frames

REPO = Path(__file__).resolve().parents[2]


def _delivered(*ids: str) -> bool:
    return all(Outbox.get_by_id(i).state == "delivered" for i in ids)


def test_serve_logs_a_pass_the_ledger_refused_and_delivers_on_the_next(
    fleet: Fleet, fault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(fleet, fault_root)
    outbox = world.invite("accept")
    original = Engine.mark_uncertain
    refused: list[str] = []

    def locked_once(self: Engine, outbox_id: str, *args: Any, **kwargs: Any) -> Any:
        if not refused:
            refused.append(outbox_id)
            raise pw.OperationalError("database is locked")
        return original(self, outbox_id, *args, **kwargs)

    monkeypatch.setattr(Engine, "mark_uncertain", locked_once)
    log: list[str] = []
    macs = MacFleet("office", {"office": world.host})
    server = Server(world.engine, macs, world.home, log.append, pass_interval=0.1)
    thread = server.start_thread()
    try:

        def delivered() -> bool:
            assert thread.is_alive(), f"the coordinator died: {log[-5:]}"
            return _delivered(outbox)

        wait_until(delivered, "the envelope delivered", interval=0.1, detail=lambda: log[-5:])
    finally:
        server.stop()
        thread.join(10)
        world.close()
    assert refused == [outbox]
    assert any("a pass on office failed on the ledger: database is locked" in line for line in log)
    check_frames(world)


def test_another_process_writing_the_ledger_mid_pass_does_not_fail_the_next_send(
    fleet: Fleet, fault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass reads its pending envelopes, then sends them one by one. Dad adding a todo
    from his terminal between two sends must not fail the next send's intent (SQLite
    refuses at once to begin a write over a read older than another's commit)."""
    world = World(fleet, fault_root)
    first, second = world.invite("accept"), world.invite("accept")
    original = ClaudeDoor.deliver
    wrote: list[int] = []

    def deliver(self: ClaudeDoor, row: Outbox) -> None:
        if not wrote:
            env = {**os.environ, "COOP_HOME": str(world.home)}
            env.pop("COOP_DATABASE_URL", None)
            added = subprocess.run(
                [sys.executable, "-m", "coop_engine.cli", "todo", "add", "From Dad's terminal"],
                capture_output=True, text=True, env=env, cwd=REPO, timeout=30,
            )  # fmt: skip
            wrote.append(added.returncode)
        original(self, row)

    monkeypatch.setattr(ClaudeDoor, "deliver", deliver)
    try:
        world.tick()
        assert wrote == [0]
        assert {Outbox.get_by_id(i).state for i in (first, second)} <= {"uncertain", "delivered"}

        def delivered() -> bool:
            if _delivered(first, second):
                return True
            world.tick()
            return False

        wait_until(delivered, "both delivered", interval=0.05, detail=lambda: world.log[-5:])
        check_frames(world)
    finally:
        world.close()


def test_a_projects_folder_that_cannot_be_read_is_an_error_not_a_missing_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ "No transcript" lets a verdict call an idle chat's frame lost; a folder that could
    not be listed proves nothing."""
    (tmp_path / "projects").mkdir()

    def unreadable(path: Any) -> Any:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(transcripts.os, "scandir", unreadable)
    host = LocalHost("office", config_dir=tmp_path)
    with pytest.raises(HostError, match="Permission denied"):
        host.transcript_scan("5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11", 0, ["x"])
    monkeypatch.undo()
    assert transcripts.locate(tmp_path, "5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11") is None
