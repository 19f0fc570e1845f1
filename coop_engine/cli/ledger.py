"""CLI handlers that read or change the ledger."""

from __future__ import annotations

import argparse
import json
import os
import sys

from coop_engine import views
from coop_engine.cli.output import print_rows, short
from coop_engine.db import coop_home, open_ledger
from coop_engine.engine import Engine


def open_engine(actor: str = "coop") -> Engine:
    home = coop_home()
    return Engine(open_ledger(home), actor=actor)


def todo_add(args: argparse.Namespace) -> int:
    engine = open_engine()
    result = engine.add_todo(args.title, args.body, args.project)
    print(json.dumps(result) if args.json else result["id"])
    return 0


def todo_list(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("ID", lambda r: r["id"]),
        ("STATE", lambda r: r["state"]),
        ("PROJECT", lambda r: r["project"]),
        ("TITLE", lambda r: r["title"]),
    ]
    print_rows(views.todos(), columns, args.json)
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
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor=args.by)
    caller = caller_session()
    if args.by == "worker":
        _check_worker(engine, args.todo, caller)
    else:
        check_decider(engine, "report", args.by, caller)
    result = engine.report_outcome(args.todo, args.outcome, args.by)
    print(f"todo #{result['todo']} done")
    return 0


def _check_worker(engine: Engine, todo_id: int, caller: str | None) -> None:
    """A worker's report comes from the chat bound to the todo (when one is bound)."""
    from coop_engine.errors import NotAuthorized

    bound = views.bound_sessions(todo_id)
    if bound and caller not in bound:
        reason = f"Only the chat bound to todo #{todo_id} reports as worker ({', '.join(bound)})"
        engine.record_refused_decision("report", "worker", caller, reason)
        raise NotAuthorized(reason)


def _facts(row: dict) -> str:
    marks = []
    for name in ("stored", "transport", "received", "accepted", "outcome"):
        marks.append(name[0].upper() if row["facts"][name] else ".")
    return "".join(marks)


def outbox(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("ID", lambda r: short(r["id"])),
        ("KIND", lambda r: r["kind"]),
        ("TODO", lambda r: r["todo"]),
        ("SESSION", lambda r: short(r["session"], 15)),
        ("STATE", lambda r: r["state"]),
        ("FACTS", _facts),
        ("REASON", lambda r: r["reason"] or r["conflict"] or r["last_error"]),
        ("RESENT", lambda r: short(r["resent_as"]) if r["resent_as"] else None),
    ]
    print_rows(views.outbox(), columns, args.json)
    return 0


def sessions(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("ID", lambda r: r["id"]),
        ("VENDOR", lambda r: r["vendor"]),
        ("HOST", lambda r: r["host"]),
        ("NATIVE", lambda r: short(r["native_id"])),
        ("MODE", lambda r: r["mode"]),
        ("SURFACE", lambda r: r["surface"]),
        ("STATUS", lambda r: r["status"]),
        ("GEN", lambda r: r["generation"]),
        ("NAME", lambda r: r["name"]),
    ]
    print_rows(views.sessions(), columns, args.json)
    return 0


def events(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("AT", lambda r: r["at"]),
        ("WHO", lambda r: r["who"]),
        ("COMMAND", lambda r: r["command"]),
        ("SUBJECT", lambda r: r["subject"]),
        ("FROM", lambda r: r["from"]),
        ("TO", lambda r: r["to"]),
    ]
    print_rows(views.events(args.limit), columns, args.json)
    return 0


def notifications(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("AT", lambda r: r["at"]),
        ("KIND", lambda r: r["kind"]),
        ("TEXT", lambda r: r["text"]),
    ]
    print_rows(views.notifications(), columns, args.json)
    return 0


def resend(args: argparse.Namespace) -> int:
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor=args.by)
    check_decider(engine, "resend", args.by, caller_session())
    result = engine.resend(views.resolve_outbox_id(args.outbox_id), args.by)
    print(result["outbox"])
    return 0


def obligations(args: argparse.Namespace) -> int:
    open_engine()
    columns = [
        ("ID", lambda r: r["id"]),
        ("TODO", lambda r: r["todo"]),
        ("KIND", lambda r: "legacy" if r["legacy"] else r["kind"]),
        ("DUE", lambda r: r["due_at"]),
        ("STATE", lambda r: r["state"]),
    ]
    print_rows(views.obligations(), columns, args.json)
    return 0


def adopt(args: argparse.Namespace) -> int:
    from coop_engine.loop.adoption import AdoptionPass

    fleet = _fleet()
    engine = open_engine()
    results = AdoptionPass(engine, fleet.hosts, fleet.office, log=lambda line: None).run()
    columns = [
        ("SESSION", lambda r: r["session"]),
        ("SEARCHED", lambda r: ", ".join(_answer(a) for a in r["searched"])),
        ("FOUND", lambda r: r["found"]),
        ("RESULT", lambda r: r["result"]),
    ]
    print_rows(results, columns, args.json)
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


def _fleet():  # type: ignore[no-untyped-def]
    from hosts.fleet import load_fleet

    return load_fleet(coop_home())


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


def tui(args: argparse.Namespace) -> int:
    from coop_engine.home import ensure_home
    from coop_tui.app import CoopApp

    home = ensure_home(coop_home())
    CoopApp(home, _fleet(), coordinator="none" if args.attach else "auto").run()
    return 0


def demo(args: argparse.Namespace) -> int:
    from coop_tui.demo import run_demo

    return run_demo(args.home, tui=not args.no_tui)
