"""The scenarios, each run the same way against a real office and a simulated one.

A scenario starts its chats in an ``Office``, drives them and Coop's CLI, and returns a
``Run``: what Coop said (outbox rows, ledger events, ``coop chats`` rows) for the
scenario tests to judge, and a ``Trace`` (the chat's transcript, registry entries at
named moments, the frames sent) for the shape comparison. It waits only for what it
needs and fails with the reason when something does not come.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .offices import Entry, Office, Receiver, wait_until

TITLE = "Fix the flaky importer test"
DIALOG_EXPIRY = {"60s": 60, "5m": 300, "10m": 600}
GRACE = 60
# Bounds a hang only: a real chat on a loaded machine (another make test beside this
# one) took more than 15 s to make its first tool call.
HANG = 60.0
INVITE_RAW = (
    "Coop invites you to todo #273: Fix the flaky importer test.\n"
    "To take it, end your reply with: COOP_ACCEPT rawN0nce"
)


@dataclass
class Trace:
    """What one receiver wrote, for the shape comparison."""

    entries: list[Entry]
    registries: dict[str, Entry | None]
    envelopes: list[tuple[str, str]]  # (msg_id, text) of each frame that should land
    chats: dict[str, Any] = field(default_factory=dict)  # `coop chats` rows by role


@dataclass
class Run:
    """One scenario on one backend: the outbox at the end, what else the scenario
    recorded (``facts``), and the main chat's transcript lines with byte offsets."""

    backend: str
    trace: Trace
    outbox: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    lines: list[tuple[int, Entry]] = field(default_factory=list)


def _turns(chat: Receiver) -> int:
    return sum(
        1
        for e in chat.transcript()
        if e.get("type") == "system" and e.get("subtype") == "turn_duration"
    )


def wait_turns(chat: Receiver, count: int, timeout: float = HANG) -> None:
    wait_until(lambda: _turns(chat) >= count, timeout, f"{count} finished turns")


def wait_status(chat: Receiver, status: str, timeout: float = HANG) -> Entry:
    def reached() -> Entry:
        entry = chat.registry()
        return entry if entry and entry.get("status") == status else {}

    return wait_until(reached, timeout, f"status {status}")


def wait_entry(
    chat: Receiver, match: Callable[[Entry], bool], what: str, timeout: float = HANG
) -> None:
    wait_until(lambda: any(match(e) for e in chat.transcript()), timeout, what)


def is_tool_use(entry: Entry) -> bool:
    content = (entry.get("message") or {}).get("content")
    return (
        entry.get("type") == "assistant"
        and isinstance(content, list)
        and any(block.get("type") == "tool_use" for block in content)
    )


def is_notice(entry: Entry, start: str) -> bool:
    return entry.get("subtype") == "informational" and str(entry.get("content")).startswith(start)


