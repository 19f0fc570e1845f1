"""The ledger commands: todos, invitations, decisions, the chief, adoption and the
coordinator. Listings are in `listings.py`; the app's launcher in `launcher.py`."""

from __future__ import annotations

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
    import argparse
    from typing import Any

    from coop_engine.cli.addressing import Chat
    from coop_engine.cli.client import Side
    from coop_engine.cli.output import Column
    from coop_engine.errors import Conflict
    from coop_engine.loop.claim import Holder
    from coop_engine.loop.desk import Desk
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


def obligation_review(args: argparse.Namespace) -> int:
    """Dad's or the chief's decision on an overdue obligation, checked as every decision
    is (who is typing), then recorded; one line says what became of it."""
    from coop_engine.cli.caller import caller_session, check_decider

    engine = open_engine(actor=args.by)
    check_decider(engine, "obligation review", args.by, caller_session())
    result = engine.review_obligation(args.obligation, args.decision, args.by)
    todo = result["todo"]
    if result["state"] == "closed":
        said = f"closed: the take is released and todo #{todo} is open again"
    else:
        said = f"reviewed: the work on todo #{todo} goes on, its outcome still owed"
    print(f"obligation {result['obligation']} {said} ({args.by})")
    return 0


def resend(args: argparse.Namespace) -> int:
    """Send again, after looking at the receiver again, now, from whoever reaches it
    (the running coordinator, when one serves this home): a receiver that still
    refuses, or whose settings cannot be read after a refusal by its policy, is not sent
    a second frame (nothing is created; one line says why and what was predicted)."""
    from coop_engine.cli.caller import caller_session, check_decider
    from coop_engine.cli.client import ask
    from coop_engine.errors import Conflict

    engine = open_engine(actor=args.by)
    check_decider(engine, "resend", args.by, caller_session())
    outbox_id = queries.resolve_outbox_id(args.outbox_id)
    envelope = queries.envelope_row(outbox_id)
    if envelope["state"] != "expired" or envelope["resent_as"]:
        engine.resend(outbox_id, args.by)  # refused, in the ledger's words
    looked, _ = ask(
        "look_again",
        {"envelope": envelope},
        lambda desk: desk.look_again(envelope),
        command=True,
    )
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
    on Codex's own `deleted: true`), through the running coordinator's Macs when one
    serves this home (as the app's Withdraw), else through this process's own."""
    from coop_engine.cli.caller import caller_session, check_decider
    from coop_engine.cli.client import ask
    from coop_engine.loop.withdrawal import withdraw_envelope

    engine = open_engine(actor=args.by)
    check_decider(engine, "withdraw", args.by, caller_session())
    outbox_id = queries.resolve_outbox_id(args.outbox_id)
    result, _ = ask(
        "withdraw",
        {"outbox": outbox_id, "by": args.by},
        lambda desk: withdraw_envelope(engine, desk.fleet, outbox_id, args.by),
        command=True,
    )
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
    """One adoption pass (the running coordinator's, over its Macs, when one serves this
    home); each candidate with its chat's label and short id."""
    from coop_engine.cli.client import ask
    from coop_engine.loop.adoption import AdoptionPass

    engine = open_engine()

    def here(desk: Desk) -> list[dict[str, Any]]:
        fleet = desk.fleet
        return AdoptionPass(engine, fleet.hosts, fleet.office, log=lambda line: None).run()

    results, _ = ask("adopt", {}, here, command=True)
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
    from coop_engine.cli.client import ask
    from coop_engine.errors import NotFound

    vendor, _, native_id = ref.partition(":")
    question = {"vendor": vendor, "native_id": native_id}
    where, _ = ask("find", question, lambda desk: desk.find(vendor, native_id), command=True)
    if not where["found"]:
        raise NotFound(f"{ref} is neither enrolled nor live ({where['asked']})")
    return str(where["found"][0])


def _named_chief(text: str, sessions: list[dict[str, Any]]) -> Chat:
    """The one chat, enrolled or live on some Mac now, that `text` names."""
    found = _live(None)
    asked = [(failed["host"], failed["cause"]) for failed in found["failed"]]
    pool = ledger_pool(sessions) + live_pool(found["rows"])
    return resolve_chat(text, pool, lambda: "the ledger, " + asked_line(found["asked"], asked))


def _live(host: str | None) -> dict[str, Any]:
    """The live chats of the Mac named or of every Mac (`{rows, failed, asked}`), asked
    of the running coordinator's Macs when one serves this home (loop/desk.py)."""
    from coop_engine.cli.client import ask

    found, _ = ask("live", {"host": host}, lambda desk: desk.live(host), command=True)
    return dict(found)


def chief_show(args: argparse.Namespace) -> int:
    print(open_engine().chief() or "(no chief)")
    return 0


def serve(args: argparse.Namespace) -> int:
    from coop_engine.loop.claim import ledger_claim
    from coop_engine.loop.serve import Server, stamped
    from coop_engine.loop.standby import serve_standing_by

    home = coop_home()
    fleet = _fleet()
    engine = Engine(open_ledger(home))
    claim = ledger_claim(engine.db)
    claim.seconds = args.lease
    log = stamped(print_line)

    def new_server() -> Server:
        return Server(engine, fleet, home, log, pass_interval=args.interval, claim=claim)

    if args.standby:
        return serve_standing_by(new_server, claim, fleet.office, log)
    return new_server().run()


def print_line(line: str) -> None:
    print(line, flush=True)


def invite(args: argparse.Namespace) -> int:
    """Invite one exact chat, after asking the Macs where it is live (the running
    coordinator's Macs when one serves this home, as the app's Invite). No reachable Mac
    has it: refused, nothing created. The named Mac cannot be asked: the invitation is
    recorded and waits, with a warning. A reference that is not a whole id names one of
    the chats the Macs list (or, on a Mac that cannot be asked, one the ledger knows)."""
    from coop_engine.cli.client import Side

    # Who answers is chosen first: an own fleet.toml that cannot be read stops the
    # command in one line before the ledger is touched.
    with Side(command=True).choose() as side:
        engine = open_engine(actor="dad")
        engine.todo(args.todo)  # an unknown todo is refused before any Mac is asked
        ref, where, pool = _invitee(side, args.session, args.host)
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


def _invitee(
    side: Side, session: str, host: str | None
) -> tuple[str, dict[str, Any], list[dict[str, Any]]]:
    """The chat an invitation names (its whole reference), where it is (`{host, entry,
    warning}`), and the chats a name or short id was looked up among."""
    from coop_engine.dispatching import parse_session_ref

    pool: list[dict[str, Any]] = []
    ref = session
    if not full_ref(ref):
        found = side.ask("live", {"host": host}, lambda desk: desk.live(host))
        chat, pool = _invited_chat(ref, found)
        ref, host = chat_ref(chat), str(chat["host"])
    vendor, native_id = parse_session_ref(ref)
    question = {"vendor": vendor, "native_id": native_id, "ref": ref, "host": host}
    where = side.ask("locate", question, lambda desk: desk.locate(vendor, native_id, ref, host))
    return ref, where, pool


def _invited_chat(ref: str, found: dict[str, Any]) -> tuple[Chat, list[dict[str, Any]]]:
    """The chat an invitation's reference names among the live chats `found` (`{rows,
    failed, asked}`), and the ledger's chats on the Macs that could not be asked; and
    the chats looked among."""
    down = {failed["host"] for failed in found["failed"]}
    known = [row for row in queries.sessions() if row["host"] in down]
    pool = live_pool(found["rows"]) + ledger_pool(known)
    asked = [(failed["host"], failed["cause"]) for failed in found["failed"]]
    return resolve_chat(ref, pool, lambda: asked_line(found["asked"], asked)), pool


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
    """One coordinator pass. Beside a running coordinator it is that coordinator's pass
    on every Mac, asked for over its hub and waited for (its Macs, not this process's:
    never a second pass with another fleet); `--at` is then refused, since its clock is
    now. On a home nobody serves, a pass here, as of `--at` when given."""
    from coop_engine.cli.client import SERVE, ask
    from coop_engine.errors import Conflict

    answer: Any
    answer, via = ask(
        "tick", {"at": args.at}, lambda desk: _tick_here(desk.fleet, args.at), command=True
    )
    if via != SERVE:
        return 0
    stuck = [mac for mac in answer["macs"] if not mac["passed"]]
    if stuck:
        said = "; ".join(f"{mac['host']}: {mac['reason']}" for mac in stuck)
        raise Conflict(f"the running coordinator's pass did not finish: {said}")
    for mac in answer["macs"]:
        if mac["reason"]:
            warn(f"{mac['host']} could not be asked ({mac['reason']}); its envelopes wait")
    names = ", ".join(str(mac["host"]) for mac in answer["macs"])
    note(f"the running coordinator made a pass on {names}")
    return 0


def _tick_here(fleet: Fleet, at: float | None) -> None:
    """A pass by this process over its own fleet, as of `at` (now when None). Refused
    while a coordinator holds the ledger's claim without answering on this home's hub:
    its Macs may be others than this process's.

    Its intents to send are fenced as a coordinator's are: on a ledger with a lease
    (a coordinator held it, or a standby waits for it) the pass takes the lease for
    itself, raising its epoch, so a holder that hung and wakes is fenced out and a
    standby waits for the pass; on a ledger never leased it sends under NO_LEASE, and is
    fenced out (exit 1, one line) if a coordinator takes the lease meanwhile."""
    import time

    from coop_engine.lease import NO_LEASE
    from coop_engine.loop.claim import RUNNING, Claimed, ledger_claim
    from coop_engine.loop.coordinator import Coordinator

    engine = Engine(open_ledger(coop_home()), clock=(lambda: at) if at is not None else time.time)
    claim = ledger_claim(engine.db)
    look = claim.look()
    if look.state == RUNNING:
        raise _running_beside(look.holder)
    if look.lease is None:
        engine.epoch = NO_LEASE
        Coordinator(engine, fleet.hosts).tick()
        return
    try:
        claim.take(fleet.office, "tick")
    except Claimed as held:
        raise _running_beside(held.holder) from None
    engine.epoch = claim.epoch
    try:
        Coordinator(engine, fleet.hosts).tick()
    finally:
        claim.release()


def _running_beside(holder: Holder | None) -> Conflict:
    """The one line `coop tick` says beside a coordinator it cannot ask."""
    from coop_engine.errors import Conflict

    named = f"{holder.who} (pid {holder.pid} on {holder.host})" if holder else "a coordinator"
    return Conflict(
        f"{named} is running on this ledger and does not answer on this home's hub:"
        " coop tick runs no second pass beside it"
    )
