"""The coordinator's lease and its fence (issue 31; DESIGN 13): an intent to send under
an epoch a successor raised writes nothing, a renewal is a compare-and-set on the
holder's epoch, and the lease's times are the database's clock, never a machine's."""

from __future__ import annotations

from ..mutant import Mutant

LEASE = "coop_engine/lease.py"
TESTS = "tests/engine/test_lease.py"

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
)
