"""Evidence in plain words, for the screens that show it: why a delivery is proven lost,
what was predicted at send, and what a held notice proved."""

from __future__ import annotations

from typing import Any

from coop_engine.formats import iso
from coop_engine.loop.doors.codex import expectation
from coop_engine.loop.withdrawal import WITHDRAWN
from coop_engine.naming import codeman
from coop_engine.policy import PARITY
from coop_engine.receipts import HOLD_PROOFS

REASONS = {
    "refused-by-receiver-policy": (
        "the receiver's settings refuse peer messages (crossSessionInbound: refuse)"
    ),
    "held-for-approval-then-expired": (
        "the receiver held it for approval (it bypasses permissions and Coop asserts no mode), "
        "and the approval dialog expired"
    ),
    "receiver-idle-without-entry": (
        "the receiver accepts peer messages and sat idle, yet its transcript has no entry"
        " with this id"
    ),
}


STATES = {
    "pending": "not sent yet",
    "uncertain": "sent, not yet seen",
    "delivered": "received",
    "expired": "proven lost",
    "cancelled": "cancelled",
}
# Short words for the reasons, for tables and history; REASONS above says them in full.
REASONS_SHORT = {
    "refused-by-receiver-policy": "the receiver's settings refuse it",
    "held-for-approval-then-expired": "held for approval, the dialog expired",
    "receiver-idle-without-entry": "receiver idle, no entry",
    WITHDRAWN: "withdrawn from Codex's queue",
}
INBOUND_SOURCES = {
    "settings-flag": "--settings",
    "managed": "managed settings",
    "user": "user settings",
    "project": "project settings",
    "project-local": "local project settings",
}


def state_words(state: str | None) -> str:
    """An envelope's state in words, the code beside them: "proven lost (expired)"."""
    if not state:
        return "—"
    words = STATES.get(state)
    return f"{words} ({state})" if words and words != state else state


def reason_words(reason: str | None) -> str:
    """One of the three reasons (or withdrawn-from-queue) in words, the code beside them."""
    if not reason:
        return ""
    words = REASONS_SHORT.get(reason)
    return f"{words} ({reason})" if words else reason


def inbound_words(inbound: dict[str, Any] | None) -> str:
    """The inbound prediction as the chats pane shows it: "accepts", "holds (bypass, no
    setting)", "refuses (--settings)", or "unknown (why)"."""
    if not inbound:
        return ""
    verdict, source = inbound.get("verdict"), str(inbound.get("source") or "")
    if source == PARITY:
        if verdict == "hold":
            return "holds (bypass, no setting)"
        why = ""
    else:
        why = INBOUND_SOURCES.get(source, source)
    if verdict == "queued":  # the Codex door: Codex's own queue decides when it runs
        return "queued in Codex"
    words = {"accept": "accepts", "hold": "holds", "refuse": "refuses"}.get(str(verdict))
    if words is None:
        return f"unknown ({inbound.get('why') or source or 'no prediction'})"
    return f"{words} ({why})" if why else words


def route_words(inbound: dict[str, Any] | None) -> str:
    """The predicted verdict and, for a Codex thread, when its queue will run a message:
    "queued in Codex: waits until the thread is opened"."""
    if not inbound:
        return "verdict not known yet"
    words = inbound_words(inbound)
    return f"{words}: {inbound['expect']}" if inbound.get("expect") else words


def will_not_arrive(inbound: dict[str, Any] | None) -> str | None:
    """Why an envelope sent now would not arrive, from the inbound prediction; None when
    it may arrive."""
    if not inbound or inbound.get("verdict") != "refuse":
        return None
    source = INBOUND_SOURCES.get(str(inbound.get("source")), str(inbound.get("source")))
    return (
        f"its {source} set crossSessionInbound to refuse: the receiver drops peer messages"
        " unread, so Coop would only prove it lost (refused-by-receiver-policy)"
    )


def prediction(inbound: dict[str, Any] | None) -> str:
    if not inbound:
        return "not recorded"
    words = f"{inbound_words(inbound)}: {inbound.get('verdict')} (from {inbound.get('source')})"
    if inbound.get("dialog_expiry"):
        words += f", dialog expiry {inbound['dialog_expiry']}"
    if inbound.get("mode"):
        words += f", receiver mode {inbound['mode']}"
    if inbound.get("why"):
        words += f": {inbound['why']}"
    if inbound.get("expect"):
        # The Codex door's: when a message added to the thread's queue will run.
        words += f": {inbound['expect']}"
    return words


