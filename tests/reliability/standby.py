"""`make reliability`'s standby run: three `coop serve --standby --lease 2` on one
PostgreSQL ledger (tests/pgserver.py), invitations to simulated chats all along, and
the holder SIGKILLed, SIGSTOPped past its lease then resumed, or cut from the database,
over and over (tests/standbykit.py). Prints `RELIABILITY standby takeovers=N lost=N
duplicated=N slowest=S bound=B`, counted from the chats' own frame logs (an envelope a
dead holder recorded but never wrote is proven lost by its successor and sent again by
Dad, as in the main run: `sent_again=N` in the detail line); exits 1 when a delivery was
lost or read twice, or a takeover missed the lease + 5 s."""

from __future__ import annotations

import random
import shutil
import sys
import tempfile
from pathlib import Path

from pgserver import PgServer, Unavailable
from standbykit import KINDS, Standbys

LEASE = 2.0
BOUND = LEASE + 5.0


def run(rounds: int, seed: int | None) -> int:
    rng = random.Random(seed)
    try:
        server = PgServer().start()
    except (Unavailable, OSError) as error:
        print(f"RELIABILITY standby skipped: PostgreSQL cannot run here: {error}", flush=True)
        return 0
    workdir = Path(tempfile.mkdtemp(prefix="coop-standby-"))
    kept = False
    try:
        office = Standbys(workdir, server.reset(), 3, LEASE).start()
        try:
            for _ in range(rounds):
                office.invite()
                office.chaos(rng.choice(KINDS))
            office.invite()
            office.settle(300)
            tally = office.count()
        except BaseException:
            kept = True  # the serves' logs say what went wrong
            print(f"RELIABILITY standby failed: the serves' logs are in {workdir}", flush=True)
            raise
        finally:
            office.stop()
    finally:
        server.stop()
    seconds = [took.seconds for took in tally.takeovers]
    slowest = max(seconds, default=0.0)
    by_kind = " ".join(
        f"{kind}={max((t.seconds for t in tally.takeovers if t.kind == kind), default=0):.2f}s"
        for kind in KINDS
    )
    print(
        f"RELIABILITY-DETAIL standby envelopes={tally.envelopes} "
        f"sent_again={len(tally.sent_again)} slowest_by_kind {by_kind}"
    )
    for envelope in tally.sent_again:
        print(f"standby sent again: {envelope} {tally.states.get(envelope, '?')}", file=sys.stderr)
    print(
        f"RELIABILITY standby takeovers={len(tally.takeovers)} lost={len(tally.lost)} "
        f"duplicated={len(tally.duplicated)} slowest={slowest:.2f}s bound={BOUND:.0f}s",
        flush=True,
    )
    ok = not tally.lost and not tally.duplicated and slowest <= BOUND
    for name, envelopes in (("lost", tally.lost), ("duplicated", tally.duplicated)):
        for envelope in envelopes[:20]:
            print(f"standby {name}: {envelope} {tally.states.get(envelope, '?')}", file=sys.stderr)
    if not ok:
        print(f"RELIABILITY standby failed: the serves' logs are in {workdir}", flush=True)
    elif not kept:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run(int(sys.argv[1]) if len(sys.argv) > 1 else 30, None))
