"""Which live chat an enrollment is: a chat is its process, not its conversation.

A Claude chat is the process on a Mac: its pid with the start time its registry entry
records, and its tmux pane as a second key where the entry names one. Its `sessionId` is
its current conversation, a fact that changes on /clear and resume (seed 002: "join on
tmux, never on sessionId"). These rules match an enrollment to one of a Mac's live
registry entries and say what changed; the coordinator records it (Engine.record_process).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

SEEN = "seen"  # the first reading of the chat's process
CHANGED = "changed"  # the same process, another conversation (/clear, /resume inside it)
RESUMED = "resumed"  # another process in the chat's pane, on one of its conversations


@dataclass(frozen=True)
class Process:
    """What a registry entry says of the process behind a chat."""

    pid: int
    birth: str
    tmux: str | None
    native_id: str
    name: str | None = None  # description, not identity: any chat can rename itself

    def as_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "birth": self.birth,
            "tmux": self.tmux,
            "native_id": self.native_id,
            "name": self.name,
        }


def process(entry: Mapping[str, Any]) -> Process | None:
    """The process a registry entry names, or None when the entry lacks what identifies
    it (a pid, a start time, a session id)."""
    pid, native_id = entry.get("pid"), entry.get("sessionId")
    birth = entry.get("procStart") or entry.get("startedAt")
    if not isinstance(pid, int) or not isinstance(native_id, str) or birth in (None, ""):
        return None
    tmux, name = entry.get("tmux"), entry.get("name")
    return Process(
        pid,
        str(birth),
        tmux if isinstance(tmux, str) and tmux else None,
        native_id,
        name if isinstance(name, str) and name else None,
    )


@dataclass(frozen=True)
class Match:
    """The live chat an enrollment is, and how that differs from what the ledger holds:
    `how` is None when nothing changed but, perhaps, its status."""

    entry: Mapping[str, Any]
    process: Process
    how: str | None


def conversations(enrollment: Any) -> list[str]:
    """Every conversation the enrollment has had, oldest first, its current one last."""
    earlier = [str(c["id"]) for c in getattr(enrollment, "conversations", None) or []]
    return [*earlier, str(enrollment.native_id)]


def conversations_since(enrollment: Any, native_id: str | None) -> list[str]:
    """The conversations from `native_id` (the one an envelope was sent into) to the
    current one: every transcript the chat has written since. Unknown: the current one."""
    known = conversations(enrollment)
    if native_id in known:
        return known[known.index(native_id) :]
    return known[-1:]


Processes = Sequence[tuple[Mapping[str, Any], Process]]


def processes(entries: Sequence[Mapping[str, Any]]) -> Processes:
    """Each live registry entry that names a process, with that process: read once for
    a Mac and matched against each of its enrollments (`match_among`)."""
    return [(entry, p) for entry in entries if (p := process(entry)) is not None]


def match(enrollment: Any, entries: Sequence[Mapping[str, Any]]) -> Match | None:
    """The one live registry entry that is this enrollment's chat, or None (it exited,
    or nothing tells which). In order: its process (pid and start); else the one live
    chat in its current conversation; else a new process in its tmux pane that resumed
    one of its earlier conversations."""
    return match_among(enrollment, processes(entries))


def match_among(enrollment: Any, live: Processes) -> Match | None:
    """`match`, over entries already read into their processes (`processes`)."""
    pid, birth = getattr(enrollment, "pid", None), getattr(enrollment, "birth", None)
    if pid is not None and birth is not None:
        same = [(e, p) for e, p in live if p.pid == pid and p.birth == birth]
        if len(same) == 1:
            entry, found = same[0]
            if found.native_id != enrollment.native_id:
                return Match(entry, found, CHANGED)
            described = (found.tmux, found.name) == (enrollment.tmux, enrollment.name)
            return Match(entry, found, None if described else SEEN)
    current = [(e, p) for e, p in live if p.native_id == enrollment.native_id]
    if len(current) == 1:
        entry, found = current[0]
        if pid is None:
            return Match(entry, found, SEEN)
        return Match(entry, found, RESUMED)
    pane = getattr(enrollment, "tmux", None)
    earlier = set(conversations(enrollment)[:-1])
    resumed = [(e, p) for e, p in live if pane and p.tmux == pane and p.native_id in earlier]
    if len(resumed) == 1:
        return Match(resumed[0][0], resumed[0][1], RESUMED)
    return None


def settling(enrollment: Any, entries: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a chat starting in the enrollment's pane (a live entry with no status
    yet) may be it: `claude --continue` names a fresh id for a moment before the one it
    continues (tests/real_claude/OBSERVED.md 12), so the enrollment waits for the next
    reading rather than being called exited."""
    pane = getattr(enrollment, "tmux", None)
    return bool(pane) and any(e.get("tmux") == pane and "status" not in e for e in entries)
