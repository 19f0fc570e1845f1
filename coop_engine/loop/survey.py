"""The fleet survey: asking Macs how they are and which chats they have. One
implementation for `coop hosts`, `coop chats`, `coop chat show` and the app's panes.

Every Mac is asked at once, one thread each, so a Mac that hangs costs its own timeout
and delays no other Mac's answer. A fleet of one is asked in the caller's thread: `coop
chats` on a lone Mac starts no thread and imports no ssh library.
"""

from __future__ import annotations

import time

from coop_engine.naming import codeman, label
from coop_engine.policy import inbound_policy
from hosts.mac.host import Host, HostError
from hosts.mac.native import NativeRefusal

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    Clock = Callable[[], float]

TAIL_FIRST_BYTES = 256 << 10
TAIL_MOST_BYTES = 16 << 20


def each_host(
    hosts: Sequence[Host],
    ask: Callable[[Host], Any],
    report: Callable[[int, Any], None],
) -> None:
    """`ask(host)` for every host concurrently; `report(index, answer)` as each answers,
    in the asking threads, the answer being the result or the HostError. Any other
    exception is raised here once every host has answered."""
    crashes: list[BaseException] = []

    def run(index: int) -> None:
        try:
            answer = ask(hosts[index])
        except HostError as error:
            answer = error
        except Exception as error:  # handed to the caller's thread below
            crashes.append(error)
            return
        report(index, answer)

    if len(hosts) == 1:
        run(0)
    else:
        import threading

        threads = [
            threading.Thread(target=run, args=(i,), name=f"survey-{host.name}", daemon=True)
            for i, host in enumerate(hosts)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if crashes:
        raise crashes[0]


def ask_each(hosts: Sequence[Host], ask: Callable[[Host], Any]) -> list[Any]:
    """`ask(host)` for every host concurrently: each answer or its HostError, in the
    hosts' order."""
    answers: list[Any] = [None] * len(hosts)
    each_host(hosts, ask, answers.__setitem__)
    return answers


# --- one Mac -------------------------------------------------------------------------------


def asking(name: str) -> dict[str, Any]:
    """A Mac's row before its first answer."""
    return {"name": name, "reachable": None, "reason": None, "latency_ms": None, "chats": []}


def health_row(name: str, clock: Clock = time.time) -> dict[str, Any]:
    """A Mac's `coop hosts` row before it answered: not reachable, nothing counted."""
    from coop_engine.formats import iso  # `coop chats` prints no time: not loaded for it

    return {
        "name": name,
        "reachable": False,
        "reason": None,
        "latency_ms": None,
        "chats_live": None,
        "chats_registered": None,
        "checked_at": iso(clock()),
    }


def health(
    host: Host, clock: Clock = time.time, timer: Clock = time.perf_counter
) -> dict[str, Any]:
    """One Mac's health row (`coop hosts`). The first request connects and starts the
    helper; the second, timed, is what one request costs on the warm connection."""
    row = health_row(host.name, clock)
    try:
        host.health()
        started = timer()
        answer = host.health()
        latency = timer() - started
    except HostError as error:
        row["reason"] = error.cause
        return row
    row.update(
        reachable=True,
        latency_ms=round(latency * 1000, 2),
        chats_live=answer["chats_live"],
        chats_registered=answer["chats_registered"],
    )
    return row


def predicted(chat: dict[str, Any]) -> dict[str, Any]:
    """A registry entry with its predicted inbound verdict in place of the inputs."""
    inputs = chat.pop("policy_inputs", None)
    chat["inbound"] = inbound_policy(inputs) if inputs is not None else None
    return chat


def survey_host(
    host: Host, clock: Clock = time.time, timer: Clock = time.perf_counter
) -> dict[str, Any]:
    """One Mac for the app: its health row, its chats with predictions and its Codex
    threads (`threads`, as `coop chats` lists them: not archived, open or saved)."""
    row = health(host, clock, timer)
    row.setdefault("chats", [])
    row.setdefault("threads", [])
    if not row["reachable"]:
        return row
    try:
        listing = host.chats(with_policy=True, codex=True)
    except (HostError, NativeRefusal) as error:
        cause = error.cause if isinstance(error, HostError) else str(error)
        from coop_engine.formats import iso

        return {**row, "reachable": False, "reason": cause, "checked_at": iso(clock())}
    row["chats"] = [predicted(chat) for chat in listing["chats"]]
    threads = listing["codex"]["threads"]
    row["threads"] = [thread_row(host.name, t) for t in threads if not t["archived"]]
    row["skipped"] = listing.get("skipped", [])
    return row


def survey(
    hosts: Sequence[Host],
    report: Callable[[dict[str, Any]], None],
    clock: Clock = time.time,
    timer: Clock = time.perf_counter,
) -> None:
    """Survey every Mac concurrently; `report` gets each Mac's row as soon as it comes."""
    each_host(hosts, lambda host: survey_host(host, clock, timer), lambda _, row: report(row))


# --- `coop chats` ------------------------------------------------------------------------


def chat_row(chat: dict[str, Any]) -> dict[str, Any]:
    """A registry entry as `coop chats --json` shows it."""
    prediction = predicted(dict(chat))["inbound"]
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
        "vendor": "claude",
        "label": label(chat["name"], chat["cwd"], chat["session_id"]),
        "codeman": codeman(chat["tmux"]),
    }


