"""CLI handlers that read or change the ledger."""

from __future__ import annotations

import argparse
import json
import sys

from coop_engine import views
from coop_engine.db import coop_home, open_ledger
from coop_engine.engine import Engine
from coop_engine.output import print_rows, short


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


def todo_report(args: argparse.Namespace) -> int:
    engine = open_engine(actor=args.by)
    result = engine.report_outcome(args.todo, args.outcome, args.by)
    print(f"todo #{result['todo']} done")
    return 0


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
    engine = open_engine(actor=args.by)
    result = engine.resend(args.outbox_id, args.by)
    print(result["outbox"])
    return 0


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

    from coop_engine.coordinator import Coordinator

    fleet = _fleet()
    at = args.at
    engine = Engine(open_ledger(coop_home()), clock=(lambda: at) if at is not None else time.time)
    Coordinator(engine, fleet.hosts).tick()
    return 0


def demo(args: argparse.Namespace) -> int:
    from coop_engine.demo import run_demo

    return run_demo(sys.stdout)
