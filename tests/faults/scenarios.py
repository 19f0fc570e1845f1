"""The scenarios that reach each fault point, and recovery by fault-free passes.

Nothing resends by itself: in recovery, a send proven lost is sent again only by Dad's
decision, which the scenario takes as he would."""

from __future__ import annotations

import json
import os
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coop_engine.models import Dispatch, Obligation, Outbox, Session

from .kit import RECOVERY_PASSES, VERDICT_STEP, World


@dataclass
class Scenario:
    """Sets a run up so the point's operation happens, and says when it is done."""

    chat: str
    goal: Callable[[World, str], bool]
    before: Callable[[World, str], None] = lambda world, outbox: None
    heal: Callable[[World, str], None] = lambda world, outbox: None
    advance: float = VERDICT_STEP  # how far the clock moves when everything is quiet
    expects_frames: bool = True


def _work_delivered(world: World, outbox: str) -> bool:
    current = _latest(world, outbox)
    work = world.work_for(current)
    return work is not None and work.state == "delivered"


def _latest(world: World, outbox: str) -> str:
    """The envelope at the end of a Send again chain."""
    row = world.row(outbox)
    while row.resent_as:
        row = world.row(row.resent_as)
    return str(row.id)


def _expired_by(reason: str) -> Callable[[World, str], bool]:
    def goal(world: World, outbox: str) -> bool:
        row = world.row(outbox)
        return row.state == "expired" and (row.expiry or {}).get("reason") == reason

    return goal


def _forge_wrong_provenance(world: World, outbox: str) -> None:
    """A line in the chat's transcript naming the work envelope, from the wrong sender."""
    chat = world.fleet.chat("accept")
    work = world.work_for(outbox)
    assert work is not None
    line = {
        "type": "user",
        "isMeta": True,
        "uuid": str(uuid.uuid4()),
        "origin": {"kind": "peer", "from": "mallory", "msg_id": work.id},
        "message": {"role": "user", "content": "forged"},
    }
    with open(chat.transcript, "a") as transcript:
        transcript.write(json.dumps(line) + "\n")


def _conflict_recorded(world: World, outbox: str) -> bool:
    work = world.work_for(outbox)
    return work is not None and work.conflict is not None


def _accepted_then_due(world: World, outbox: str) -> None:
    world.clock.now += 2 * 3600 + 1  # the outcome obligation of a managed accept is due


def _stale(world: World, outbox: str) -> None:
    Session.update(generation=Session.generation + 1).execute()


def _socket_open_to_group(world: World, outbox: str) -> None:
    os.chmod(world.fleet.chat("accept").socket, 0o660)


def _socket_private(world: World, outbox: str) -> None:
    os.chmod(world.fleet.chat("accept").socket, 0o600)


def _queue_waits(world: World, outbox: str) -> None:
    """What is sent waits in Codex's queue until healed, so a survey sees it there
    whatever the holder's speed."""
    world.fleet.pause_holder()


def _queue_taken(world: World, outbox: str) -> None:
    world.fleet.resume_holder()


SCENARIOS: dict[str, Scenario] = {
    "accept": Scenario("accept", _work_delivered),
    "codex": Scenario("codex", _work_delivered),
    "codex_queued": Scenario("codex", _work_delivered, before=_queue_waits, heal=_queue_taken),
    "refusal": Scenario(
        "accept", _work_delivered, before=_socket_open_to_group, heal=_socket_private
    ),
    "refuse": Scenario("refuse", _expired_by("refused-by-receiver-policy")),
    "held": Scenario("held", lambda world, outbox: world.row(outbox).held is not None),
    "decline": Scenario(
        "decline",
        lambda world, outbox: Dispatch.get_by_id(world.row(outbox).dispatch_id).state == "declined",
    ),
    "lose": Scenario("lose", _expired_by("receiver-idle-without-entry")),
    "conflict": Scenario("accept", _conflict_recorded),
    "obligation": Scenario(
        "accept",
        lambda world, outbox: Obligation.select().where(Obligation.state == "overdue").exists(),
        advance=0.0,
    ),
    "stale": Scenario(
        "accept",
        lambda world, outbox: world.row(outbox).state == "cancelled",
        before=_stale,
        expects_frames=False,
    ),
}


def first_phase(world: World, scenario: str, outbox: str) -> None:
    """What must already have happened before the point's operation can: the conflict
    needs delivered work to forge a sighting of, the obligation an accept."""
    if scenario in ("conflict", "obligation"):
        settle(world, outbox, _work_delivered, advance=0.0)
        if scenario == "conflict":
            _forge_wrong_provenance(world, outbox)
        else:
            _accepted_then_due(world, outbox)


def settle(world: World, outbox: str, goal: Callable[[World, str], bool], advance: float) -> bool:
    """Fault-free passes until the goal holds. Nothing resends by itself: a send proven
    lost is sent again only by Dad's decision, as the harness takes it here."""
    for _ in range(RECOVERY_PASSES):
        world.tick()
        if goal(world, outbox):
            return True
        latest = world.row(_latest(world, outbox))
        work = world.work_for(outbox)
        for row in (latest, work):
            if row is not None and row.state == "expired" and not row.resent_as:
                if not goal(world, outbox):
                    world.engine.resend(row.id, by="dad")
        if advance and world.chats_settled():
            world.clock.now += advance
        else:
            time.sleep(0.05)
    return goal(world, outbox)


def check_frames(world: World) -> None:
    """No frame read twice; none read while its envelope looks unsent; two envelopes of
    one dispatch and kind reach a chat only through a recorded Send again."""
    frames = world.frames()
    twice = [envelope for envelope, n in Counter(frames).items() if n > 1]
    assert not twice, f"a frame written twice: {twice}"
    by_dispatch: dict[tuple[Any, str], list[Outbox]] = {}
    for envelope in frames:
        row = Outbox.get_or_none(Outbox.id == envelope)
        assert row is not None, f"a chat read {envelope}, which the ledger never held"
        assert row.state != "pending", f"{envelope} reached a chat but looks unsent"
        by_dispatch.setdefault((row.dispatch_id, row.kind), []).append(row)
    for rows in by_dispatch.values():
        ids = {row.id for row in rows}
        firsts = [row for row in rows if row.resent_from not in ids]
        assert len(firsts) == 1, f"several envelopes of one dispatch without Send again: {ids}"
