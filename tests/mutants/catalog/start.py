"""What a command loads as it starts (issue 32, item 1): a ledger-only command never
loads the fleet, ssh, Codex, the app or the coordinator's file watcher."""

from __future__ import annotations

from ..mutant import Mutant

MAIN = "coop_engine/cli/main.py"
LEDGER_CLI = "coop_engine/cli/ledger.py"
START = "tests/test_cli_start.py"

MUTANTS = (
    Mutant(
        "cli-main-loads-the-fleet-eagerly",
        "a ledger-only command never loads the fleet: the CLI's hub client (and with it"
        " the fleet and this Mac's host) is imported only by a command that asks Macs",
        MAIN,
        "from coop_engine.cli import arguments\n",
        "from coop_engine.cli import arguments, client  # noqa: F401\n",
        (f"{START}::test_a_ledger_command_loads_no_fleet_ssh_codex_app_or_watcher",),
        select="todo and list",
    ),
    Mutant(
        "cli-ledger-loads-the-watcher-eagerly",
        "a ledger-only command never loads the file watcher: coop serve's coordinator"
        " (watchdog) is imported only by coop serve",
        LEDGER_CLI,
        "from coop_engine.home import coop_home\n",
        "from coop_engine.home import coop_home\n"
        "from coop_engine.loop import serve  # noqa: F401\n",
        (f"{START}::test_a_ledger_command_loads_no_fleet_ssh_codex_app_or_watcher",),
        select="todo and add",
    ),
)
