"""Standby coordinators on one PostgreSQL ledger (issue 31): two and three `coop serve
--standby` as real processes, a stream of invitations to simulated chats, and the
holder SIGKILLed, SIGSTOPped past its lease and resumed, and cut from the database.
Every envelope is read exactly once by its chat (the chat's own log), every takeover
comes within the lease + 5 s, and a resumed or reconnected old holder says it stepped
down."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pgserver import PgServer, start_or_skip
from standbykit import Standbys

LEASE = 2.0
BOUND = LEASE + 5.0  # the rule: within lease + 5 s


@pytest.fixture(scope="module")
def postgresql_server() -> Iterator[PgServer]:
    server = start_or_skip()
    try:
        yield server
    finally:
        server.stop()


def run(server: PgServer, tmp_path: Path, serves: int, kinds: tuple[str, ...]) -> Standbys:
    office = Standbys(tmp_path, server.reset(), serves, LEASE).start()
    try:
        office.invite()
        for kind in kinds:
            office.invite()
            took = office.chaos(kind)
            print(f"takeover after {kind}: {took.seconds:.2f} s")
            assert took.new_pid != took.old_pid
            assert took.seconds <= BOUND, took
            office.invite()
        office.settle()
        tally = office.count()
    finally:
        office.stop()
    assert tally.envelopes >= 3 * (2 * len(kinds) + 1)
    assert tally.lost == [] and tally.duplicated == [], tally
    return office


@pytest.mark.kill
def test_two_standbys_survive_a_kill_a_stop_and_a_cut_delivering_each_envelope_once(
    postgresql_server: PgServer, tmp_path: Path
) -> None:
    office = run(postgresql_server, tmp_path, 2, ("kill", "stop", "cut"))
    stepped = [took for took in office.tally.takeovers if took.kind != "kill"]
    assert all(took.stepped_down for took in stepped)


@pytest.mark.kill
def test_three_standbys_pass_the_ledger_on_through_each_kind_of_loss(
    postgresql_server: PgServer, tmp_path: Path
) -> None:
    run(postgresql_server, tmp_path, 3, ("stop", "kill", "cut", "stop"))
