"""`coop web`'s locks and --read-only (issue 30; DESIGN 13): nothing starts without this
start's token, a websocket from a foreign Origin or a foreign Host is refused, and a
read-only process's engine refuses every command, not only its keys."""

from __future__ import annotations

from ..mutant import Mutant

WEB = "coop_engine/cli/web.py"
FRAME = "coop_engine/frame.py"
LOCKS = "tests/web/test_web_locks.py"
LAUNCHER = "coop_engine/cli/launcher.py"
READ_ONLY = "tests/engine/test_read_only.py"
READ_ONLY_KEYS = (
    f"{LOCKS}::test_in_read_only_the_add_todo_keys_over_the_websocket_leave_the_ledger_unchanged"
)

MUTANTS = (
    Mutant(
        "web-token-not-checked",
        "coop web's token: a request without this start's token starts nothing",
        WEB,
        "        if not self.token_right(given):\n",
        "        if False:\n",
        (
            f"{LOCKS}::test_without_the_token_nothing_is_served_and_no_app_starts",
            f"{LOCKS}::test_a_wrong_token_in_the_address_or_the_cookie_is_refused_and_no_app_starts",
        ),
    ),
    Mutant(
        "web-origin-not-checked",
        "coop web's Origin check: a websocket from another site's page is refused",
        WEB,
        "        if is_websocket and not self.origin_allowed(request):\n",
        "        if False:\n",
        (f"{LOCKS}::test_a_websocket_from_a_foreign_origin_is_refused_even_with_the_token",),
    ),
    Mutant(
        "web-host-not-checked",
        "coop web's Host check: a page asked under another name (DNS rebinding) is refused",
        WEB,
        "        if not self.host_allowed(request):\n",
        "        if False:\n",
        (f"{LOCKS}::test_a_foreign_host_is_refused_even_with_the_token_and_no_app_starts",),
    ),
    Mutant(
        "web-session-cap-not-kept",
        "coop web's session cap: one session over --max-sessions starts no app",
        WEB,
        '        if request.path in ("/", "/ws") and self.live_sessions >= self.most_sessions:\n',
        "        if False:\n",
        (f"{LOCKS}::test_with_the_token_the_websocket_streams_the_app_until_its_panes_show",),
    ),
    Mutant(
        "read-only-not-enforced-in-the-engine",
        "--read-only: the engine refuses every command of a read-only process, below the keys",
        FRAME,
        "        if _writes_refused:\n            raise ReadOnly(READ_ONLY)\n",
        "        pass\n",
        (
            f"{READ_ONLY}::test_every_write_a_read_only_process_asks_for_is_refused_and_nothing_is_recorded",
        ),
        select="sqlite",
    ),
    Mutant(
        "web-read-only-not-passed-to-the-apps",
        "--read-only: coop web --read-only starts each session's app read-only",
        WEB,
        '    if read_only:\n        argv.append("--read-only")\n',
        "",
        (READ_ONLY_KEYS,),
    ),
    Mutant(
        "read-only-app-runs-a-coordinator",
        "--read-only: a read-only app runs no coordinator of its own; it only watches",
        LAUNCHER,
        "    watch_only = args.attach or args.read_only\n",
        "    watch_only = args.attach\n",
        (READ_ONLY_KEYS,),
    ),
)
