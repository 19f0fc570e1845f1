"""Start-up and shutdown of one simulated chat process.

Order, as the real chat does it: the inbox first, then the registry entry naming it
(no status yet), then the entry again with ``status``. Only then the one ready line on
stdout. SIGTERM/SIGINT/SIGHUP remove the entry, its key and the
socket; SIGKILL leaves them, like a crashed chat. SIGUSR1 is the user pressing Deliver
on held messages; SIGUSR2 is the user typing a prompt that runs tool calls. With
``--typed``, each line on stdin is what the user types: ``/clear`` starts a new
conversation in the same process.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

from hosts.sim.chat import Chat
from hosts.sim.inbox import Inbox
from hosts.sim.options import ChatOptions, UsageError, parse, sugar_argv
from hosts.sim.process import git_branch, pid_domain, proc_start, tmux_location
from hosts.sim.registry import PEER_FEATURES, VERSION, Registry, now_ms
from hosts.sim.settings import load_layers, permission_mode
from hosts.sim.transcript import Transcript


def note(message: str) -> None:
    """One line about what the chat did, on stderr (tests and people read it)."""
    print(f"hosts.sim[{os.getpid()}]: {message}", file=sys.stderr, flush=True)


def _reexec(argv: list[str], new_argv: list[str]) -> None:
    """Replace this process (same pid) with one started with ``new_argv``."""
    orig = list(sys.orig_argv)
    if argv and orig[-len(argv) :] == argv:
        prefix = orig[: len(orig) - len(argv)]
    else:
        prefix = [sys.executable, "-m", "hosts.sim", "chat"]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, [*prefix, *new_argv])


def main(argv: list[str]) -> int:
    """Run ``chat`` with its arguments; returns the exit status."""
    try:
        opts, ns = parse(argv)
        new_argv = sugar_argv(argv, ns)
    except UsageError as exc:
        print(f"hosts.sim chat: error: {exc}", file=sys.stderr, flush=True)
        return 2
    if new_argv is not None:
        _reexec(argv, new_argv)
    try:
        return asyncio.run(_run(opts))
    except OSError as exc:
        print(f"hosts.sim chat: cannot start: {exc}", file=sys.stderr, flush=True)
        return 1


def _derived_name(cwd: str, session_id: str) -> str:
    # The real chat names itself after its folder plus a suffix it picks.
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", Path(cwd).name).strip("-") or "chat"
    return f"{base}-{session_id[:2]}"


def _registry_fields(opts: ChatOptions, cwd: str) -> dict[str, Any]:
    """The first entry, keys in the real chat's order."""
    started = now_ms()
    fields: dict[str, Any] = {
        "pid": os.getpid(),
        "sessionId": opts.session_id,
        "cwd": cwd,
        "startedAt": started,
    }
    start = proc_start(os.getpid())
    if start is not None:
        fields["procStart"] = start
    fields |= {
        "version": VERSION,
        "peerProtocol": 1,
        "peerFeatures": list(PEER_FEATURES),
        "kind": "interactive",
        "entrypoint": "cli",
        "pidDomain": pid_domain(),
        "asksForConvertedSkills": None,
    }
    tmux = tmux_location()
    if tmux is not None:
        fields["tmux"] = tmux
    fields |= {
        "messagingSocketPath": str(opts.socket_path),
        "name": opts.name or _derived_name(cwd, opts.session_id),
        "nameSource": "user" if opts.name else "derived",
        "nameSince": started,
    }
    return fields


def _read_typed(loop: asyncio.AbstractEventLoop, chat: Chat) -> None:
    """Take each line on stdin as the user's typing; stdin's end stops the reading."""
    typed = sys.stdin.buffer
    pending = bytearray()

    def readable() -> None:
        chunk = os.read(typed.fileno(), 4096)
        if not chunk:
            loop.remove_reader(typed.fileno())
            return
        pending.extend(chunk)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            if line.strip() == b"/clear":
                chat.type_clear()
            else:
                note(f"typed {line[:40]!r}: only /clear is understood")

    loop.add_reader(typed.fileno(), readable)


async def _run(opts: ChatOptions) -> int:
    os.chdir(opts.cwd)
    cwd = os.getcwd()  # resolved, as the real chat reports it
    mode = permission_mode(opts.permission_mode, load_layers(opts))
    registry = Registry(opts.config_dir, os.getpid(), _registry_fields(opts, cwd))
    transcript = Transcript(opts.config_dir, opts.session_id, cwd, git_branch(cwd), mode)
    chat = Chat(opts, registry, transcript, mode, note)
    inbox = Inbox(opts.socket_path, chat.receive, note, opts.frame_log)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, chat.deliver_held)
    loop.add_signal_handler(signal.SIGUSR2, chat.start_busy_turn)
    if opts.typed:
        _read_typed(loop, chat)
    try:
        await inbox.start()
        registry.publish()
        if opts.history:
            chat.write_history()
        if opts.busy:
            chat.start_busy_turn()
        for command in opts.run:
            chat.run_command(command)
        registry.update(status=chat.status())
        ready = {
            "ready": True,
            "pid": os.getpid(),
            "session_id": opts.session_id,
            "socket": str(opts.socket_path),
            "registry": str(registry.path),
            "transcript": str(transcript.path),
        }
        print(json.dumps(ready), flush=True)
        runner = asyncio.create_task(chat.run())
        await stop.wait()
        runner.cancel()
    finally:
        inbox.close()
        registry.remove()
    return 0
