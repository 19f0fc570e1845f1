"""The simulator against the real Claude Code 2.1.328: the same scenarios, the same shapes.

Every scenario of scenarios.py runs in a real office and a simulated one; what the two
chats wrote is compared by shape (shapes.py): entry kinds and their order, keys, id
rules, notice wording, registry keys and statuses, and what ``coop chats`` made of them.
A difference fails with every mismatch listed; fix whichever side is wrong.
"""

from __future__ import annotations

import pytest

from . import shapes
from .conftest import Runs
from .scenarios import SCENARIOS


@pytest.mark.real_claude
@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_the_simulator_writes_what_the_real_chat_writes(runs: Runs, scenario: str) -> None:
    real = runs.get(scenario, "real").trace
    sim = runs.get(scenario, "sim").trace
    problems = shapes.transcript_differences(real.entries, sim.entries)
    assert len(real.envelopes) == len(sim.envelopes)
    problems += shapes.facts_differences(real.entries, sim.entries, real.envelopes, sim.envelopes)
    problems += shapes.registry_differences(real.registries, sim.registries)
    if real.chats != sim.chats:
        problems.append(f"coop chats: real {real.chats}, simulator {sim.chats}")
    assert not problems, "\n".join(problems)
