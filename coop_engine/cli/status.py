"""`coop status`: whether a coordinator runs on this ledger, and the envelopes by state.

Running means the ledger's claim is held now, as its lease and lock answer; the
heartbeat only says who holds it and when it last passed, or, once the holder is gone,
how long ago. The lease line names its epoch, who it fenced out and who stands by.
"""

from __future__ import annotations

import json
import time

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.formats import one_line
from coop_engine.home import coop_home
from coop_engine.loop.claim import ledger_claim

TYPE_CHECKING = False  # argparse costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    import argparse


def status(args: argparse.Namespace) -> int:
    """Print the coordinator and the count of envelopes in each state, as one JSON
    object with --json, else as a few lines. Exit 0 whatever the state."""
    ledger = open_ledger(coop_home())
    look = ledger_claim(ledger).look()
    counts = queries.outbox_counts()
    if args.json:
        print(json.dumps({"coordinator": look.as_json(), "counts": counts}))
        return 0
    # The record is a file anyone with the home can write: one line, whatever it says.
    print(f"coordinator  {one_line(look.sentence(time.time()))}")
    print("envelopes    " + ", ".join(f"{count} {state}" for state, count in counts.items()))
    leased = look.lease_line()
    if leased is not None:
        print(f"lease        {one_line(leased)}")
    return 0
