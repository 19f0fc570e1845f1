"""Asking every Mac how it is and which chats it has. Runs in thread workers only: a
Mac that hangs costs its own timeout and delays no other Mac's answer.

Times come from the app's clock (the one its ages use), so a test that fixes the clock
fixes every time the panes show."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor, as_completed
from datetime import UTC, datetime
from typing import Any

from coop_engine.policy import inbound_policy
from hosts.mac.host import Host, HostError
from hosts.mac.native import NativeRefusal

Clock = Callable[[], float]


def _iso(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def asking(name: str) -> dict[str, Any]:
    """A Mac's row before its first answer."""
    return {"name": name, "reachable": None, "reason": None, "latency_ms": None, "chats": []}


def survey_host(host: Host, clock: Clock = time.time) -> dict[str, Any]:
    """One Mac: reachable or why not, the round trip, and its chats with predictions."""
    started = clock()
    try:
        health = host.health()
        latency_ms = (clock() - started) * 1000
        listing = host.chats(with_policy=True)
    except (HostError, NativeRefusal, OSError) as error:
        cause = error.cause if isinstance(error, HostError) else str(error)
        return {
            "name": host.name,
            "reachable": False,
            "reason": cause,
            "latency_ms": None,
            "chats": [],
            "checked_at": _iso(clock()),
        }
    chats = []
    for chat in listing["chats"]:
        inputs = chat.pop("policy_inputs", None)
        chat["inbound"] = inbound_policy(inputs) if inputs is not None else None
        chats.append(chat)
    return {
        "name": host.name,
        "reachable": True,
        "reason": None,
        "latency_ms": latency_ms,
        "chats_live": health["chats_live"],
        "chats_registered": health["chats_registered"],
        "checked_at": _iso(clock()),
        "chats": chats,
        "skipped": listing.get("skipped", []),
    }


def survey(
    hosts: Mapping[str, Host], report: Callable[[dict[str, Any]], None], clock: Clock = time.time
) -> None:
    """Survey every Mac concurrently; `report` gets each answer as soon as it comes."""
    if not hosts:
        return
    with ThreadPoolExecutor(max_workers=len(hosts), thread_name_prefix="survey") as pool:
        futures = [pool.submit(survey_host, host, clock) for host in hosts.values()]
        for future in as_completed(futures):
            report(future.result())
