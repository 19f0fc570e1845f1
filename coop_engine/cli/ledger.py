"""The ledger commands: todos, invitations, decisions, the chief, adoption and the
coordinator. Listings are in `listings.py`; the app's launcher in `launcher.py`."""

from __future__ import annotations

import argparse
import json
import os
import sys

from coop_engine import queries
from coop_engine.cli.addressing import asked_line, ledger_pool, live_pool, resolve_chat
from coop_engine.cli.arguments import full_ref
from coop_engine.cli.listings import session_cell, session_shorts
from coop_engine.cli.output import print_rows
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.home import coop_home
from coop_engine.naming import chat_ref, short_ids

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from coop_engine.cli.addressing import Chat
    from coop_engine.cli.output import Column
    from hosts.fleet import Fleet
    from hosts.mac.host import Host


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
    """Send again, after looking at the receiver again, now: a receiver that still
    refuses, or whose settings cannot be read after a refusal by its policy, is not sent
    a second frame (nothing is created; one line says why and what was predicted)."""
    from coop_engine.cli.caller import caller_session, check_decider
    from coop_engine.errors import Conflict
    from coop_engine.loop.resend import look_again

    engine = open_engine(actor=args.by)
    check_decider(engine, "resend", args.by, caller_session())
    outbox_id = queries.resolve_outbox_id(args.outbox_id)
    envelope = queries.envelope_row(outbox_id)
    if envelope["state"] != "expired" or envelope["resent_as"]:
        engine.resend(outbox_id, args.by)  # refused, in the ledger's words
    fleet = _fleet()
    try:
        looked = look_again(fleet.hosts, envelope)
    finally:
        fleet.close()
    at_send, today = _prediction(looked["at_send"]), _prediction(looked["today"])
    predicted = f"predicted at send: {at_send}; today: {today}"
    if looked["refusal"]:
        raise Conflict(f"{looked['refusal']} ({predicted})")
    warn(predicted)
    if looked["warning"]:
        warn(looked["warning"])
    result = engine.resend(outbox_id, args.by)
    print(result["outbox"])
    again = queries.envelope_row(result["outbox"])
    note(f"sent again to {_chat_words(again, _shown_chat(again, []))}")
    return 0


def _prediction(inbound: dict | None) -> str:
    if not inbound:
        return "not recorded"
    if inbound.get("verdict") == "unknown":
        return f"unknown ({inbound.get('why') or 'nothing readable'})"
    return f"{inbound.get('verdict')} ({inbound.get('source')})"


def warn(message: str) -> None:
    from coop_engine.formats import one_line

    print(f"coop: warning: {one_line(message)}", file=sys.stderr)


def withdraw(args: argparse.Namespace) -> int:
    """Take back an envelope that was never sent (pending -> cancelled), or one sent
    into a Codex thread's queue that still waits there (-> expired, withdrawn-from-queue,
    on Codex's own `deleted: true`)."""
    from coop_engine.cli.caller import caller_session, check_decider
    from coop_engine.loop.withdrawal import withdraw_envelope

    engine = open_engine(actor=args.by)
    check_decider(engine, "withdraw", args.by, caller_session())
    outbox_id = queries.resolve_outbox_id(args.outbox_id)
    fleet = _fleet()
    try:
        result = withdraw_envelope(engine, fleet, outbox_id, args.by)
    finally:
        fleet.close()
    if result["state"] == "expired":
        print(f"{outbox_id} withdrawn from Codex's queue: expired ({result['reason']})")
    else:
        print(f"{result['outbox']} withdrawn")
    return 0


ADOPTION_COLUMNS: list[Column] = [
    ("SESSION", session_cell),
    ("SESSION_NAME", lambda r: r["session_name"]),
    ("SEARCHED", lambda r: ", ".join(_answer(a) for a in r["searched"])),
    ("FOUND", lambda r: r["found"]),
    ("RESULT", lambda r: r["result"]),
]


def adopt(args: argparse.Namespace) -> int:
    """One adoption pass; each candidate with its chat's label and short id."""
    from coop_engine.loop.adoption import AdoptionPass

    fleet = _fleet()
    engine = open_engine()
    results = AdoptionPass(engine, fleet.hosts, fleet.office, log=lambda line: None).run()
    sessions = queries.sessions()
    shorts = session_shorts(sessions)
    by_ref = {f"{s['vendor']}:{s['native_id']}": s for s in sessions}
    rows = []
    for result in results:
        session = by_ref.get(result["session"])
        rows.append(
            {
                **result,
                "session_name": session["label"] if session else None,
                "session_short_id": shorts[session["id"]] if session else None,
            }
        )
    print_rows(rows, ADOPTION_COLUMNS, args.json)
    return 0


def _answer(answer: dict) -> str:
    if "error" in answer:
        return f"{answer['host']}: {answer['error']}"
    return f"{answer['host']}: {answer['matches']}"


def chief_set(args: argparse.Namespace) -> int:
    """Name the chief: a chat Coop has enrolled, or one live on some Mac now."""
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor="dad")
    check_decider(engine, "chief set", "dad", caller_session())
    sessions = queries.sessions()
    if full_ref(args.session):
        ref = args.session
        host = _enrolled_host(sessions, ref) or _live_host(ref)
    else:
        chat = _named_chief(args.session, sessions)
        ref, host = chat_ref(chat), str(chat["host"])
    print(f"chief: {engine.set_chief(ref, 'dad', host)['chief']}")
    return 0


