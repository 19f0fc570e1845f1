"""The `coop` command.

Exit codes: 0 ok; 1 refused by a rule (one line on stderr, no traceback); 2 usage.
Commands that need neither the ledger nor the TUI import neither: the CLI is started
often, by hand, by scripts and inside chats, so start-up stays cheap.
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    from typing import Any


class UsageError(Exception):
    """Bad input that argparse could not catch; exit 2."""


def _columns() -> int:
    """The terminal's width, as shutil would say, without importing shutil."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    stdout = sys.__stdout__
    try:
        return os.get_terminal_size(stdout.fileno()).columns if stdout else 80
    except (ValueError, OSError):
        return 80


class _HelpFormatter(argparse.HelpFormatter):
    # argparse builds a formatter for every argument it adds, and the stock one imports
    # shutil (with bz2, lzma and zlib) to measure the terminal: that costs more than
    # `coop chats` spends reading 200 chats.
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[_Parser]


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


def _unix_time(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not Unix seconds: {text!r}") from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more: {text}")
    return value


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser. For a known command word only that command's subparser is built:
    building all of them costs more than `coop chats` itself."""
    parser = _Parser(
        prog="coop",
        description="Coordinate a fleet of Claude Code and Codex chats.",
    )
    parser.add_argument(
        "--home", help="state directory (default $COOP_HOME or ~/.local/share/coop)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    word = _command_word(argv)
    for name, register in COMMANDS.items():
        if word not in COMMANDS or name == word:
            register(sub)
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
    take.add_argument("todo", type=_positive_int)
    _json(take)
    take.set_defaults(handler=_ledger("todo_take"))
    report = actions.add_parser("report", help="record the outcome of a todo's work (fact 5)")
    report.add_argument("todo", type=_positive_int)
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
    events.add_argument("--limit", type=_positive_int, default=50)
    events.set_defaults(handler=_listed("events"))


def _resend(sub: Subparsers) -> None:
    resend = sub.add_parser("resend", help="Send again an expired delivery (once)")
    resend.add_argument("outbox_id", help="an envelope id, or the start of one")
    resend.add_argument("--by", required=True, choices=["dad", "chief"])
    resend.set_defaults(handler=_ledger("resend"))


def _invite(sub: Subparsers) -> None:
    invite = sub.add_parser("invite", help="invite one exact chat to a todo")
    invite.add_argument("todo", type=_positive_int)
    invite.add_argument("--session", required=True, help="claude:SESSION_ID")
    invite.add_argument("--host", help="the fleet Mac the chat lives on (default: this one)")
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
    named.add_argument("session", help="claude:SESSION_ID or codex:THREAD_ID")
    named.set_defaults(handler=_ledger("chief_set"))
    actions.add_parser("show", help="which chat is the chief").set_defaults(
        handler=_ledger("chief_show")
    )


def _serve(sub: Subparsers) -> None:
    serve = sub.add_parser("serve", help="run the coordinator until stopped")
    serve.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    serve.set_defaults(handler=_ledger("serve"))


def _tick(sub: Subparsers) -> None:
    tick = sub.add_parser("tick", help="one coordinator pass: send, observe, decide")
    tick.add_argument("--at", type=_unix_time, help="run the pass as of this Unix time")
    tick.set_defaults(handler=_ledger("tick"))


def _chats(sub: Subparsers) -> None:
    chats = sub.add_parser("chats", help="live chats as the registries show them")
    chats.add_argument("--host", help="only this fleet Mac")
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
    show.add_argument("session_id", metavar="SESSION_ID", help="SESSION_ID or claude:SESSION_ID")
    show.add_argument("--host", help="the fleet Mac it lives on (default: search them all)")
    _json(show)
    show.add_argument("--lines", type=_positive_int, default=20, help="transcript entries (20)")
    show.set_defaults(handler=_fleet("chat_show"))


def _tui(sub: Subparsers) -> None:
    tui = sub.add_parser("tui", help="the live app (the same as `coop` alone)")
    tui.add_argument(
        "--attach", action="store_true", help="watch only; never run a coordinator here"
    )
    tui.set_defaults(handler=_launcher("tui"))


def _demo(sub: Subparsers) -> None:
    demo = sub.add_parser("demo", help="a simulated fleet on this machine, in the app")
    demo.add_argument(
        "--no-tui", action="store_true", help="set the fleet up, print the outbox, stop"
    )
    demo.set_defaults(handler=_launcher("demo"))


COMMANDS: dict[str, Callable[[Subparsers], None]] = {
    "todo": _todo,
    "outbox": _listing("outbox", "envelopes and their five facts"),
    "sessions": _listing("sessions", "enrolled and observed chats"),
    "notifications": _listing("notifications", "what Dad was told, newest first"),
    "events": _events,
    "resend": _resend,
    "invite": _invite,
    "obligations": _listing("obligations", "outcome obligations and when they are due"),
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
}


def main(argv: Sequence[str] | None = None) -> int:
    # Everything imported so far lives as long as the process: keep the cyclic
    # collector from scanning it again and again while a command allocates.
    gc.freeze()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    if args.home:
        os.environ["COOP_HOME"] = args.home
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        # `coop` alone opens the app.
        argv = [*(["--home", args.home] if args.home else []), "tui"]
        args = build_parser(argv).parse_args(argv)
        handler = args.handler
    from coop_engine.cli.output import one_line
    from coop_engine.errors import CoopError
    from hosts.mac.errors import HostsError

    try:
        return handler(args)
    except (CoopError, HostsError) as error:
        print(f"coop: {one_line(str(error))}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"coop: {one_line(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