def _envelopes(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return [(row["id"], row["payload"]["text"]) for row in rows if row["facts"]["received"]]


def _run(office: Office, chat: Receiver, registries: dict[str, Entry | None], **facts) -> Run:
    rows = office.outbox()
    trace = Trace(chat.transcript(), registries, _envelopes(rows))
    facts.setdefault("receipts", office.events("record_receipt"))
    facts.setdefault("acceptances", office.events("accept"))
    return Run(office.backend, trace, rows, facts, chat.lines())


def _invite(office: Office, chat: Receiver) -> str:
    todo = office.coop_ok("todo", "add", TITLE).strip()
    invited = office.coop_json("invite", todo, "--session", chat.ref)
    return str(invited["outbox"])


def _accepted_and_worked(rows: list[dict[str, Any]]) -> bool:
    return (
        len(rows) == 2
        and rows[0]["facts"]["accepted"] is not None
        and rows[1]["state"] == "delivered"
    )


# --- Coop through its CLI ---------------------------------------------------------------


def idle_default_chat(office: Office) -> Run:
    """Invite an idle chat in the default mode: delivered, accepted, work delivered."""
    chat = office.start()
    ready = chat.registry()
    _invite(office, chat)
    office.tick_until(_accepted_and_worked, "the acceptance and the work's receipt")
    wait_turns(chat, 2)
    return _run(office, chat, {"ready": ready, "after": wait_status(chat, "idle")})


def busy_tool_turn(office: Office) -> Run:
    """Invite a chat in the middle of a tool-calling turn: absorbed, then accepted by the
    final of the turn it joined."""
    chat = office.start()
    chat.start_tool_turn()
    wait_entry(chat, is_tool_use, "the first tool call")
    busy = chat.registry()
    invitation = _invite(office, chat)
    office.tick()
    received = office.tick_until(
        lambda rows: rows[0]["state"] == "delivered", "the absorbed invitation's receipt"
    )
    chat.end_tool_turn()  # absorbed mid-turn: the turn may end now
    office.tick_until(_accepted_and_worked, "the acceptance and the work's receipt")
    wait_turns(chat, 2)
    after = wait_status(chat, "idle")
    return _run(
        office,
        chat,
        {"busy": busy, "after": after},
        accepted_at_receipt=received[0]["facts"]["accepted"],
        invitation=invitation,
    )


def bypass_hold_expires(office: Office) -> Run:
    """A bypass chat holds the invitation: held evidence, uncertain until dialog expiry
    plus grace (time injected with --at), then expired; Send again works once."""
    chat = office.start(bypass=True)
    invitation = _invite(office, chat)
    sent_at = time.time()
    office.tick(at=sent_at)
    sent = office.envelope(invitation)
    rows = office.tick_until(lambda rows: rows[0]["held"] is not None, "the held notice")
    holding = wait_status(chat, "waiting")
    expiry = DIALOG_EXPIRY[sent["inbound"]["dialog_expiry"]]
    office.tick(at=sent_at + expiry + GRACE - 1)
    before = office.envelope(invitation)
    office.tick(at=sent_at + expiry + GRACE + 1)
    expired = office.envelope(invitation)
    again = office.coop("resend", invitation, "--by", "dad")
    twice = office.coop("resend", invitation, "--by", "dad")
    office.tick()
    rows = office.tick_until(
        lambda rows: len(rows) == 2 and rows[1]["held"] is not None, "the second held notice"
    )
    run = _run(
        office,
        chat,
        {"holding": holding},
        sent=sent,
        before_expiry=before,
        expired=expired,
        resend=again,
        resend_twice=twice,
    )
    run.trace.envelopes = [(row["id"], row["payload"]["text"]) for row in rows]
    return run


def bypass_accepting_chat(office: Office) -> Run:
    """A bypass chat whose user settings say crossSessionInbound: accept."""
    office.set_user_settings({"crossSessionInbound": "accept"})
    chat = office.start(bypass=True)
    _invite(office, chat)
    office.tick_until(_accepted_and_worked, "the acceptance and the work's receipt")
    wait_turns(chat, 2)
    return _run(office, chat, {"after": wait_status(chat, "idle")})


def exited_chats(office: Office) -> Run:
    """Invitations to a chat that exited (registry gone) and to one that was killed
    (registry left behind): refused before any I/O, with the reason."""
    gone, killed = office.start_many({}, {})
    killed.send("A message before the chat is killed.")
    wait_turns(killed, 1)
    gone.exit_clean()
    wait_until(lambda: gone.registry() is None, HANG, "the exited chat's entry to go")
    gone_lines = gone.lines()  # typing /exit writes a transcript of its own
    registry_before_kill = killed.registry()
    killed.kill()
    killed_lines = killed.lines()
    invited = []
    for chat in (gone, killed):
        todo = office.coop_ok("todo", "add", f"Work for {chat.session_id[:8]}").strip()
        invited.append(office.coop("invite", todo, "--session", chat.ref, "--json"))
    office.tick()
    office.tick()
    sessions = sorted(p.name for p in (office.config_dir / "sessions").iterdir())
    trace = Trace(
        killed.transcript(),
        {"exited": gone.registry(), "killed": killed.registry()},
        [],
    )
    facts = {
        "invited": invited,
        "gone": gone,
        "killed": killed,
        "gone_lines_before": gone_lines,
        "gone_lines": gone.lines(),
        "killed_lines_before": killed_lines,
        "killed_registry_before": registry_before_kill,
        "sessions": sessions,
        "marked": office.events("mark_uncertain"),
        "transported": office.events("record_transport"),
    }
    return Run(office.backend, trace, office.outbox(), facts, killed.lines())


def chats_listing(office: Office) -> Run:
    """`coop chats` over an idle, a busy, a holding, an accepting and a killed chat."""
    idle, busy, holding, flagged, killed = office.start_many(
        {},
        {},
        {"bypass": True},
        {"bypass": True, "settings_flag": {"crossSessionInbound": "accept"}},
        {},
    )
    killed.kill()
    holding.send("Held: this chat bypasses permission prompts.")
    waiting = wait_status(holding, "waiting")
    busy.start_tool_turn()
    wait_entry(busy, is_tool_use, "the first tool call")
    rows = office.coop_json("chats")
    busy_entry = busy.registry()
    busy.end_tool_turn()
    roles = {"idle": idle, "busy": busy, "holding": holding, "flagged": flagged}
    by_session = {row["session_id"]: row for row in rows}
    listed = {
        role: {
            k: by_session.get(chat.session_id, {}).get(k)
            for k in ("status", "socket", "inbound", "inbound_source")
        }
        for role, chat in roles.items()
    }
    trace = Trace(
        holding.transcript(),
        {
            "idle": idle.registry(),
            "busy": busy_entry,
            "holding": waiting,
            "flagged": flagged.registry(),
        },
        [],
        listed,
    )
    facts = {"rows": rows, "chats": {**roles, "killed": killed}}
    return Run(office.backend, trace, [], facts, holding.lines())


# --- raw frames (the harness's writer), for the shape comparison -----------------------


def _raw(chat: Receiver, registries: dict[str, Entry | None], *frames: dict[str, Any]) -> Run:
    envelopes = [(f["msg_id"], f["message"]["content"]) for f in frames]
    return Run("", Trace(chat.transcript(), registries, envelopes), lines=chat.lines())


def duplicate_body(office: Office) -> Run:
    chat = office.start()
    first = chat.send("The same words twice.")
    wait_turns(chat, 1)
    chat.send("The same words twice.")
    wait_entry(chat, lambda e: is_notice(e, "Dropped"), "the duplicate notice")
    return _raw(chat, {"after": wait_status(chat, "idle")}, first)


def user_hold_released(office: Office) -> Run:
    office.set_user_settings({"crossSessionInbound": "hold"})
    chat = office.start()
    frame = chat.send(INVITE_RAW)
    wait_entry(chat, lambda e: is_notice(e, "Held"), "the held notice")
    holding = chat.registry()
    office.set_user_settings({"crossSessionInbound": "accept"})
    wait_turns(chat, 1)
    return _raw(chat, {"holding": holding, "after": wait_status(chat, "idle")}, frame)


def parity_hold_delivered(office: Office) -> Run:
    chat = office.start(bypass=True)
    frame = chat.send(INVITE_RAW)
    holding = wait_status(chat, "waiting")
    chat.approve_held()
    wait_turns(chat, 1)
    return _raw(chat, {"holding": holding, "after": wait_status(chat, "idle")}, frame)


def queued_behind_a_turn(office: Office) -> Run:
    """Two frames arrive while a turn without tool calls runs: both join the next turn."""
    chat = office.start(think=2.0)
    first = chat.send("Take your time with this one: COOP_SLOW 2")
    wait_entry(chat, lambda e: e.get("type") == "user", "the first turn")
    second = chat.send("Queued behind the running turn.")
    third = chat.send("Also queued: COOP_ACCEPT queuedTok")
    wait_turns(chat, 2)
    return _raw(chat, {"after": wait_status(chat, "idle")}, first, second, third)


def odd_frames(office: Office) -> Run:
    """Frames the receiver still takes (a msg_id that is no UUID, no sender) and frames
    it drops without a trace (another session's, empty)."""
    chat = office.start()
    chat.send("An id that is not a UUID.", msg_id="not-a-uuid")
    wait_turns(chat, 1)
    nameless = chat.send("A frame without a sender.", **{"from": None})
    wait_turns(chat, 2)
    # Dropped without a trace: each looked at once the chat has hung up on it.
    chat.send("For another session.", read=True, session_id="00000000-0000-4000-8000-000000000000")
    chat.send("", read=True, msg_id=None)
    return _raw(chat, {"after": wait_status(chat, "idle")}, nameless)


SCENARIOS: dict[str, Callable[[Office], Run]] = {
    "idle": idle_default_chat,
    "busy": busy_tool_turn,
    "bypass": bypass_hold_expires,
    "bypass-accept": bypass_accepting_chat,
    "exited": exited_chats,
    "chats": chats_listing,
    "duplicate": duplicate_body,
    "user-hold": user_hold_released,
    "deliver": parity_hold_delivered,
    "queued": queued_behind_a_turn,
    "odd-frames": odd_frames,
}