def _enrolled_host(sessions: list[dict[str, Any]], ref: str) -> str | None:
    vendor, _, native_id = ref.partition(":")
    enrolled = [s["host"] for s in sessions if (s["vendor"], s["native_id"]) == (vendor, native_id)]
    return enrolled[0] if enrolled else None


def _live_host(ref: str) -> str:
    """The first Mac that has the chat now, or NotFound naming what each Mac said."""
    from coop_engine.errors import NotFound
    from coop_engine.loop.survey import find_session

    vendor, _, native_id = ref.partition(":")
    fleet = _fleet()
    try:
        where = find_session(list(fleet.hosts.values()), vendor, native_id)
    finally:
        fleet.close()
    if not where["found"]:
        raise NotFound(f"{ref} is neither enrolled nor live ({where['asked']})")
    return str(where["found"][0])


def _named_chief(text: str, sessions: list[dict[str, Any]]) -> Chat:
    """The one chat, enrolled or live on some Mac now, that `text` names."""
    from coop_engine.loop.survey import live_chats

    fleet = _fleet()
    try:
        rows, failed = live_chats(list(fleet.hosts.values()))
    finally:
        fleet.close()
    named = list(fleet.hosts)
    asked = [(error.host, error.cause) for error in failed]
    pool = ledger_pool(sessions) + live_pool(rows)
    return resolve_chat(text, pool, lambda: "the ledger, " + asked_line(named, asked))


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
    """Invite one exact chat, after asking the Macs where it is live. No reachable Mac
    has it: refused, nothing created. The named Mac cannot be asked: the invitation is
    recorded and waits, with a warning. A reference that is not a whole id names one of
    the chats the Macs list (or, on a Mac that cannot be asked, one the ledger knows)."""
    from coop_engine.dispatching import parse_session_ref
    from coop_engine.loop.survey import locate_live, locate_thread

    fleet = _fleet()
    engine = open_engine(actor="dad")
    pool: list[dict[str, Any]] = []
    try:
        engine.todo(args.todo)  # an unknown todo is refused before any Mac is asked
        hosts = [fleet.host(args.host)] if args.host else list(fleet.hosts.values())
        ref = args.session
        if not full_ref(ref):
            chat, pool = _invited_chat(ref, hosts)
            ref, hosts = chat_ref(chat), [fleet.host(chat["host"])]
        vendor, native_id = parse_session_ref(ref)
        locate = locate_live if vendor == "claude" else locate_thread
        where = locate(hosts, native_id, ref)
    finally:
        fleet.close()
    entry = where["entry"] or {}
    result = engine.invite(
        args.todo, ref, where["host"], name=entry.get("name"), cwd=entry.get("cwd")
    )
    invited = queries.envelope_row(result["outbox"])
    shown = _shown_chat(invited, pool)
    print(json.dumps({**result, **shown}) if args.json else result["outbox"])
    # The note names the chat a short id or a name picked, as its Mac names it. A whole
    # id sent to a Mac that could not be asked has no name yet: its warning says it waits.
    if not args.json and (ref != args.session or not where["warning"]):
        note(f"invited {_chat_words(invited, shown)} to todo #{args.todo}")
    if where["warning"]:
        warn(where["warning"])
    return 0


def _invited_chat(ref: str, hosts: list[Host]) -> tuple[Chat, list[dict[str, Any]]]:
    """The chat an invitation's reference names among the live chats of `hosts`, and
    the ledger's chats on those that could not be asked; and the chats looked among."""
    from coop_engine.loop.survey import live_chats

    rows, failed = live_chats(hosts)
    down = {error.host for error in failed}
    known = [row for row in queries.sessions() if row["host"] in down]
    pool = live_pool(rows) + ledger_pool(known)
    named = [host.name for host in hosts]
    asked = [(error.host, error.cause) for error in failed]
    return resolve_chat(ref, pool, lambda: asked_line(named, asked)), pool


def _shown_chat(envelope: dict[str, Any], pool: list[dict[str, Any]]) -> dict[str, Any]:
    """An envelope's chat as a confirmation names it: `session_name` (its label) and
    `session_short_id`, unique among the ledger's chats and those just looked among."""
    vendor, _, native_id = str(envelope["session"]).partition(":")
    known = [str(row["native_id"]) for row in queries.sessions()]
    shorts = short_ids([native_id, *known, *(str(chat["session_id"]) for chat in pool)])
    return {"session_name": envelope["session_name"], "session_short_id": shorts[native_id]}


def _chat_words(envelope: dict[str, Any], shown: dict[str, Any]) -> str:
    """`reviewer-7 (claude:abcd1111) on office`."""
    vendor = str(envelope["session"]).partition(":")[0]
    chat = f"{shown['session_name']} ({vendor}:{shown['session_short_id']})"
    return f"{chat} on {envelope['host']}"


def note(message: str) -> None:
    """What a command did, for the person who typed it; stdout stays what scripts read."""
    from coop_engine.formats import one_line

    print(f"coop: {one_line(message)}", file=sys.stderr)


def tick(args: argparse.Namespace) -> int:
    import time

    from coop_engine.loop.coordinator import Coordinator

    fleet = _fleet()
    at = args.at
    engine = Engine(open_ledger(coop_home()), clock=(lambda: at) if at is not None else time.time)
    Coordinator(engine, fleet.hosts).tick()
    return 0
