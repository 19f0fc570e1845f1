"""The ledger commands: todos, invitations, decisions, the chief, adoption and the
coordinator. Listings are in `listings.py`; the app's launcher in `launcher.py`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from coop_engine import queries
from coop_engine.cli.output import print_rows
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.home import coop_home

TYPE_CHECKING = False
if TYPE_CHECKING:
    from coop_engine.cli.output import Column
    from hosts.fleet import Fleet


def open_engine(actor: str = "coop") -> Engine:
    return Engine(open_ledger(coop_home()), actor=actor)


def _fleet() -> Fleet:
    from hosts.fleet import load_fleet

    return load_fleet(coop_home())


def todo_add(args: argparse.Namespace) -> int:
    engine = open_engine()
    result = engine.add_todo(args.title, args.body, args.project)
    print(json.dumps(result) if args.json else result["id"])
    return 0


def todo_take(args: argparse.Namespace) -> int:
    from coop_engine.cli.caller import HOST_ENV, caller_session

    fleet = _fleet()
    caller = caller_session()
    host = os.environ.get(HOST_ENV) or fleet.office
    engine = open_engine(actor="worker")
    result = engine.take_cli(args.todo, caller, host)
    if args.json:
        print(json.dumps({**result, "todo": args.todo, "caller": caller, "host": host}))
    elif caller is None:
        print(f"todo #{args.todo} taken (no chat detected: a legacy take, reviewed in 3 hours)")
    elif "work" in result:
        print(f"todo #{args.todo} taken by {caller} on {host}; its work envelope follows")
    else:
        print(
            f"todo #{args.todo} taken by {caller} on {host} "
            "(observed; Coop adopts this chat once it finds it)"
        )
    return 0


def todo_report(args: argparse.Namespace) -> int:
    from coop_engine.cli.caller import caller_session, check_decider, check_worker

    engine = open_engine(actor=args.by)
    caller = caller_session()
    if args.by == "worker":
        check_worker(engine, args.todo, caller)
    else:
        check_decider(engine, "report", args.by, caller)
    result = engine.report_outcome(args.todo, args.outcome, args.by)
    print(f"todo #{result['todo']} done")
    return 0


def resend(args: argparse.Namespace) -> int:
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor=args.by)
    check_decider(engine, "resend", args.by, caller_session())
    result = engine.resend(queries.resolve_outbox_id(args.outbox_id), args.by)
    print(result["outbox"])
    return 0


ADOPTION_COLUMNS: list[Column] = [
    ("SESSION", lambda r: r["session"]),
    ("SEARCHED", lambda r: ", ".join(_answer(a) for a in r["searched"])),
    ("FOUND", lambda r: r["found"]),
    ("RESULT", lambda r: r["result"]),
]


def adopt(args: argparse.Namespace) -> int:
    from coop_engine.loop.adoption import AdoptionPass

    fleet = _fleet()
    engine = open_engine()
    results = AdoptionPass(engine, fleet.hosts, fleet.office, log=lambda line: None).run()
    print_rows(results, ADOPTION_COLUMNS, args.json)
    return 0


def _answer(answer: dict) -> str:
    if "error" in answer:
        return f"{answer['host']}: {answer['error']}"
    return f"{answer['host']}: {answer['matches']}"


def chief_set(args: argparse.Namespace) -> int:
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor="dad")
    check_decider(engine, "chief set", "dad", caller_session())
    print(f"chief: {engine.set_chief(args.session, 'dad')['chief']}")
    return 0


def chief_show(args: argparse.Namespace) -> int:
    print(open_engine().chief() or "(no chief)")
    return 0


def serve(args: argparse.Namespace) -> int:
    from coop_engine.loop.serve import Server, stamped

    home = coop_home()
    fleet = _fleet()
    engine = Engine(open_ledger(home))
    return Server(engine, fleet, home, stamped(print_line), pass_interval=args.interval).run()


def print_line(line: str) -> None:
    print(line, flush=True)


def invite(args: argparse.Namespace) -> int:
    fleet = _fleet()
    host = fleet.host(args.host)
    engine = open_engine(actor="dad")
    vendor, _, native_id = args.session.partition(":")
    entry = host.registry_entry(native_id) if vendor == "claude" and native_id else None
    result = engine.invite(
        args.todo,
        args.session,
        host.name,
        name=(entry or {}).get("name"),
        cwd=(entry or {}).get("cwd"),
    )
    print(json.dumps(result) if args.json else result["outbox"])
    if vendor == "claude" and entry is None:
        print(
            f"coop: warning: no live chat {args.session} on {host.name} now; "
            "the invitation waits as pending",
            file=sys.stderr,
        )
    return 0


def tick(args: argparse.Namespace) -> int:
    import time

    from coop_engine.loop.coordinator import Coordinator

    fleet = _fleet()
    at = args.at
    engine = Engine(open_ledger(coop_home()), clock=(lambda: at) if at is not None else time.time)
    Coordinator(engine, fleet.hosts).tick()
    return 0