def thread_row(host: str, thread: dict[str, Any]) -> dict[str, Any]:
    """A Codex thread as `coop chats --json` shows it: `status` open (some process holds
    it, and polls its queue) or saved; `inbound` when a message added now would run."""
    from coop_engine.loop.doors.codex import expectation

    return {
        "host": host,
        "session_id": thread["id"],
        "pid": None,
        "name": thread["name"],
        "status": "open" if thread.get("open") else "saved",
        "socket": None,
        "inbound": expectation(bool(thread.get("open"))),
        "inbound_source": "codex queue",
        "dialog_expiry": None,
        "tmux": None,
        "cwd": thread.get("cwd"),
        "vendor": "codex",
        "label": label(thread["name"], thread.get("cwd"), thread["id"]),
        "codeman": None,
    }


def live_chats(hosts: Sequence[Host]) -> tuple[list[dict[str, Any]], list[HostError]]:
    """Every live chat of these Macs as `coop chats` rows, and the Macs that could not
    be asked."""
    rows: list[dict[str, Any]] = []
    failed: list[HostError] = []

    def ask(host: Host) -> dict[str, Any]:
        return host.chats(with_policy=True, codex=True)

    for host, answer in zip(hosts, ask_each(hosts, ask), strict=True):
        if isinstance(answer, HostError):
            failed.append(answer)
            continue
        rows += [chat_row(chat) for chat in answer["chats"] if chat["live"]]
        threads = answer["codex"]["threads"]
        rows += [thread_row(host.name, t) for t in threads if not t["archived"]]
    return rows, failed


# --- where a chat lives: `coop invite`, `coop chief set` ------------------------------------


def locate_live(hosts: Sequence[Host], native_id: str, ref: str) -> dict[str, Any]:
    """The Mac where a Claude chat is live now, and its entry: `{host, entry, warning}`.
    Several Macs have it, or no reachable one does: NotFound naming the Macs asked. One
    Mac was named and cannot be asked: that Mac, no entry, and a warning (the invitation
    waits for it)."""
    from coop_engine.errors import NotFound

    answers = ask_each(hosts, lambda host: host.registry_entry(native_id))
    found = [(h, a) for h, a in zip(hosts, answers, strict=True) if isinstance(a, dict)]
    failed = [a for a in answers if isinstance(a, HostError)]
    if len(found) == 1:
        return {"host": found[0][0].name, "entry": found[0][1], "warning": None}
    asked = ", ".join(host.name for host in hosts)
    if found:
        names = ", ".join(host.name for host, _ in found)
        raise NotFound(f"{ref} is live on several Macs ({names}); pass --host")
    if len(hosts) == 1 and failed:
        warning = f"{failed[0]}; the invitation waits until {hosts[0].name} answers"
        return {"host": hosts[0].name, "entry": None, "warning": warning}
    missed = "".join(f"; {error.host} could not be asked ({error.cause})" for error in failed)
    raise NotFound(f"No Mac has a live chat {ref} (asked: {asked}{missed})")


