"""The coordinator's lease and its fence (issue 31; DESIGN 13): an intent to send under
an epoch a successor raised writes nothing, a renewal is a compare-and-set on the
holder's epoch, and the lease's times are the database's clock, never a machine's; a
`coop tick` beside a hung holder takes the lease, and a standby outlives a connection
the server ended."""

from __future__ import annotations

from ..mutant import Mutant

LEASE = "coop_engine/lease.py"
TESTS = "tests/engine/test_lease.py"
TICK = "tests/coordinator/test_tick_beside_serve.py"
STANDBY = "tests/coordinator/test_standby.py"

MUTANTS = (
    Mutant(
        "standby-fence-not-checked",
        "the fence: the intent-to-send transaction checks the writer's epoch is the lease's",
        LEASE,
        "    if current != epoch:\n",
        "    if False:\n",
        (f"{TESTS}::test_an_intent_under_a_lease_a_successor_took_is_fenced_and_writes_nothing",),
    ),
    Mutant(
        "standby-renewal-without-compare-and-set",
        "a renewal moves the lease only while its epoch is still the holder's own",
        LEASE,
        "            & (Lease.epoch == epoch)\n            & (Lease.pid == me.pid)\n",
        "            & (Lease.pid == me.pid)\n",
        (f"{TESTS}::test_a_renewal_after_a_takeover_is_fenced_and_moves_nothing",),
    ),
    Mutant(
        "standby-lease-on-the-machine-s-clock",
        "the lease's times are the database's clock, never the machine's",
        LEASE,
        "    return pw.SQL(_SQLITE_NOW if is_sqlite(db) else _POSTGRES_NOW)\n",
        '    return pw.Value(__import__("time").time())\n',
        (f"{TESTS}::test_the_lease_runs_on_the_database_s_clock_not_the_machine_s",),
    ),
    Mutant(
        "standby-tick-takes-no-lease",
        "coop tick on a leased ledger nobody serves takes the lease, fencing out a hung holder",
        "coop_engine/cli/ledger.py",
        '        claim.take(fleet.office, "tick")\n',
        "        pass\n",
        (
            f"{TICK}::test_tick_on_a_leased_ledger_nobody_serves_takes_the_lease_and_fences_the_old_holder",
        ),  # noqa: E501
    ),
    Mutant(
        "standby-ends-on-a-dead-connection",
        "a standby stands by across a connection the server ended, and takes over",
        "coop_engine/loop/standby.py",
        "            except DATABASE_ERRORS as error:\n",
        "            except DATABASE_ERRORS[0] as error:\n",
        (f"{STANDBY}::test_a_standby_whose_connection_the_server_ended_stands_by_and_takes_over",),  # noqa: E501
    ),
)
