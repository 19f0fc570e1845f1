"""CLI handlers that read the fleet's chats without touching the ledger or the TUI.

Every Mac is asked at once, one thread each, so a Mac that hangs costs its own timeout
and delays no other Mac's answer. A fleet of one is asked in this thread: `coop chats`
on a lone Mac starts no thread and imports no ssh library.
"""

from __future__ import annotations

import argparse
import sys
import time

from coop_engine.cli.output import one_line, print_rows, short
from coop_engine.home import coop_home
from coop_engine.policy import inbound_policy
from hosts.fleet import Fleet, load_fleet
from hosts.mac.host import Host, HostError

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

TAIL_FIRST_BYTES = 256 << 10
TAIL_MOST_BYTES = 16 << 20


def ask_each(hosts: Sequence[Host], ask: Callable[[Host], Any]) -> list[Any]:
    """`ask(host)` for every host concurrently; each answer or its HostError, in the
    hosts' order. Any other exception is raised here, as if asked in this thread."""
    answers: list[Any] = [None] * len(hosts)

    def run(index: int) -> None:
        try:
            answers[index] = ask(hosts[index])
        except Exception as error:  # handed to the asking thread below
            answers[index] = error

    if len(hosts) == 1:
        run(0)
    else:
        import threading

        threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(len(hosts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    for answer in answers:
        if isinstance(answer, Exception) and not isinstance(answer, HostError):
            raise answer
    return answers


def warn(message: str) -> None:
    print(f"coop: warning: {one_line(message)}", file=sys.stderr)


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
    """Live chats of one Mac (--host; its failure is the command's) or of every Mac (an
    unreachable one is a warning, the others are still listed)."""
    fleet = load_fleet(coop_home())
    try:
        hosts = [fleet.host(args.host)] if args.host else list(fleet.hosts.values())
        answers = ask_each(hosts, lambda host: host.chats(with_policy=True))
    finally:
        fleet.close()
    rows = []
    for answer in answers:
        if isinstance(answer, HostError):
            if args.host:
                raise answer
            warn(f"{answer}; its chats are not listed")
            continue
        rows += [chat_row(chat) for chat in answer["chats"] if chat["live"]]
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


# --- coop hosts ---------------------------------------------------------------------------


def _iso_now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check_host(host: Host) -> dict[str, Any]:
    """One Mac's health row. The first request connects and starts the helper; the
    second, timed, is what one request costs on the warm connection."""
    row: dict[str, Any] = {
        "name": host.name,
        "reachable": False,
        "reason": None,
        "latency_ms": None,
        "chats_live": None,
        "chats_registered": None,
        "checked_at": _iso_now(),
    }
    try:
        host.health()
        started = time.perf_counter()
        health = host.health()
        latency = time.perf_counter() - started
    except HostError as error:
        row["reason"] = error.cause
        return row
    row.update(
        reachable=True,
        latency_ms=round(latency * 1000, 2),
        chats_live=health["chats_live"],
        chats_registered=health["chats_registered"],
    )
    return row


def hosts(args: argparse.Namespace) -> int:
    """Every Mac checked at once; an unreachable one is a row with its reason."""
    fleet = load_fleet(coop_home())
    try:
        rows = ask_each(list(fleet.hosts.values()), check_host)
    finally:
        fleet.close()
    columns = [
        ("MAC", lambda r: r["name"]),
        ("REACHABLE", lambda r: "yes" if r["reachable"] else "no"),
        ("LATENCY", lambda r: None if r["latency_ms"] is None else f"{r['latency_ms']:.1f} ms"),
        ("LIVE", lambda r: r["chats_live"]),
        ("REGISTERED", lambda r: r["chats_registered"]),
        ("CHECKED", lambda r: r["checked_at"]),
        ("REASON", lambda r: r["reason"]),
    ]
    print_rows(rows, columns, args.json)
    return 0


# --- coop chat show -----------------------------------------------------------------------


def _look(session_id: str) -> Callable[[Host], Any]:
    def look(host: Host) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        entries = [c for c in host.chats()["chats"] if c["session_id"] == session_id]
        # No registry entry (the chat ended and its entry went): its transcript may remain.
        position = None if entries else host.transcript_position(session_id)
        return entries, position

    return look


def find_chat(
    fleet: Fleet, session_id: str, name: str | None
) -> tuple[Host, dict[str, Any] | None] | str:
    """The Mac holding the session (live entry first) and its entry, or why not."""
    hosts = [fleet.host(name)] if name else list(fleet.hosts.values())
    found: list[tuple[Host, dict[str, Any] | None]] = []
    unreachable = []
    for host, answer in zip(hosts, ask_each(hosts, _look(session_id)), strict=True):
        if isinstance(answer, HostError):
            if name:
                raise answer
            warn(str(answer))
            unreachable.append(host.name)
            continue
        entries, position = answer
        if entries:
            found.append((host, next((c for c in entries if c["live"]), entries[0])))
        elif position and position.get("path"):
            found.append((host, None))
    live = [item for item in found if item[1] is not None and item[1]["live"]]
    if len(live) == 1:
        return live[0]
    if len(found) == 1:
        return found[0]
    if found:
        names = ", ".join(host.name for host, _ in found)
        return f"Session {session_id} is on several Macs ({names}); pass --host"
    where = name or "any Mac"
    missed = f" ({', '.join(unreachable)} could not be asked)" if unreachable else ""
    return f"No chat with session {session_id} on {where}{missed}"


def read_tail(host: Host, session_id: str, count: int) -> dict[str, Any]:
    """The transcript's last `count` complete lines, reading more only when needed."""
    budget = TAIL_FIRST_BYTES
    while True:
        chunk = host.transcript_tail(session_id, budget)
        if len(chunk["lines"]) >= count or chunk["start"] == 0 or budget >= TAIL_MOST_BYTES:
            chunk["lines"] = chunk["lines"][-count:]
            return chunk
        budget *= 4


def printable(text: str) -> str:
    """Text a chat wrote, safe for a terminal: control characters shown as escapes."""
    import re

    return re.sub(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", text)


def _content(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            parts.append(f"[tool {block.get('name')}]")
        else:
            parts.append(f"[{kind}]")
    return " ".join(parts)


def entry_text(raw: str) -> str:
    """One transcript line as a person reads it: `time role: text`, or `[type]`."""
    import json

    try:
        entry = json.loads(raw)
    except (ValueError, RecursionError):
        return printable(raw)
    if not isinstance(entry, dict):
        return printable(raw)
    stamp = str(entry.get("timestamp") or "")
    prefix = f"{stamp} " if stamp else ""
    message = entry.get("message")
    if entry.get("type") in ("user", "assistant") and isinstance(message, dict):
        role = message.get("role") or entry["type"]
        return printable(f"{prefix}{role}: {_content(message.get('content'))}")
    label = "/".join(str(part) for part in (entry.get("type"), entry.get("subtype")) if part)
    return printable(f"{prefix}[{label}]")


def _print_chat(view: dict[str, Any]) -> None:
    import json

    out = sys.stdout
    chat = view["chat"]
    out.write(f"host:       {printable(view['host'])}\n")
    out.write(f"session:    claude:{printable(view['session_id'])}\n")
    if chat is None:
        out.write("registry:   no entry (the chat is not running)\n")
    else:
        for label, key in (("pid", "pid"), ("name", "name"), ("status", "status")):
            out.write(f"{label + ':':<12}{printable(str(chat[key]))}\n")
        out.write(f"{'live:':<12}{'yes' if chat['live'] else 'no'}\n")
        out.write(f"{'socket:':<12}{printable(str(chat['socket']))}\n")
        out.write("registry entry:\n")
        for line in json.dumps(chat["entry"], indent=2, sort_keys=True).splitlines():
            out.write(f"  {printable(line)}\n")
    tail = view["transcript"]
    if tail["path"] is None:
        out.write("transcript: none yet\n")
        return
    shown = len(tail["lines"])
    out.write(f"transcript: {printable(tail['path'])} ({tail['size']} bytes), last {shown}:\n")
    for _, text in tail["lines"]:
        for line in entry_text(text).splitlines() or [""]:
            out.write(f"  {line}\n")


def chat_show(args: argparse.Namespace) -> int:
    """A chat's registry entry and transcript tail, on whichever Mac it lives."""
    session_id = args.session_id.removeprefix("claude:")
    fleet = load_fleet(coop_home())
    try:
        found = find_chat(fleet, session_id, args.host)
        if isinstance(found, str):
            print(f"coop: {one_line(found)}", file=sys.stderr)
            return 1
        host, chat = found
        tail = read_tail(host, session_id, args.lines)
    finally:
        fleet.close()
    view = {"host": host.name, "session_id": session_id, "chat": chat, "transcript": tail}
    if args.json:
        import json

        print(json.dumps(view, separators=(",", ":")))
    else:
        _print_chat(view)
    return 0