def held(notice: dict[str, Any]) -> str:
    """A held notice as a sentence: where the receiver wrote it, what it proves, and the
    preview it showed."""
    cause = str(notice.get("cause") or "unknown")
    proves = str(notice.get("proves") or HOLD_PROOFS.get(cause, HOLD_PROOFS["unknown"]))
    words = "The receiver wrote a held notice for this message"
    if notice.get("offset") is not None:
        words += f" at byte {notice['offset']} of its transcript"
    if notice.get("timestamp"):
        words += f" ({notice['timestamp']})"
    words += f": {proves} (cause {cause})."
    if notice.get("preview"):
        preview = " ".join(str(notice["preview"]).split())
        words += f" It showed «{preview}»."
    return words


def _seconds_between(sent: Any, seen: Any) -> float | None:
    """How long after sending a verdict came; never negative (a refusal is judged in the
    pass that sent it, whose clock was read before the send)."""
    if not isinstance(sent, int | float) or not isinstance(seen, int | float):
        return None
    return max(0.0, float(seen) - float(sent))


def proof_of_loss(expiry: dict[str, Any] | None) -> list[str]:
    """Why Coop holds this delivery proven lost, one fact a line."""
    if not expiry:
        return ["not proven lost: silence proves nothing"]
    reason = str(expiry.get("reason"))
    if reason == WITHDRAWN:
        # The Codex door's one proof of loss: Codex's own `deleted: true`.
        return withdrawn(expiry)
    lines = [f"{REASONS.get(reason, 'unrecognised reason')} ({reason})"]
    sent, seen = expiry.get("sent_at"), expiry.get("observed_at")
    after = _seconds_between(sent, seen)
    if after is not None and after < 1:
        lines.append(f"sent {iso(sent)}, judged as it was sent: no wait proves more")
    elif after is not None:
        lines.append(f"sent {iso(sent)}, judged {iso(seen)}: {after:.0f} s later")
    lines.append(f"predicted at send: {prediction(expiry.get('inbound_at_send'))}")
    if expiry.get("receiver_status"):
        lines.append(f"the receiver's registry said {expiry['receiver_status']}")
    if expiry.get("transcript_offset") is not None:
        lines.append(f"its transcript was read again from byte {expiry['transcript_offset']}")
    return lines


def withdrawn(expiry: dict[str, Any]) -> list[str]:
    """A Codex envelope taken back out of Codex's queue: who asked, and Codex's answer."""
    by = expiry.get("by") or "someone"
    words = f"withdrawn from Codex's queue by {by}: Codex confirmed it will never run"
    lines = [f"{words} ({WITHDRAWN})"]
    lines.append(f"Codex answered deleted: true for queued message {expiry.get('queued_id')}")
    seen = expiry.get("observed_at")
    if isinstance(seen, int | float):
        lines.append(f"withdrawn {iso(seen)}")
    return lines


def in_codex_queue(envelope: dict[str, Any]) -> str | None:
    """Where a Codex envelope sent and not yet received stands in Codex's queue, as the
    last survey saw it; None when that is not known (or not a Codex envelope in flight)."""
    if envelope.get("door") != "codex" or envelope.get("state") != "uncertain":
        return None
    if envelope.get("queued") is True:
        return f"queued in Codex: {expectation(bool(envelope.get('thread_open')))}"
    if envelope.get("queued") is False:
        return "taken from Codex's queue: its receipt should follow"
    return None


# --- History: what happened, not which function ran ----------------------------------------


def _sent(evidence: dict[str, Any], door: str) -> str:
    if not evidence.get("ok"):
        said = evidence.get("error") or evidence.get("stage") or "no answer"
        if not evidence.get("written"):
            return f"not sent: {said}"
        return f"the write failed after connecting, bytes may have left: {said}"
    if door == "codex":
        return f"added to Codex's queue (queued id {evidence.get('queued_id')})"
    return "sent: the socket took the frame"


def _lost(evidence: dict[str, Any]) -> str:
    reason = str(evidence.get("reason") or "")
    if reason == WITHDRAWN:
        return "withdrawn from Codex's queue: Codex answered deleted: true"
    after = _seconds_between(evidence.get("sent_at"), evidence.get("observed_at"))
    if reason == "receiver-idle-without-entry":
        waited = f" after {after:.0f} s" if after is not None else ""
        return f"proven lost: receiver idle, no entry{waited}"
    if reason == "held-for-approval-then-expired":
        expiry = (evidence.get("inbound_at_send") or {}).get("dialog_expiry")
        return f"proven lost: held for approval, the dialog ({expiry or '?'}) expired"
    if reason == "refused-by-receiver-policy":
        return "proven lost: the receiver's settings refuse peer messages"
    return f"proven lost: {reason}"


