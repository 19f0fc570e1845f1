"""`coop serve --standby`: a coordinator that waits for the ledger's lease, serves once
it holds it, and waits again when a successor fences it out.

While another coordinator holds the lease, the standby says so in one line (naming the
holder), records itself every third of its lease so `coop status` lists it, and tries
the lease about once a second: it takes it when the lease lapsed by the database's
clock (its holder hung, slept or lost the database) or when the holder's session lock is
free (its holder is gone). Each round of serving is a fresh Server on the same claim:
its first pass reconciles what the previous holder left uncertain, as a restart does.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

from coop_engine import lease
from coop_engine.db import DATABASE_ERRORS, ledger_fault
from coop_engine.loop.claim import WHO, LedgerClaim
from coop_engine.loop.serve import Log, Server

POLL_MOST = 1.0  # the longest a standby goes without trying the lease


def serve_standing_by(
    new_server: Callable[[], Server], claim: LedgerClaim, host: str, log: Log
) -> int:
    """Stand by, serve, and stand by again after stepping down, until SIGTERM or Ctrl-C
    (0); 1 when serving stopped on an error in Coop itself."""
    stopping = threading.Event()
    serving: list[Server] = []

    def stop(*_: object) -> None:
        stopping.set()
        for server in serving:
            server.stop()

    while True:
        signal.signal(signal.SIGTERM, stop)
        signal.signal(signal.SIGINT, stop)
        if not wait_for_lease(claim, host, log, stopping):
            return 0
        server = new_server()
        serving[:] = [server]
        code = server.run()  # it holds the claim already: run takes nothing more
        if stopping.is_set() or not server.stepped_down:
            return code
        log("standing by again")
        # A holder often steps down because it lost the database (a cut, a server that
        # ended its sessions): its connection in this thread may be a dead one, which
        # says "connection already closed" to every call until it is closed.
        fresh_connection(claim)


def wait_for_lease(claim: LedgerClaim, host: str, log: Log, stopping: threading.Event) -> bool:
    """Wait until this process holds the lease (True) or `stopping` is set (False)."""
    me = claim.claimant(host, "serve")
    period = claim.seconds / 3
    told: str | None = None
    recorded_at = float("-inf")
    elapsed = 0.0
    try:
        while not stopping.is_set():
            try:
                if claim.try_take(host, "serve"):
                    log(f"took over the ledger at lease epoch {claim.epoch}")
                    return True
                if elapsed - recorded_at >= period:
                    lease.stand_by(claim.ledger, me, period)
                    recorded_at = elapsed
                line = standing_by(claim)
            except DATABASE_ERRORS as error:
                line = f"standing by; the ledger refused: {ledger_fault(error) or error}"
                fresh_connection(claim)
            if line != told:
                log(line)
                told = line
            step = min(POLL_MOST, period)
            stopping.wait(step)
            elapsed += step
        return False
    finally:
        try:
            lease.forget_standby(claim.ledger, me)
        except DATABASE_ERRORS:
            pass  # it drops out of the list after three of its periods anyway


def fresh_connection(claim: LedgerClaim) -> None:
    """Close this thread's connection to the ledger, so the next call opens another: a
    server connection that failed stays failed (SQLite's recovers by itself)."""
    if not claim.ledger.in_transaction():
        claim.ledger.close()


def standing_by(claim: LedgerClaim) -> str:
    """The one line a standby says: who holds the ledger, at which epoch."""
    seen = lease.read(claim.ledger)
    if seen is None:
        return "standing by: another coordinator holds this ledger"
    return (
        f"standing by: {WHO.get(seen.by, seen.by)} (pid {seen.pid} on {seen.host}) holds "
        f"this ledger (lease epoch {seen.epoch}, {seen.seconds:g} s); "
        "taking over when its lease lapses"
    )
