"""The app at 100,000 envelopes ([6/6] item 2): an event touches the outbox pane's rows
it changes and asks the ledger what it asks at 100 envelopes; the header's counts come
from the ledger's indexes, not from a scan of the outbox's history."""

from __future__ import annotations

from ..mutant import Mutant

SCALE = "tests/tui/test_scale.py"
ROWS = f"{SCALE}::test_each_event_touches_only_the_row_it_changes_at_100_and_at_10000_envelopes"
LEDGER = f"{SCALE}::test_the_ledger_does_as_much_per_event_at_10000_envelopes_as_at_100"

MUTANTS = (
    Mutant(
        "header-counts-scan-the-outbox",
        "the app at scale: the header counts the states that may need Dad through the"
        " state index, not every envelope of the history grouped",
        "coop_engine/queries/status.py",
        "        .where(Outbox.state.in_(list(counts)))\n",
        "",
        (LEDGER,),
    ),
    Mutant(
        "an-event-rebuilds-the-outbox-window",
        "the app at scale: an event patches the rows it changes and adds the new ones,"
        " it does not read and remake the whole window",
        "coop_tui/live.py",
        "        if changes.reload or (fresh and text):\n",
        "        if changes.reload or fresh or not text:\n",
        (ROWS, LEDGER),
    ),
    Mutant(
        "a-patched-row-keeps-its-place-in-the-sort",
        "the app at scale: a row patched in place moves to its place in Dad's sort,"
        " the cursor staying on its row",
        "coop_tui/live.py",
        "            self.outbox_pane.sort_again_keeping_cursor()\n",
        "            pass\n",
        (ROWS,),
    ),
)
