"""CLI handlers that read the fleet's chats without touching the ledger or the TUI."""

from __future__ import annotations

import argparse

from coop_engine.home import coop_home
from coop_engine.output import print_rows, short
from coop_engine.policy import inbound_policy
from hosts.fleet import load_fleet

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any


def chat_row(chat: dict[str, Any]) -> dict[str, Any]:
    """A registry entry as `coop chats` shows it, with the predicted inbound verdict."""
    inputs = chat.get("policy_inputs")
    prediction = inbound_policy(inputs) if inputs is not None else None
    return {
        "host": chat["host"],
        "session_id": chat["session_id"],
        "pid": chat["pid"],
        "name": chat["name"],
        "status": chat["status"],
        "socket": chat["socket"],
        "inbound": prediction["verdict"] if prediction else None,
        "inbound_source": prediction["source"] if prediction else None,
        "dialog_expiry": prediction["dialog_expiry"] if prediction else None,
        "tmux": chat["tmux"],
        "cwd": chat["cwd"],
    }


def chats(args: argparse.Namespace) -> int:
    fleet = load_fleet(coop_home())
    hosts = [fleet.host(args.host)] if args.host else list(fleet.hosts.values())
    rows = []
    for host in hosts:
        listing = host.chats(with_policy=True)
        rows += [chat_row(chat) for chat in listing["chats"] if chat["live"]]
    columns = [
        ("HOST", lambda r: r["host"]),
        ("SESSION", lambda r: short(r["session_id"])),
        ("PID", lambda r: r["pid"]),
        ("NAME", lambda r: r["name"]),
        ("STATUS", lambda r: r["status"]),
        ("SOCKET", lambda r: r["socket"]),
        ("INBOUND", lambda r: f"{r['inbound']} ({r['inbound_source']})" if r["inbound"] else None),
        ("TMUX", lambda r: r["tmux"]),
    ]
    print_rows(rows, columns, args.json)
    return 0
