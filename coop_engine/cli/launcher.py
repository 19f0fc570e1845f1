"""`coop`, `coop tui` and `coop demo`: the one engine module that opens the app.

The import of `coop_tui` is lazy (inside each function) and declared as the single
exception of the import contract in pyproject.toml: every other engine module works, and
is tested, without Textual.
"""

from __future__ import annotations

import argparse
import sys

from coop_engine.home import coop_home, ensure_home


def on_a_terminal() -> bool:
    """Whether both stdin and stdout are a terminal, as the app needs."""
    return all(stream is not None and stream.isatty() for stream in (sys.stdin, sys.stdout))


READ_ONLY_BANNER = "read-only: this app changes nothing"


def tui(args: argparse.Namespace) -> int:
    """The app on this terminal, or on the pipes of `coop web`'s page (--in-browser).
    With --read-only every command of this process is refused in the engine (one
    line), and it runs no coordinator of its own: it only watches."""
    if not (args.in_browser or on_a_terminal()):
        print("coop: the app needs a terminal (stdin and stdout)", file=sys.stderr)
        return 2
    from coop_engine.frame import refuse_writes
    from coop_engine.loop.office import Office
    from coop_tui.app import CoopApp

    if args.read_only:
        refuse_writes()
    home = ensure_home(coop_home())
    office = Office.of(home)
    watch_only = args.attach or args.read_only
    banner = READ_ONLY_BANNER if args.read_only else None
    try:
        CoopApp(home, office, coordinator="none" if watch_only else "auto", banner=banner).run()
    finally:
        office.close()
    return 0


def demo(args: argparse.Namespace) -> int:
    """The simulated fleet in the app, on the home `--home` or `$COOP_HOME` names (else a
    temporary one); where it is is said first, and again once the demo ended."""
    import os

    from coop_engine.loop.demo import HINT, Demo

    # `coop --home DIR demo` and `coop demo --home DIR` both set COOP_HOME (cli/main.py).
    with Demo(os.environ.get("COOP_HOME"), say=_say) as demo:
        assert demo.office is not None
        if args.no_tui:
            _print_outbox()
        else:
            from coop_tui.app import CoopApp

            CoopApp(demo.home, demo.office, banner=HINT, first_adoption_after=60.0).run()
    _say(demo.farewell())
    return 0


def _say(line: str) -> None:
    print(line, flush=True)  # before the app takes the screen, and seen once it is gone


def _print_outbox() -> None:
    """The demo's outbox, as `coop outbox` prints it."""
    from coop_engine.cli.listings import OUTBOX_COLUMNS, outbox_rows
    from coop_engine.cli.output import print_rows

    print_rows(outbox_rows(), OUTBOX_COLUMNS, as_json=False)