def _queue(evidence: dict[str, Any]) -> str:
    if not evidence.get("queued"):
        return "taken from Codex's queue: its receipt should follow"
    return "seen in Codex's queue" + (" (the thread is open)" if evidence.get("open") else "")


def _cancelled(evidence: dict[str, Any]) -> str:
    """A pending envelope cancelled by another's decision: the take it served released,
    the obligation a review asked about decided, or the todo taken by another chat."""
    if evidence.get("released_by"):
        return f"cancelled: {evidence['released_by']} released the take (never sent)"
    if evidence.get("obligation") is not None:
        decided = evidence.get("decided")
        return f"cancelled: obligation {evidence['obligation']} was decided ({decided})"
    return "cancelled: the todo was taken by another dispatch (never sent)"


def _accepted(event: dict[str, Any], detail: dict[str, Any]) -> str:
    if event.get("to") == "cancelled":
        return "accepted too late: the todo was already taken"
    if detail.get("kind") == "work":
        invitation = str(detail.get("invitation") or "")[:8] or "?"
        return f"the invitation ({invitation}) was accepted: this work followed"
    return "accepted: the chat's final carried COOP_ACCEPT with the nonce"


def _chat_of(evidence: dict[str, Any], detail: dict[str, Any]) -> Any:
    """The chat an event names, as the panes call it when it is the envelope's own."""
    if evidence.get("session") == detail.get("session") and detail.get("chat_words"):
        return detail["chat_words"]
    return evidence.get("session")


def happened(event: dict[str, Any], detail: dict[str, Any]) -> str:
    """One History row in words: "sent: the socket took the frame", "held notice seen",
    "sent again as 5d300cb9"."""
    command = str(event.get("command"))
    given = event.get("evidence")
    evidence: dict[str, Any] = given if isinstance(given, dict) else {}
    door = str(detail.get("door") or "claude")
    simple = {
        "invite": f"invited {_chat_of(evidence, detail)} on {evidence.get('host')}",
        "mark_uncertain": "sending, predicted: "
        + (inbound_words(evidence.get("inbound")) or "not recorded"),
        "record_receipt": "received: "
        + ("a UserMessage in its rollout" if door == "codex" else "a peer entry in its transcript")
        + f" at byte {evidence.get('offset')}",
        "record_held": "held notice seen: the receiver holds it for approval",
        "record_refusal": f"not sent: {evidence.get('error')}",
        "record_conflict": f"conflict: {evidence.get('reason')}",
        "ask_withdrawal": f"{event.get('who')} asked Codex to withdraw it from its queue",
        "decline": "declined: the chat's final carried COOP_DECLINE",
        "report_outcome": f"outcome reported by {event.get('who')}: {evidence.get('outcome')}",
        "cancel_stale": "cancelled: never sent, and no longer needed",
    }
    if command in simple:
        return simple[command]
    if command == "enqueue":
        return f"stored: the {evidence.get('kind') or 'envelope'} was written to the outbox"
    if command == "record_transport":
        return _sent(evidence, door)
    if command == "record_queue":
        return _queue(evidence)
    if command == "cancel":
        return _cancelled(evidence)
    if command == "expire":
        return _lost(evidence)
    if command == "accept":
        return _accepted(event, detail)
    if command == "resend":
        if evidence.get("resent_as"):
            return f"sent again as {str(evidence['resent_as'])[:8]}"
        return f"the second attempt of {str(evidence.get('resent_from'))[:8]}"
    if command == "withdraw":
        return f"withdrawn by {event.get('who')}: never sent, cancelled"
    return command.replace("_", " ")


def moved(event: dict[str, Any], before: str | None) -> str:
    """The History row's from -> to: the envelope's (or, for the todo's dispatch, the
    dispatch's) states; an event that moves nothing says what the state stays."""
    start, end = event.get("from"), event.get("to")
    owner = "dispatch " if str(event.get("subject", "")).startswith("dispatch:") else ""
    if end is None or start == end:
        stays = end or before
        return f"stays {owner}{stays}" if stays else ""
    return f"{owner}{start or 'new'} → {end}"


# --- a registry entry, in labelled fields ------------------------------------------------


def ago(at: Any, now: float) -> str:
    """How long ago a time was: "3 m ago"; `at` in seconds or (as Claude's registry
    writes them) epoch milliseconds."""
    if not isinstance(at, int | float) or isinstance(at, bool):
        return "at an unknown time"
    seconds = float(at) / 1000 if at > 1e11 else float(at)
    elapsed = int(now - seconds)
    if elapsed < 0:
        return "just now"
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m")):
        if elapsed >= size:
            return f"{elapsed // size} {unit} ago"
    return f"{elapsed} s ago"


