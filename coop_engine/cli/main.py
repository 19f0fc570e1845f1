"""The `coop` command.

Exit codes: 0 ok; 1 refused by a rule (one line on stderr, no traceback); 2 usage.
Commands that need neither the ledger nor the TUI import neither: the CLI is started
often, by hand, by scripts and inside chats, so start-up stays cheap.
"""

from __future__ import annotations

import gc
import os
import re  # the editable install's finder has loaded it already, and so do the chats
import sys

from coop_engine.cli import arguments
from coop_engine.cli.table import SUPPRESS, Arg, Command

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence
    from typing import NoReturn

    from coop_engine.cli.table import Handler


class UsageError(Exception):
    """Bad input that argparse could not catch; exit 2."""


# Each face of a command is imported only when that command runs: `coop chats` never
# loads the ledger, `coop todo list` never loads the app.


def _ledger(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import ledger

        handler: Handler = getattr(ledger, name)
        return handler(args)

    return run


# The fleet's listings (`coop chats`, `coop hosts`, `coop chat show`) change nothing and
# leave nothing open: the `coop` program is done with them once their output is flushed.
_DONE_WHEN_FLUSHED: set[Handler] = set()


def _fleet(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import fleet

        handler: Handler = getattr(fleet, name)
        return handler(args)

    _DONE_WHEN_FLUSHED.add(run)
    return run


def _launcher(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import launcher

        handler: Handler = getattr(launcher, name)
        return handler(args)

    return run


def _listed(name: str) -> Handler:
    """A listing of the ledger (coop_engine/cli/listings.py)."""

    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import listings

        return listings.show(name, args)

    return run


def _status(args: argparse.Namespace) -> int:
    from coop_engine.cli import status

    return status.status(args)


def _web(args: argparse.Namespace) -> int:
    from coop_engine.cli import web

    return web.web(args)


def _completion(args: argparse.Namespace) -> int:
    from coop_engine.cli import completion

    print(completion.script(args.shell, build_parser()), end="")
    return 0


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """argparse's parser of the table (cli/parser.py): for a known command word only
    that command's subparser is built."""
    from coop_engine.cli import parser

    return parser.build(COMMANDS, argv)


JSON = Arg("--json", action="store_true", help="print one JSON array of objects")
ENVELOPE_ID = Arg(
    "outbox_id", type=arguments.envelope_id, help="an envelope id, or the start of one"
)


def _listing(help_text: str, name: str) -> Command:
    return Command(help_text, (JSON,), _listed(name))


COMMANDS: dict[str, Command] = {
    "todo": Command(
        "add, list, take and report todos",
        dest="todo_command",
        actions={
            "add": Command(
                "add a todo; prints its id",
                (Arg("title"), Arg("--body", default=""), Arg("--project"), JSON),
                _ledger("todo_add"),
            ),
            "list": _listing("list todos", "todo list"),
            "take": Command(
                "take a todo from inside a chat (the chat is detected)",
                (Arg("todo", type=arguments.positive_int), JSON),
                _ledger("todo_take"),
            ),
            "report": Command(
                "record the outcome of a todo's work (fact 5)",
                (
                    Arg("todo", type=arguments.positive_int),
                    Arg("--outcome", required=True),
                    Arg("--by", required=True, choices=["dad", "chief", "worker"]),
                ),
                _ledger("todo_report"),
            ),
        },
    ),
    "outbox": _listing("envelopes and their five facts", "outbox"),
    "sessions": _listing("enrolled and observed chats", "sessions"),
    "notifications": _listing("what Dad was told, newest first", "notifications"),
    "events": Command(
        "the ledger's history, newest first",
        (JSON, Arg("--limit", type=arguments.positive_int, default=50)),
        _listed("events"),
    ),
    "resend": Command(
        "Send again an expired delivery (once)",
        (ENVELOPE_ID, Arg("--by", required=True, choices=["dad", "chief"])),
        _ledger("resend"),
    ),
    "withdraw": Command(
        "take back an envelope never sent, or one still in a Codex queue",
        (ENVELOPE_ID, Arg("--by", required=True, choices=["dad", "chief"])),
        _ledger("withdraw"),
    ),
    "status": Command(
        "the coordinator, and envelopes by state",
        (Arg("--json", action="store_true", help="print one JSON object"),),
        _status,
    ),
    "invite": Command(
        "invite one exact chat to a todo",
        (
            Arg("todo", type=arguments.positive_int),
            Arg(
                "--session",
                required=True,
                type=arguments.session_ref,
                help="the chat: claude:SESSION_ID, codex:THREAD_ID, its short id or its name",
            ),
            Arg(
                "--host",
                type=arguments.host_name,
                help="the fleet Mac the chat lives on (default: this one)",
            ),
            JSON,
        ),
        _ledger("invite"),
    ),
    "obligations": _listing("outcome obligations and when they are due", "obligations"),
    "obligation": Command(
        "decide on an overdue outcome obligation",
        dest="obligation_command",
        actions={
            "review": Command(
                "record Dad's or the chief's decision: wait (the work goes on) or release"
                " (nobody does it: the todo is open again)",
                (
                    Arg(
                        "obligation",
                        type=arguments.positive_int,
                        help="its id (coop obligations)",
                    ),
                    Arg("--decision", required=True, choices=["wait", "release"]),
                    Arg("--by", required=True, choices=["dad", "chief"]),
                ),
                _ledger("obligation_review"),
            )
        },
    ),
    "adopt": Command(
        "run the adoption pass for CLI takers",
        (Arg("--once", action="store_true", required=True, help="one pass now"), JSON),
        _ledger("adopt"),
    ),
    "chief": Command(
        "the chat acting as Dad's proxy",
        dest="chief_command",
        actions={
            "set": Command(
                "name the chief (Dad only)",
                (
                    Arg(
                        "session",
                        type=arguments.session_ref,
                        help="claude:SESSION_ID, codex:THREAD_ID, or a chat's short id or name",
                    ),
                ),
                _ledger("chief_set"),
            ),
            "show": Command("which chat is the chief", (), _ledger("chief_show")),
        },
    ),
    "serve": Command(
        "run the coordinator until stopped",
        (
            Arg(
                "--interval",
                type=arguments.interval,
                default=30.0,
                help="the longest this machine's chats go unsurveyed when nothing changes"
                " (default 30 s)",
            ),
            Arg(
                "--standby",
                action="store_true",
                help="when another coordinator holds the ledger, wait and take over once its"
                " lease lapses",
            ),
            Arg(
                "--lease",
                type=arguments.interval,
                default=15.0,
                metavar="SECONDS",
                help="the lease this coordinator renews every third of (default 15 s)",
            ),
        ),
        _ledger("serve"),
    ),
    "tick": Command(
        "one coordinator pass: send, observe, decide",
        (Arg("--at", type=arguments.unix_time, help="run the pass as of this Unix time"),),
        _ledger("tick"),
    ),
    # These read Macs, not the ledger: they never import peewee.
    "chats": Command(
        "live chats as the registries show them",
        (Arg("--host", type=arguments.host_name, help="only this fleet Mac"), JSON),
        _fleet("chats"),
    ),
    "hosts": Command("each fleet Mac: reachable, latency, chats", (JSON,), _fleet("hosts")),
    "chat": Command(
        "one chat, wherever in the fleet it lives",
        dest="chat_command",
        actions={
            "show": Command(
                "a chat's registry entry and transcript tail",
                (
                    Arg(
                        "session_id",
                        metavar="SESSION_ID",
                        type=arguments.chat_id,
                        help="SESSION_ID, claude:SESSION_ID, or a live chat's short id or name",
                    ),
                    Arg(
                        "--host",
                        type=arguments.host_name,
                        help="the fleet Mac it lives on (default: search them all)",
                    ),
                    JSON,
                    Arg(
                        "--lines",
                        type=arguments.positive_int,
                        default=20,
                        help="transcript entries (20)",
                    ),
                ),
                _fleet("chat_show"),
            )
        },
    ),
    "tui": Command(
        "the live app (the same as `coop` alone)",
        (
            Arg("--attach", action="store_true", help="watch only; never run a coordinator here"),
            Arg(
                "--read-only",
                action="store_true",
                help="show everything, change nothing: every command is refused, no"
                " coordinator runs",
            ),
            # The app on the pipes textual-serve gives it (coop web), not on a terminal.
            Arg("--in-browser", action="store_true", help=SUPPRESS),
        ),
        _launcher("tui"),
    ),
    "demo": Command(
        "a simulated fleet on this machine, in the app",
        (
            Arg("--no-tui", action="store_true", help="set the fleet up, print the outbox, stop"),
            Arg(
                "--home",
                type=arguments.home_dir,
                default=SUPPRESS,  # never overrides `coop --home DIR demo`
                help="the demo's Coop home: a new or empty folder, kept after the demo"
                " (default $COOP_HOME, else a temporary one)",
            ),
        ),
        _launcher("demo"),
    ),
    "web": Command(
        "the app in a browser, behind a token; prints the URL to open",
        (
            Arg(
                "--bind",
                type=arguments.bind_address,
                default="127.0.0.1",
                help="the address to listen on (default 127.0.0.1: this machine only)",
            ),
            Arg(
                "--port",
                type=arguments.port,
                default=8420,
                help="the port to listen on (default 8420)",
            ),
            Arg(
                "--read-only",
                action="store_true",
                help="the pages show everything and change nothing (no coordinator runs in them)",
            ),
            Arg(
                "--max-sessions",
                type=arguments.positive_int,
                default=4,
                help="browser sessions open at once, each one app process (default 4)",
            ),
        ),
        _web,
    ),
    "completion": Command(
        "a shell completion script, made from these commands",
        (Arg("shell", choices=["bash", "zsh", "fish"]),),
        _completion,
    ),
}


USAGE_LINE_WIDTH = 400


def run() -> None:
    """The `coop` program (pyproject's console script; `python -m coop_engine.cli`).
    Tests call main(), which always returns."""
    sys.exit(main(exit_when_done=True))


def main(argv: Sequence[str] | None = None, *, exit_when_done: bool = False) -> int:
    """The command's exit code. With `exit_when_done`, a command of _DONE_WHEN_FLUSHED
    ends the process itself once its output is flushed (_exit_now)."""
    # Everything imported so far lives as long as the process: keep the cyclic
    # collector from scanning it again and again while a command allocates.
    gc.freeze()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parse(argv)
    if args.home:
        os.environ["COOP_HOME"] = args.home
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        from coop_engine.cli.launcher import on_a_terminal

        if not on_a_terminal():
            # Piped or scripted: drawing the app would put escape codes into the pipe.
            sys.stderr.write(build_parser(argv).format_usage())
            print("coop: the app needs a terminal; name a command", file=sys.stderr)
            return 2
        # `coop` alone opens the app.
        argv = [*(["--home", args.home] if args.home else []), "tui"]
        args = _parse(argv)
        handler = args.handler
    from coop_engine.errors import BadInput, CoopError
    from hosts.mac.errors import HostsError

    exits_now = exit_when_done and handler in _DONE_WHEN_FLUSHED
    if exits_now:
        gc.disable()  # what a listing leaves for the collector goes with the process
    try:
        code = handler(args)
    except BadInput as error:
        _say(str(error))
        return 2
    except (CoopError, HostsError) as error:
        _say(str(error))
        return 1
    except UsageError as error:
        _say(str(error))
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _reader_gone()
    except Exception as error:
        fault = _ledger_fault(error)
        if fault is None:
            raise  # a bug: its traceback is what a report needs
        _say(fault)
        return 1
    if exits_now:
        _exit_now(code)
    return code


def _exit_now(code: int) -> NoReturn:
    """Out of the process as soon as what the command printed is flushed, without the
    interpreter's teardown: freeing every module and object one by one takes about 2 ms
    of each `coop chats`, and nobody is left to see it (issue 32, item 1)."""
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        code = _reader_gone()
    try:
        sys.stderr.flush()
    except OSError:
        pass  # nowhere left to say anything
    os._exit(code)


def _say(refusal: str) -> None:
    """The one line a refused command prints on stderr."""
    # Imported only to say it: the formatter loads dataclasses, which a command that
    # prints no chat's text (`coop completion`, sourced by every new shell) never needs.
    from coop_engine.formats import one_line

    print(f"coop: {one_line(refusal)}", file=sys.stderr)


SIGPIPE_STATUS = 128 + 13


def _reader_gone() -> int:
    """The reader of stdout went away (`coop chats | head -1`): stop quietly, as `cat`
    does. What is still buffered goes nowhere, so the exit flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return SIGPIPE_STATUS


def _parse(argv: list[str]) -> argparse.Namespace:
    """The command line parsed. A usage error is one line on stderr, argparse's own
    (`PROG: error: ...`), without the usage block `--help` shows; exit 2."""
    from coop_engine.cli import quick

    quickly = quick.parse(COMMANDS, argv)
    if quickly is not None:
        return quickly
    import io

    said, stderr = io.StringIO(), sys.stderr
    sys.stderr = said
    try:
        return build_parser(argv).parse_args(argv)
    except SystemExit as stop:
        if stop.code == 2:
            said = io.StringIO(_last_line(said.getvalue()))
        raise
    finally:
        sys.stderr = stderr
        stderr.write(said.getvalue())


def _last_line(text: str) -> str:
    """argparse's error line, with each long value it quotes cut short (and the whole
    line, when it echoes an argument unquoted)."""
    from coop_engine.errors import ECHO_WIDTH, shown

    lines = [line for line in text.splitlines() if line.strip()] or [""]
    line = lines[-1]
    for quote in "'\"":  # repr() quotes with either
        long_value = f"{quote}([^{quote}]{{{ECHO_WIDTH + 1},}}){quote}"
        line = re.sub(long_value, lambda m: repr(shown(m[1])), line)
    return (line if len(line) <= USAGE_LINE_WIDTH else line[:USAGE_LINE_WIDTH] + "...") + "\n"


def _ledger_fault(error: Exception) -> str | None:
    """The line for a ledger that failed under the command (a full disk, a read-only
    file system, a lost server), or None. Only a command that opened the ledger can meet
    one, and it has loaded the module that words them."""
    if "coop_engine.db" not in sys.modules:
        return None
    from coop_engine.db import ledger_fault

    return ledger_fault(error)


if __name__ == "__main__":
    sys.exit(main())
