"""The simulated ``codex`` executable (``hosts/sim/bin/codex``): two of its subcommands.

- ``codex app-server``: JSON-RPC over stdin/stdout (``codex_appserver``) on the home
  named by ``CODEX_HOME`` (default ``~/.codex``). ``COOP_SIM_CODEX_NO_QUEUE_API=1``
  plays a Codex without the ``thread/queue/*`` methods.
- ``codex queue --thread ID|NAME --message TEXT``: queues the message as Codex CLI
  0.171.0 does, through the same ``thread/queue/add``, with a client id of its own (a
  fresh UUIDv7 it never prints); prints ``Queued message <item id> for thread <id>.``.
  A name is looked up in ``session_index.jsonl``. Failures exit 1 with the real
  ``Error: ...`` line, command-line mistakes exit 2 with clap's words.

Anything else exits 2 with a one-line usage message.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from hosts.sim import codex_appserver
from hosts.sim.codex_appserver import RpcError, parse_uuid
from hosts.sim.codex_rollout import uuid7

NO_QUEUE_API = "COOP_SIM_CODEX_NO_QUEUE_API"
USAGE = "usage: codex app-server | codex queue --thread <THREAD> --message <TEXT>"
QUEUE_USAGE = "Usage: codex queue --thread <THREAD> --message <TEXT>"
QUEUE_OPTIONS = {"--thread": "<THREAD>", "--message": "<TEXT>"}
MORE = "For more information, try '--help'."


class CommandLineError(Exception):
    """A command line clap would refuse (exit status 2); the message is clap's."""


def codex_home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or Path.home() / ".codex").expanduser().absolute()


def main(argv: list[str]) -> int:
    """Run one ``codex`` command; returns its exit status."""
    if argv != ["app-server"] and argv[:1] != ["queue"]:
        print(USAGE, file=sys.stderr)
        return 2
    home = codex_home()
    if not os.environ.get("CODEX_HOME"):
        home.mkdir(parents=True, exist_ok=True)  # only a named home must exist already
    if not home.is_dir():
        print(
            f"Error: CODEX_HOME points to {str(home)!r}, but that path does not exist",
            file=sys.stderr,
        )
        return 1
    if argv == ["app-server"]:
        return app_server(home)
    return queue(home, argv[1:])


def app_server(home: Path) -> int:
    """Serve stdin/stdout until the client closes either end."""
    queue_api = os.environ.get(NO_QUEUE_API) != "1"
    try:
        return codex_appserver.serve(home, sys.stdin.buffer, sys.stdout, queue_api)
    except BrokenPipeError:
        # The client went away mid-answer; point stdout at nothing so exit stays quiet.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def queue(home: Path, args: list[str]) -> int:
    """``codex queue``: one message queued for one thread."""
    try:
        thread, message = queue_arguments(args)
    except CommandLineError as exc:
        print(f"error: {exc}\n\n{MORE}", file=sys.stderr)
        return 2
    try:
        thread_id = parse_uuid(thread)
    except ValueError:
        named = find_named(home, thread)
        if named is None:
            print(f"Error: No active session found matching '{thread}'.", file=sys.stderr)
            return 1
        thread_id = named
    params = {
        "threadId": thread_id,
        "clientUserMessageId": uuid7(),
        "input": [{"type": "text", "text": message, "text_elements": []}],
    }
    try:
        added = codex_appserver.queue_add(home, params)
    except RpcError as exc:
        print(
            "Error: failed to queue session message: thread/queue/add failed:"
            f" {exc.message} (code {exc.code})",
            file=sys.stderr,
        )
        return 1
    print(f"Queued message {added['queuedSubmission']['id']} for thread {thread_id}.")
    return 0


def queue_arguments(args: list[str]) -> tuple[str, str]:
    """(thread, message) from ``--thread X --message Y`` (or ``--opt=value``)."""
    values: dict[str, str] = {}
    rest = list(args)
    while rest:
        name, equals, inline = rest.pop(0).partition("=")
        if name not in QUEUE_OPTIONS:
            raise CommandLineError(f"unexpected argument '{name}' found\n\n{QUEUE_USAGE}")
        value = inline if equals else (rest.pop(0) if rest else "")
        if not value:
            shown = f"{name} {QUEUE_OPTIONS[name]}"
            raise CommandLineError(f"a value is required for '{shown}' but none was supplied")
        values[name] = value
    missing = [f"  {name} {meta}" for name, meta in QUEUE_OPTIONS.items() if name not in values]
    if missing:
        listed = "\n".join(missing)
        raise CommandLineError(
            f"the following required arguments were not provided:\n{listed}\n\n{QUEUE_USAGE}"
        )
    return values["--thread"], values["--message"]


def find_named(home: Path, name: str) -> str | None:
    """The thread whose latest name in ``session_index.jsonl`` is exactly ``name``."""
    latest: dict[str, str] = {}
    try:
        lines = (home / "session_index.jsonl").read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("id"), str):
            latest.pop(entry["id"], None)  # re-inserted last: the newest line wins
            latest[entry["id"]] = str(entry.get("thread_name"))
    matches = [thread_id for thread_id, named in latest.items() if named == name]
    return matches[-1] if matches else None
