"""Fault injection at every I/O point of a delivery cycle (tests/faults/points.py).

For each point, a run where exactly that operation fails: the pass that meets the
failure leaves the ledger exactly in the state before or after each of its writes (the
failed write in the state before it), the envelope in a state that tells the truth about
what may have reached the chat, and fault-free passes afterwards finish the delivery
without writing any frame twice. The FAULTS line at the end of the run counts them.
"""

from __future__ import annotations

import re
from pathlib import Path

import peewee as pw
import pytest
from waiting import wait_until

from coop_engine.engine import Engine
from hosts.mac.host import OPERATIONS

from .kit import (
    RECOVERY_PASSES,
    SEEN_COMMANDS,
    SEEN_OPS,
    Fault,
    Fleet,
    World,
    dump,
    instrument,
)
from .points import POINTS, Point
from .report import RESULTS, Run
from .scenarios import SCENARIOS, check_frames, first_phase, settle

REPO = Path(__file__).resolve().parents[2]
CYCLE_SOURCES = (
    "coop_engine/loop/coordinator.py",
    "coop_engine/loop/doors/claude.py",
    "coop_engine/loop/doors/codex.py",
)
RUNS = [(point, flavour) for point in POINTS for flavour in point.flavours]


@pytest.mark.parametrize(
    ("point", "flavour"), RUNS, ids=[f"{p.name}-{f.replace(' ', '_')}" for p, f in RUNS]
)
def test_a_failure_at_this_point_leaves_old_or_new_state_and_the_next_pass_recovers(
    point: Point, flavour: str, fleet: Fleet, fault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    world = World(fleet, fault_root, through_helper=point.helper)
    try:
        run = _run(point, flavour, world, monkeypatch)
    finally:
        world.close()
    RESULTS.append(run)


def _run(point: Point, flavour: str, world: World, monkeypatch: pytest.MonkeyPatch) -> Run:
    instrument(monkeypatch, world)
    scenario = SCENARIOS[point.scenario]
    outbox = world.invite(scenario.chat)
    first_phase(world, point.scenario, outbox)
    scenario.before(world, outbox)
    fault = Fault(point.name, point.stage, flavour, world.recorder)
    point.inject(monkeypatch, fault, world)
    fault.armed = True

    raised = None
    for _ in range(RECOVERY_PASSES):
        start = dump(world.ledger)
        world.recorder.writes, world.recorder.on = [], True
        try:
            world.tick()
        except pw.OperationalError as error:
            raised = type(error).__name__
        finally:
            world.recorder.on = False
        if fault.fired:
            break
        if scenario.advance and world.chats_settled():
            world.clock.now += scenario.advance
    assert fault.fired, f"{point.name} never happened; log: {world.log[-5:]}"
    end = dump(world.ledger)

    world.recorder.check_chain(start, end)
    recorded = world.recorder.after_fault(fault)
    outcome = f"new ({', '.join(recorded)})" if recorded else "old"
    if point.layer == "ledger":
        assert raised and outcome == "old", "a failed ledger write must change nothing"
    else:
        assert raised is None, f"a host failure escaped the coordinator: {raised}"
    state = world.row(outbox).state
    assert state in point.expect, f"{point.name}: envelope {state}, expected {point.expect}"

    scenario.heal(world, outbox)
    recovered = settle(world, outbox, scenario.goal, scenario.advance)
    assert recovered, f"the next passes did not recover; log: {world.log[-8:]}"
    if scenario.expects_frames:
        # Written is not yet read, and a predicted refusal expires the envelope at once:
        # the chat may read its frame after the ledger's goal.
        wait_until(world.frames, "a chat to read what was sent", detail=lambda: world.log[-5:])
    check_frames(world)
    return Run(point.name, flavour, outcome, raised, state, recovered)


def _called(pattern: str) -> set[str]:
    found: set[str] = set()
    for source in CYCLE_SOURCES:
        found |= set(re.findall(pattern, (REPO / source).read_text()))
    return found


def test_every_engine_command_and_host_operation_of_a_cycle_is_a_fault_point() -> None:
    """Read from the coordinator's and the adapter's code: a new call there is a new I/O
    point, and this fails until it is listed in tests/faults/points.py."""
    commands = {name for name in _called(r"self\.engine\.(\w+)\(") if name != "clock"}
    operations = _called(r"host\.(\w+)\(") & set(OPERATIONS)
    listed_commands = {point.operation for point in POINTS if point.layer == "ledger"}
    listed_operations = {point.operation for point in POINTS if point.layer == "host"}
    assert commands, "no engine command found in the coordinator's code"
    assert commands <= listed_commands, f"not fault points: {commands - listed_commands}"
    assert operations <= listed_operations, f"not fault points: {operations - listed_operations}"
    for name in listed_commands:
        assert callable(getattr(Engine, name, None)), f"{name} is not an engine command"


def test_zz_every_operation_the_runs_used_is_a_fault_point() -> None:
    """What the runs actually called (run after them: the name sorts last)."""
    if not RESULTS:
        pytest.skip("no fault run in this session")
    listed_commands = {point.operation for point in POINTS if point.layer == "ledger"}
    listed_operations = {point.operation for point in POINTS if point.layer == "host"}
    # Dad's own commands in the scenarios (a todo, an invitation, Send again) are not
    # part of the coordinator's cycle.
    dads = {"add_todo", "invite", "resend"}
    assert set(SEEN_COMMANDS) - dads <= listed_commands, set(SEEN_COMMANDS) - listed_commands
    assert set(SEEN_OPS) <= listed_operations, set(SEEN_OPS) - listed_operations
