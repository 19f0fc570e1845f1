"""The fleet commands: `coop chats`, `coop hosts` and `coop chat show`. They read Macs,
never the ledger or the app, through the one fleet survey (coop_engine/loop/survey.py):
asked of the running coordinator over its hub when there is one (its connections are
warm; loop/desk.py answers; cli/client.py asks), else directly. Each JSON row says
which: `"via"`."""

from __future__ import annotations

import sys

from coop_engine.cli.output import print_rows
from coop_engine.naming import short_ids

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from coop_engine.cli.output import Column
    from coop_engine.loop.desk import Desk

CHAT_COLUMNS: list[Column] = [
    ("HOST", lambda r: r["host"]),
    ("SESSION_ID", lambda r: r["short_id"]),
    ("NAME", lambda r: r["label"]),
    ("PID", lambda r: r["pid"]),
    ("STATUS", lambda r: r["status"]),
    ("SOCKET", lambda r: r["socket"]),
    ("INBOUND", lambda r: f"{r['inbound']} ({r['inbound_source']})" if r["inbound"] else None),
    ("TMUX", lambda r: r["tmux"]),
    ("CODEMAN", lambda r: codeman_cell(r["codeman"])),
]
HOST_COLUMNS: list[Column] = [
    ("HOST", lambda r: r["host"]),
    ("REACHABLE", lambda r: "yes" if r["reachable"] else "no"),
    ("LATENCY_MS", lambda r: None if r["latency_ms"] is None else f"{r['latency_ms']:.1f}"),
    ("CHATS_LIVE", lambda r: r["chats_live"]),
    ("CHATS_REGISTERED", lambda r: r["chats_registered"]),
    ("CHECKED_AT", lambda r: r["checked_at"]),
    ("REASON", lambda r: r["reason"]),
]


def codeman_cell(found: dict[str, Any] | None) -> str | None:
    """The Codeman session a chat's pane belongs to; a docker or ssh worker's says that
    its own registry is another one than the Mac that listed the pane."""
    if not found:
        return None
    if found["registry"] == "this":
        return str(found["session"])
    return f"{found['session']} ({found['kind']}, another registry)"


def warn(message: str) -> None:
    # The formatter is imported where text is printed: `coop chats --json` prints none.
    from coop_engine.formats import one_line

    print(f"coop: warning: {one_line(message)}", file=sys.stderr)


def _ask(op: str, args: dict[str, Any], direct: Callable[[Desk], Any]) -> tuple[Any, str]:
    """The answer to `op` and how it came: from the running coordinator ("serve"), or
    asked here through a Desk over this process's own connections ("direct")."""
    from coop_engine.cli import client

    return client.ask(op, args, direct)


def _via(rows: list[dict[str, Any]], via: str) -> list[dict[str, Any]]:
    """The rows, each saying how it came (in place: the rows are this command's own)."""
    for row in rows:
        row["via"] = via
    return rows


def live_chats(host: str | None) -> tuple[dict[str, Any], str]:
    """`coop chats`' answer, `{rows, failed, asked}`, each row with the short id the
    listing shows (`short_id`: unique among the rows), and how it came (`via`)."""
    found, via = _ask("chats", {"host": host}, lambda desk: desk.chats(host))
    rows = found["rows"]
    shorts = short_ids(str(row["session_id"]) for row in rows)
    for row in rows:  # in place: the rows are this command's own
        row["short_id"] = shorts[str(row["session_id"])]
    return found, via


def chats(args: argparse.Namespace) -> int:
    """Live chats of one Mac (--host; its failure is the command's) or of every Mac (an
    unreachable one is a warning, the others are still listed)."""
    found, via = live_chats(args.host)
    for failed in found["failed"]:
        warn(f"{failed['host']}: {failed['cause']}; its chats are not listed")
    print_rows(_via(found["rows"], via), CHAT_COLUMNS, args.json)
    return 0


def hosts(args: argparse.Namespace) -> int:
    """Every Mac checked at once; an unreachable one is a row with its reason. Each row
    adds `host`, the word every other listing uses for a Mac (the same as `name`)."""
    rows, via = _ask("hosts", {}, lambda desk: desk.hosts())
    print_rows([{**row, "host": row["name"]} for row in _via(rows, via)], HOST_COLUMNS, args.json)
    return 0


def chat_show(args: argparse.Namespace) -> int:
    """A chat's registry entry and transcript tail, on whichever Mac it lives."""
    session_id, host = _chat_to_show(args.session_id, args.host)
    question = {"session_id": session_id, "host": host, "lines": args.lines}
    found, via = _ask(
        "chat_show", question, lambda desk: desk.chat_show(session_id, host, args.lines)
    )
    for warning in found["warnings"]:
        warn(warning)
    if "missing" in found:
        from coop_engine.formats import one_line

        print(f"coop: {one_line(found['missing'])}", file=sys.stderr)
        return 1
    view = {**found["view"], "via": via}
    if args.json:
        import json

        print(json.dumps(view, separators=(",", ":")))
    else:
        _print_chat(view)
    return 0


def _chat_to_show(ref: str, host: str | None) -> tuple[str, str | None]:
    """The session id and Mac `coop chat show` reads. A whole id is read as it is, on the
    Mac named or on any (a chat that ended may have left its transcript); anything else
    names one of the live Claude chats `coop chats` lists."""
    from coop_engine.cli.addressing import asked_line, live_pool, resolve_chat
    from coop_engine.cli.arguments import full_ref

    whole = ref.lower().removeprefix("claude:")
    if full_ref(f"claude:{whole}"):
        return whole, host
    found, _ = live_chats(host)
    failed = [(f["host"], f["cause"]) for f in found["failed"]]
    for name, cause in failed:
        warn(f"{name}: {cause}; its chats were not searched")
    claude = [row for row in found["rows"] if row["vendor"] == "claude"]
    chat = resolve_chat(ref, live_pool(claude), lambda: asked_line(found["asked"], failed))
    return str(chat["session_id"]), str(chat["host"])


def _print_chat(view: dict[str, Any]) -> None:
    import json

    from coop_engine.formats import entry_lines, printable

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
    lines = [(int(offset), str(text)) for offset, text in tail["lines"]]
    for entry in entry_lines(lines, width=None):
        stamp = f"{entry.timestamp} " if entry.timestamp else ""
        said = f"{entry.kind}: {entry.excerpt}" if entry.excerpt else f"[{entry.kind}]"
        out.write(f"  {stamp}{said}\n")