def locate_thread(hosts: Sequence[Host], native_id: str, ref: str) -> dict[str, Any]:
    """The Mac where a Codex thread is saved: `{host, entry, warning}` as `locate_live`.
    An archived thread is refused (Codex would refuse its queue), as is one no Mac has
    or several Macs have; asking creates nothing."""
    from coop_engine.errors import Conflict, NotFound

    answers = ask_each(hosts, lambda host: host.find_session("codex", native_id))
    saved = [(h, a) for h, a in zip(hosts, answers, strict=True) if isinstance(a, dict)]
    found = [h for h, a in saved if a["matches"]]
    archived = [
        h for h, a in zip(hosts, answers, strict=True) if isinstance(a, dict) and a["archived"]
    ]
    failed = [a for a in answers if isinstance(a, HostError)]
    if len(found) == 1:
        (answer,) = [a for h, a in saved if h is found[0]]
        entry = {"name": answer.get("name"), "cwd": answer.get("cwd")}
        return {"host": found[0].name, "entry": entry, "warning": None}
    if found:
        names = ", ".join(host.name for host in found)
        raise NotFound(f"{ref} is saved on several Macs ({names}); pass --host")
    if archived:
        raise Conflict(
            f"{ref} is archived on {archived[0].name}: `codex unarchive {native_id}` there first"
        )
    if len(hosts) == 1 and failed:
        warning = f"{failed[0]}; the invitation waits until {hosts[0].name} answers"
        return {"host": hosts[0].name, "entry": None, "warning": warning}
    asked = ", ".join(host.name for host in hosts)
    missed = "".join(f"; {error.host} could not be asked ({error.cause})" for error in failed)
    raise NotFound(f"No Mac has a saved Codex thread {ref} (asked: {asked}{missed})")


def find_session(hosts: Sequence[Host], vendor: str, native_id: str) -> dict[str, Any]:
    """Whether any Mac has this chat (a live Claude chat, a saved Codex thread), and
    which Macs were asked: `{found: [names], asked: "office: none, laptop: 1"}`."""
    answers = ask_each(hosts, lambda host: host.find_session(vendor, native_id))
    found, said = [], []
    for host, answer in zip(hosts, answers, strict=True):
        if isinstance(answer, HostError):
            said.append(f"{host.name}: {answer.cause}")
            continue
        said.append(f"{host.name}: {answer['matches']}")
        if answer["matches"]:
            found.append(host.name)
    return {"found": found, "asked": ", ".join(said)}


# --- `coop chat show` and the inspector ----------------------------------------------------


def _look(session_id: str) -> Callable[[Host], Any]:
    def look(host: Host) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
        entries = [c for c in host.chats()["chats"] if c["session_id"] == session_id]
        # No registry entry (the chat ended and its entry went): its transcript may remain.
        position = None if entries else host.transcript_position(session_id)
        return entries, position

    return look


def find_chat(
    hosts: Sequence[Host], session_id: str, named: bool, warn: Callable[[str], None]
) -> tuple[Host, dict[str, Any] | None] | str:
    """The Mac holding the session (live entry first) and its entry, or why not. With
    `named` (one Mac given by name) that Mac's failure is raised; otherwise it is a
    warning and the other Macs answer."""
    found: list[tuple[Host, dict[str, Any] | None]] = []
    unreachable = []
    for host, answer in zip(hosts, ask_each(hosts, _look(session_id)), strict=True):
        if isinstance(answer, HostError):
            if named:
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
    where = hosts[0].name if named else "any Mac"
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


def inspect_chat(host: Host, session_id: str, tail_bytes: int) -> dict[str, Any]:
    """The inspector's reading of one chat: a Claude chat's live registry entry and
    transcript tail, or, for `codex:<thread id>`, the thread's record and rollout tail
    (`inspect_thread`); `{"error": why}` when the Mac could not be asked. `vendor` says
    which."""
    vendor, _, native_id = session_id.partition(":")
    if vendor not in ("claude", "codex") or not native_id:
        vendor, native_id = "claude", session_id
    try:
        if vendor == "codex":
            return inspect_thread(host, native_id, tail_bytes)
        entry = host.registry_entry(native_id)
        tail = host.transcript_tail(native_id, tail_bytes)
    except (HostError, NativeRefusal) as error:
        return {"error": str(error)}
    return {"vendor": "claude", "entry": entry, "tail": tail}


def inspect_thread(host: Host, thread_id: str, tail_bytes: int) -> dict[str, Any]:
    """A Codex thread as its Mac keeps it: its record in the Mac's thread list (None
    when the list has it no more) and its rollout's complete lines within `tail_bytes`
    of the end. HostError or NativeRefusal (a malformed id) when it cannot be read."""
    listing = host.codex_threads()
    thread = next((t for t in listing["threads"] if t["id"] == thread_id), None)
    return {"vendor": "codex", "entry": thread, "tail": host.rollout_tail(thread_id, tail_bytes)}
