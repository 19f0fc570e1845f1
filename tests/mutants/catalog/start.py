"""What a command loads as it starts (issue 32, item 1): a ledger-only command never
loads the fleet, ssh, Codex, the app or the coordinator's file watcher; `coop chats` on a
Mac without Codex never loads Codex's readers, sqlite3, hashlib or dataclasses. A fleet
listing that leaves without the interpreter's teardown flushes all it printed first."""

from __future__ import annotations

from ..mutant import Mutant

MAIN = "coop_engine/cli/main.py"
LEDGER_CLI = "coop_engine/cli/ledger.py"
LOCAL = "hosts/mac/local.py"
MAC_SURVEY = "hosts/mac/survey.py"
QUICK = "coop_engine/cli/quick.py"
START = "tests/test_cli_start.py"
WITHOUT_CODEX = (
    f"{START}::test_coop_chats_on_a_mac_without_codex_loads_no_codex_sqlite_hashlib_or_dataclasses"
)

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
    Mutant(
        "local-host-loads-codex-eagerly",
        "coop chats on a Mac without Codex never loads Codex's readers: this Mac's host"
        " imports them (sqlite3, dataclasses, typing) only once a Codex home is there",
        LOCAL,
        "from hosts.mac.codex_home import default_codex_home, no_home_listing\n",
        "from hosts.mac import codex  # noqa: F401\n"
        "from hosts.mac.codex_home import default_codex_home, no_home_listing\n",
        (WITHOUT_CODEX,),
        select="json",
    ),
    Mutant(
        "mac-survey-loads-hashlib-eagerly",
        "coop chats never loads hashlib: the Mac's survey digests only in a pass, and"
        " imports it there",
        MAC_SURVEY,
        "import json\nimport os\nimport re\n",
        "import hashlib  # noqa: F401\nimport json\nimport os\nimport re\n",
        (WITHOUT_CODEX,),
        select="json",
    ),
    Mutant(
        "cli-leaves-before-its-output-is-flushed",
        "a fleet listing leaves the process without the interpreter's teardown only once"
        " everything it printed has reached its reader: `coop chats --json` is never cut",
        MAIN,
        "        sys.stdout.flush()\n",
        "        pass\n",
        ("tests/test_cli_exit.py",),
        select="every_row",
    ),
    Mutant(
        "quick-reading-takes-a-refused-choice",
        "the command line read without argparse is argparse's own: a value outside its"
        " choices (`--by me`) is argparse's usage error, never a command run",
        QUICK,
        "    if choices is not None and value not in choices:\n",
        "    if False:\n",
        ("tests/engine/test_cli_quick.py",),
        select="report",
    ),
)
