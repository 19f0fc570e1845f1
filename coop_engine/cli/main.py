"""The `coop` command.

Exit codes: 0 ok; 1 refused by a rule (one line on stderr, no traceback); 2 usage.
Commands that need neither the ledger nor the TUI import neither: the CLI is started
often, by hand, by scripts and inside chats, so start-up stays cheap.
"""

from __future__ import annotations

import argparse
import gc
import os
import re  # argparse has loaded it already
import sys
from collections.abc import Callable, Sequence

from coop_engine.cli import arguments

Handler = Callable[[argparse.Namespace], int]

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    pass


class UsageError(Exception):
    """Bad input that argparse could not catch; exit 2."""


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[arguments.Parser]


# Each face of a command is imported only when that command runs: `coop chats` never
# loads the ledger, `coop todo list` never loads the app.


def _ledger(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import ledger

        handler: Handler = getattr(ledger, name)
        return handler(args)

    return run


def _fleet(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine.cli import fleet

        handler: Handler = getattr(fleet, name)
        return handler(args)

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


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser. For a known command word only that command's subparser is built:
    building all of them costs more than `coop chats` itself."""
    parser = arguments.Parser(
        prog="coop",
        description="Coordinate a fleet of Claude Code and Codex chats.",
        home=False,
    )
    parser.add_argument(
        "--home",
        type=arguments.home_dir,
        help="state directory (default $COOP_HOME or ~/.local/share/coop)",
    )
    parser.add_argument("--version", action=arguments.Version, help="print Coop's version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=arguments.Parser)
    word = _command_word(argv)
    for name, register in COMMANDS.items():
        if word not in COMMANDS or name == word:
            register(sub)
    if "-h" in argv or "--help" in argv:
        from coop_engine.cli import examples

        examples.attach(parser)
    return parser


def _command_word(argv: Sequence[str]) -> str | None:
    after_home = False
    for arg in argv:
        if after_home:
            after_home = False
        elif arg == "--home":
            after_home = True
        elif not arg.startswith("-"):
            return arg
    return None


def _json(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print one JSON array of objects")


def _todo(sub: Subparsers) -> None:
    todo = sub.add_parser("todo", help="add, list, take and report todos")
    actions = todo.add_subparsers(dest="todo_command", metavar="ACTION", required=True)
    add = actions.add_parser("add", help="add a todo; prints its id")
    add.add_argument("title")
    add.add_argument("--body", default="")
    add.add_argument("--project")
    _json(add)
    add.set_defaults(handler=_ledger("todo_add"))
    listing = actions.add_parser("list", help="list todos")
    _json(listing)
    listing.set_defaults(handler=_listed("todo list"))
    take = actions.add_parser("take", help="take a todo from inside a chat (the chat is detected)")
    take.add_argument("todo", type=arguments.positive_int)
    _json(take)
    take.set_defaults(handler=_ledger("todo_take"))
    report = actions.add_parser("report", help="record the outcome of a todo's work (fact 5)")
    report.add_argument("todo", type=arguments.positive_int)
    report.add_argument("--outcome", required=True)
    report.add_argument("--by", required=True, choices=["dad", "chief", "worker"])
    report.set_defaults(handler=_ledger("todo_report"))


def _listing(name: str, help_text: str) -> Callable[[Subparsers], None]:
    def register(sub: Subparsers) -> None:
        command = sub.add_parser(name, help=help_text)
        _json(command)
        command.set_defaults(handler=_listed(name))

    return register


def _events(sub: Subparsers) -> None:
    events = sub.add_parser("events", help="the ledger's history, newest first")
    _json(events)
    events.add_argument("--limit", type=arguments.positive_int, default=50)
    events.set_defaults(handler=_listed("events"))


def _resend(sub: Subparsers) -> None:
    resend = sub.add_parser("resend", help="Send again an expired delivery (once)")
    resend.add_argument(
        "outbox_id", type=arguments.envelope_id, help="an envelope id, or the start of one"
    )
    resend.add_argument("--by", required=True, choices=["dad", "chief"])
    resend.set_defaults(handler=_ledger("resend"))


def _withdraw(sub: Subparsers) -> None:
    withdraw = sub.add_parser(
        "withdraw", help="take back an envelope never sent, or one still in a Codex queue"
    )
    withdraw.add_argument(
        "outbox_id", type=arguments.envelope_id, help="an envelope id, or the start of one"
    )
    withdraw.add_argument("--by", required=True, choices=["dad", "chief"])
    withdraw.set_defaults(handler=_ledger("withdraw"))


def _obligation(sub: Subparsers) -> None:
    obligation = sub.add_parser("obligation", help="decide on an overdue outcome obligation")
    actions = obligation.add_subparsers(dest="obligation_command", metavar="ACTION", required=True)
    review = actions.add_parser(
        "review",
        help="record Dad's or the chief's decision: wait (the work goes on) or release"
        " (nobody does it: the todo is open again)",
    )
    review.add_argument("obligation", type=arguments.positive_int, help="its id (coop obligations)")
    review.add_argument("--decision", required=True, choices=["wait", "release"])
    review.add_argument("--by", required=True, choices=["dad", "chief"])
    review.set_defaults(handler=_ledger("obligation_review"))


def _status(sub: Subparsers) -> None:
    status = sub.add_parser("status", help="the coordinator, and envelopes by state")
    status.add_argument("--json", action="store_true", help="print one JSON object")
    status.set_defaults(handler=_status_handler)


def _status_handler(args: argparse.Namespace) -> int:
    from coop_engine.cli import status

    return status.status(args)


def _invite(sub: Subparsers) -> None:
    invite = sub.add_parser("invite", help="invite one exact chat to a todo")
    invite.add_argument("todo", type=arguments.positive_int)
    invite.add_argument(
        "--session",
        required=True,
        type=arguments.session_ref,
        help="the chat: claude:SESSION_ID, codex:THREAD_ID, its short id or its name",
    )
    invite.add_argument(
        "--host",
        type=arguments.host_name,
        help="the fleet Mac the chat lives on (default: this one)",
    )
    _json(invite)
    invite.set_defaults(handler=_ledger("invite"))


def _adopt(sub: Subparsers) -> None:
    adopt = sub.add_parser("adopt", help="run the adoption pass for CLI takers")
    adopt.add_argument("--once", action="store_true", required=True, help="one pass now")
    _json(adopt)
    adopt.set_defaults(handler=_ledger("adopt"))


def _chief(sub: Subparsers) -> None:
    chief = sub.add_parser("chief", help="the chat acting as Dad's proxy")
    actions = chief.add_subparsers(dest="chief_command", metavar="ACTION", required=True)
    named = actions.add_parser("set", help="name the chief (Dad only)")
    named.add_argument(
        "session",
        type=arguments.session_ref,
        help="claude:SESSION_ID, codex:THREAD_ID, or a chat's short id or name",
    )
    named.set_defaults(handler=_ledger("chief_set"))
    actions.add_parser("show", help="which chat is the chief").set_defaults(
        handler=_ledger("chief_show")
    )


def _serve(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run the coordinator until stopped")
    serve.add_argument(
        "--interval",
        type=arguments.interval,
        default=30.0,
        help="the longest this machine's chats go unsurveyed when nothing changes (default 30 s)",
    )
    serve.add_argument(
        "--standby",
        action="store_true",
        help="when another coordinator holds the ledger, wait and take over once its lease lapses",
    )
    serve.add_argument(
        "--lease",
        type=arguments.interval,
        default=15.0,
        metavar="SECONDS",
        help="the lease this coordinator renews every third of (default 15 s)",
    )
    serve.set_defaults(handler=_ledger("serve"))


def _tick(sub: Subparsers) -> None:
    tick = sub.add_parser("tick", help="one coordinator pass: send, observe, decide")
    tick.add_argument("--at", type=arguments.unix_time, help="run the pass as of this Unix time")
    tick.set_defaults(handler=_ledger("tick"))


def _chats(sub: Subparsers) -> None:
    chats = sub.add_parser("chats", help="live chats as the registries show them")
    chats.add_argument("--host", type=arguments.host_name, help="only this fleet Mac")
    _json(chats)
    chats.set_defaults(handler=_fleet("chats"))


def _hosts(sub: Subparsers) -> None:
    hosts = sub.add_parser("hosts", help="each fleet Mac: reachable, latency, chats")
    _json(hosts)
    hosts.set_defaults(handler=_fleet("hosts"))


def _chat(sub: Subparsers) -> None:
    chat = sub.add_parser("chat", help="one chat, wherever in the fleet it lives")
    actions = chat.add_subparsers(dest="chat_command", metavar="ACTION", required=True)
    show = actions.add_parser("show", help="a chat's registry entry and transcript tail")
    show.add_argument(
        "session_id",
        metavar="SESSION_ID",
        type=arguments.chat_id,
        help="SESSION_ID, claude:SESSION_ID, or a live chat's short id or name",
    )
    show.add_argument(
        "--host",
        type=arguments.host_name,
        help="the fleet Mac it lives on (default: search them all)",
    )
    _json(show)
    show.add_argument(
        "--lines", type=arguments.positive_int, default=20, help="transcript entries (20)"
    )
    show.set_defaults(handler=_fleet("chat_show"))


def _tui(sub: Subparsers) -> None:
    tui = sub.add_parser("tui", help="the live app (the same as `coop` alone)")
    tui.add_argument(
        "--attach", action="store_true", help="watch only; never run a coordinator here"
    )
    tui.add_argument(
        "--read-only",
        action="store_true",
        help="show everything, change nothing: every command is refused, no coordinator runs",
    )
    # The app on the pipes textual-serve gives it (coop web), not on a terminal.
    tui.add_argument("--in-browser", action="store_true", help=argparse.SUPPRESS)
    tui.set_defaults(handler=_launcher("tui"))


def _web(sub: Subparsers) -> None:
    web = sub.add_parser("web", help="the app in a browser, behind a token; prints the URL to open")
    web.add_argument(
        "--bind",
        type=arguments.bind_address,
        default="127.0.0.1",
        help="the address to listen on (default 127.0.0.1: this machine only)",
    )
    web.add_argument(
        "--port", type=arguments.port, default=8420, help="the port to listen on (default 8420)"
    )
    web.add_argument(
        "--read-only",
        action="store_true",
        help="the pages show everything and change nothing (no coordinator runs in them)",
    )
    web.add_argument(
        "--max-sessions",
        type=arguments.positive_int,
        default=4,
        help="browser sessions open at once, each one app process (default 4)",
    )
    web.set_defaults(handler=_web_handler)


def _web_handler(args: argparse.Namespace) -> int:
    from coop_engine.cli import web

    return web.web(args)


def _demo(sub: Subparsers) -> None:
    demo = sub.add_parser("demo", help="a simulated fleet on this machine, in the app")
    demo.add_argument(
        "--no-tui", action="store_true", help="set the fleet up, print the outbox, stop"
    )
    demo.add_argument(
        "--home",
        type=arguments.home_dir,
        default=argparse.SUPPRESS,  # never overrides `coop --home DIR demo`
        help="the demo's Coop home: a new or empty folder, kept after the demo"
        " (default $COOP_HOME, else a temporary one)",
    )
    demo.set_defaults(handler=_launcher("demo"))


def _completion(sub: Subparsers) -> None:
    completion = sub.add_parser(
        "completion", help="a shell completion script, made from these commands"
    )
    completion.add_argument("shell", choices=["bash", "zsh", "fish"])
    completion.set_defaults(handler=_completion_handler)


def _completion_handler(args: argparse.Namespace) -> int:
    from coop_engine.cli import completion

    print(completion.script(args.shell, build_parser()), end="")
    return 0


COMMANDS: dict[str, Callable[[Subparsers], None]] = {
    "todo": _todo,
    "outbox": _listing("outbox", "envelopes and their five facts"),
    "sessions": _listing("sessions", "enrolled and observed chats"),
    "notifications": _listing("notifications", "what Dad was told, newest first"),
    "events": _events,
    "resend": _resend,
    "withdraw": _withdraw,
    "status": _status,
    "invite": _invite,
    "obligations": _listing("obligations", "outcome obligations and when they are due"),
    "obligation": _obligation,
    "adopt": _adopt,
    "chief": _chief,
    "serve": _serve,
    "tick": _tick,
    # These read Macs, not the ledger: they never import peewee.
    "chats": _chats,
    "hosts": _hosts,
    "chat": _chat,
    "tui": _tui,
    "demo": _demo,
    "web": _web,
    "completion": _completion,
}


USAGE_LINE_WIDTH = 400


def main(argv: Sequence[str] | None = None) -> int:
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

    try:
        return handler(args)
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