def registry_fields(entry: dict[str, Any], now: float) -> list[tuple[str, str]]:
    """A registry entry as (label, words) rows: "status", "idle, 3 m ago". Every value is
    the chat's own: show it as plain text."""
    rows: list[tuple[str, str]] = []
    if "status" in entry:
        status = f"{entry['status']}, {ago(entry.get('updatedAt'), now)}"
        if entry.get("waitingFor"):
            status += f" (waiting for {entry['waitingFor']})"
        rows.append(("status", status))
    if "name" in entry:
        source = {"user": "set by the user", "derived": "derived from its folder"}
        said = source.get(str(entry.get("nameSource")), str(entry.get("nameSource") or ""))
        rows.append(("name", f"{entry['name']}" + (f" ({said})" if said else "")))
    if "pid" in entry:
        rows.append(("process", f"pid {entry['pid']}, started {ago(entry.get('startedAt'), now)}"))
    labelled = (
        ("sessionId", "session"),
        ("cwd", "folder"),
        ("tmux", "tmux pane"),
        ("messagingSocketPath", "socket"),
    )
    for key, label in labelled:
        if entry.get(key) is not None:
            rows.append((label, str(entry[key])))
    rows.append(("Codeman", codeman_words(entry.get("tmux"), entry.get("version"))))
    if "version" in entry:
        protocol = entry.get("peerProtocol")
        rows.append(
            (
                "Claude Code",
                f"{entry['version']}" + (f", peer protocol {protocol}" if protocol else ""),
            )
        )
    if entry.get("kind") or entry.get("entrypoint"):
        rows.append(("kind", f"{entry.get('kind')} from {entry.get('entrypoint')}"))
    return rows


# --- Codeman: which session a chat's tmux pane belongs to -----------------------------------

TMUX_SINCE = (2, 1, 226)  # the first Claude Code whose registry entries carry `tmux`


def _version(text: Any) -> tuple[int, ...] | None:
    try:
        return tuple(int(part) for part in str(text).split("."))
    except ValueError:
        return None


def codeman_words(tmux: str | None, version: Any = None) -> str:
    """A chat's Codeman session in words, from its tmux pane (coop_engine.naming): a
    local worker's `codeman-<id8>`; a docker or ssh worker's, which lives in another
    registry; none; or, for a Claude Code older than 2.1.226, not known (it writes no
    tmux field)."""
    found = codeman(tmux)
    if found is not None:
        if found["registry"] == "another":
            return (
                f"{found['session']}: a {found['kind']} worker, whose Codeman session lives"
                " in another registry (not this Mac's)"
            )
        return f"{found['session']} (Codeman session {found['id8']}, in this Mac's registry)"
    if tmux:
        return f"none: its tmux pane {tmux} is not a Codeman worker's"
    known = _version(version)
    if known is not None and known < TMUX_SINCE:
        return f"not known: Claude Code {version} writes no tmux field (2.1.226 and later do)"
    return "none: no tmux pane recorded"


# --- a Codex thread, in labelled fields ----------------------------------------------------


def thread_fields(thread: dict[str, Any], now: float) -> list[tuple[str, str]]:
    """A Codex thread's record, as its Mac's thread list keeps it, as (label, words)
    rows: open or saved, its name, folder, rollout and Codex. Every value is the
    thread's own: show it as plain text."""
    state = "open: some process holds it (Codex Desktop, a `codex resume` TUI)"
    if not thread.get("open"):
        state = "saved: nobody holds it open; a message queued now waits until it is opened"
    rows = [("status", state)]
    if thread.get("archived"):
        rows.append(("archived", "yes: Codex refuses its queue until it is unarchived"))
    labelled = (("name", "name"), ("id", "thread"), ("cwd", "folder"))
    rows += [(label, str(thread[key])) for key, label in labelled if thread.get(key)]
    rollout = str(thread.get("rollout_path") or "none yet")
    rows.append(("rollout", rollout + (" (compressed)" if thread.get("compressed") else "")))
    if thread.get("updated_at") is not None:
        rows.append(("updated", ago(thread["updated_at"], now)))
    made = " ".join(str(thread[key]) for key in ("originator", "cli_version") if thread.get(key))
    if made:
        rows.append(("Codex", made + (f" ({thread['source']})" if thread.get("source") else "")))
    rows += [("note", str(note)) for note in thread.get("notes") or []]
    return rows
