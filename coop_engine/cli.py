"""The `coop` command.

Exit codes: 0 ok; 1 refused by a rule (one line on stderr, no traceback); 2 usage.
Commands that need neither the ledger nor the TUI import neither: the CLI is started
often, by hand, by scripts and inside chats, so start-up stays cheap.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]

TYPE_CHECKING = False
if TYPE_CHECKING:
    Subparsers = argparse._SubParsersAction[argparse.ArgumentParser]


class UsageError(Exception):
    """Bad input that argparse could not catch; exit 2."""


def _ledger(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine import cli_ledger

        handler: Handler = getattr(cli_ledger, name)
        return handler(args)

    return run


def _fleet(name: str) -> Handler:
    def run(args: argparse.Namespace) -> int:
        from coop_engine import cli_fleet

        handler: Handler = getattr(cli_fleet, name)
        return handler(args)

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="coop",
        description="Coordinate a fleet of Claude Code and Codex chats.",
    )
    parser.add_argument(
        "--home", help="state directory (default $COOP_HOME or ~/.local/share/coop)"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _todo_commands(sub)
    _delivery_commands(sub)
    _fleet_commands(sub)
    _app_commands(sub)
    return parser


def _todo_commands(sub: Subparsers) -> None:
    todo = sub.add_parser("todo", help="add, list, take and report todos")
    todo_sub = todo.add_subparsers(dest="todo_command", metavar="ACTION", required=True)
    add = todo_sub.add_parser("add", help="add a todo; prints its id")
    add.add_argument("title")
    add.add_argument("--body", default="")
    add.add_argument("--project")
    add.add_argument("--json", action="store_true")
    add.set_defaults(handler=_ledger("todo_add"))
    listing = todo_sub.add_parser("list", help="list todos")
    listing.add_argument("--json", action="store_true")
    listing.set_defaults(handler=_ledger("todo_list"))
    take = todo_sub.add_parser("take", help="take a todo from inside a chat (the chat is detected)")
    take.add_argument("todo", type=_positive_int)
    take.add_argument("--json", action="store_true")
    take.set_defaults(handler=_ledger("todo_take"))
    report = todo_sub.add_parser("report", help="record the outcome of a todo's work (fact 5)")
    report.add_argument("todo", type=_positive_int)
    report.add_argument("--outcome", required=True)
    report.add_argument("--by", required=True, choices=["dad", "chief", "worker"])
    report.set_defaults(handler=_ledger("todo_report"))


def _delivery_commands(sub: Subparsers) -> None:
    for name, help_text, handler in (
        ("outbox", "envelopes and their five facts", "outbox"),
        ("sessions", "enrolled and observed chats", "sessions"),
        ("notifications", "what Dad was told, newest first", "notifications"),
    ):
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument("--json", action="store_true")
        cmd.set_defaults(handler=_ledger(handler))

    events = sub.add_parser("events", help="the ledger's history, newest first")
    events.add_argument("--json", action="store_true")
    events.add_argument("--limit", type=_positive_int, default=50)
    events.set_defaults(handler=_ledger("events"))

    resend = sub.add_parser("resend", help="Send again an expired delivery (once)")
    resend.add_argument("outbox_id")
    resend.add_argument("--by", required=True, choices=["dad", "chief"])
    resend.set_defaults(handler=_ledger("resend"))

    invite = sub.add_parser("invite", help="invite one exact chat to a todo")
    invite.add_argument("todo", type=_positive_int)
    invite.add_argument("--session", required=True, help="claude:SESSION_ID")
    invite.add_argument("--host", help="the fleet Mac the chat lives on (default: this one)")
    invite.add_argument("--json", action="store_true")
    invite.set_defaults(handler=_ledger("invite"))

    obligations = sub.add_parser("obligations", help="outcome obligations and when they are due")
    obligations.add_argument("--json", action="store_true")
    obligations.set_defaults(handler=_ledger("obligations"))

    adopt = sub.add_parser("adopt", help="run the adoption pass for CLI takers")
    adopt.add_argument("--once", action="store_true", required=True, help="one pass now")
    adopt.add_argument("--json", action="store_true")
    adopt.set_defaults(handler=_ledger("adopt"))

    chief = sub.add_parser("chief", help="the chat acting as Dad's proxy")
    chief_sub = chief.add_subparsers(dest="chief_command", metavar="ACTION", required=True)
    chief_set = chief_sub.add_parser("set", help="name the chief (Dad only)")
    chief_set.add_argument("session", help="claude:SESSION_ID or codex:THREAD_ID")
    chief_set.set_defaults(handler=_ledger("chief_set"))
    chief_show = chief_sub.add_parser("show", help="which chat is the chief")
    chief_show.set_defaults(handler=_ledger("chief_show"))

    serve = sub.add_parser("serve", help="run the coordinator until stopped")
    serve.add_argument("--interval", type=float, default=1.0, help="seconds between passes")
    serve.set_defaults(handler=_ledger("serve"))

    tick = sub.add_parser("tick", help="one coordinator pass: send, observe, decide")
    tick.add_argument("--at", type=_unix_time, help="run the pass as of this Unix time")
    tick.set_defaults(handler=_ledger("tick"))


def _fleet_commands(sub: Subparsers) -> None:
    """Commands that read Macs, not the ledger: they never import peewee."""
    chats = sub.add_parser("chats", help="live chats as the registries show them")
    chats.add_argument("--host", help="only this fleet Mac")
    chats.add_argument("--json", action="store_true")
    chats.set_defaults(handler=_fleet("chats"))

    hosts = sub.add_parser("hosts", help="each fleet Mac: reachable, latency, chats")
    hosts.add_argument("--json", action="store_true")
    hosts.set_defaults(handler=_fleet("hosts"))

    chat = sub.add_parser("chat", help="one chat, wherever in the fleet it lives")
    chat_sub = chat.add_subparsers(dest="chat_command", metavar="ACTION", required=True)
    show = chat_sub.add_parser("show", help="a chat's registry entry and transcript tail")
    show.add_argument("session_id", metavar="SESSION_ID", help="SESSION_ID or claude:SESSION_ID")
    show.add_argument("--host", help="the fleet Mac it lives on (default: search them all)")
    show.add_argument("--json", action="store_true")
    show.add_argument("--lines", type=_positive_int, default=20, help="transcript entries (20)")
    show.set_defaults(handler=_fleet("chat_show"))


def _app_commands(sub: Subparsers) -> None:
    tui = sub.add_parser("tui", help="the live app (the same as `coop` alone)")
    tui.add_argument("--attach", action="store_true", help="watch only; never run a coordinator here")
    tui.set_defaults(handler=_ledger("tui"))
    demo = sub.add_parser("demo", help="a simulated fleet on this machine, in the app")
    demo.add_argument("--no-tui", action="store_true", help="set the fleet up, print the outbox, stop")
    demo.set_defaults(handler=_ledger("demo"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.home:
        os.environ["COOP_HOME"] = args.home
    handler: Handler | None = getattr(args, "handler", None)
    if handler is None:
        # `coop` alone opens the app.
        args = parser.parse_args([*(["--home", args.home] if args.home else []), "tui"])
        handler = args.handler
    from coop_engine.errors import CoopError
    from hosts.base import HostError
    from hosts.fleet import FleetError
    from hosts.native import NativeRefusal

    try:
        return handler(args)
    except (CoopError, FleetError, HostError, NativeRefusal) as error:
        print(f"coop: {error}", file=sys.stderr)
        return 1
    except UsageError as error:
        print(f"coop: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
