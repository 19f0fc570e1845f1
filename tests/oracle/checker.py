"""The oracle's checker: every verdict Coop printed, held against the receivers' own records.

It reads files and JSON only and imports nothing of Coop (no coop_engine, coop_tui or
hosts; tests/oracle/test_checker.py proves it): what a receiver has, it learns from that
receiver's files, never from Coop's ledger. Coop's side is only what `coop outbox --json`
printed: each envelope's id, state, five facts and reason, and the chat it was for.

A Claude chat's records (the simulated chat keeps all three, as `python -m hosts.sim chat`):
- its transcripts, one per conversation (`<config>/projects/*/<session id>.jsonl`): a
  peer entry of Coop's is a `user` entry, or a `queued_command` attachment, with `isMeta`
  true and an origin of kind `peer` from `cwkCoop` naming the envelope's id;
- its log of what it did with each frame (the simulator's notes on stderr: `frame <id>:
  hold (...)`, `refuse (...)`, `held frame expired and was dropped`, `lost ...`,
  `dropped: ...`, and `cleared: conversation A is now B`, which chains its transcripts);
- its inbox's log of every line it read (the frame log).
A Codex thread's records: its rollouts (`sessions/**` and `archived_sessions/`), where a
`UserMessage` item carrying the envelope's id as its `client_id` is the receipt.

Counted, over every envelope Coop printed:
- false receipt: Coop says received (the fact, or the state delivered) and the chat it
  was for has no entry for it;
- false loss: Coop says the chat does not have it (expired, or never sent: pending,
  cancelled) and a receiver's records hold its entry;
- duplicate: one envelope id entered twice anywhere, or read twice by an inbox, or one
  invitation (its COOP_ACCEPT token) or one todo's work entered under two envelope ids;
- hold expired: expired, and the receiver held it without its words that the hold
  expired (seed 001: a hold ends in the entry or in the receiver's own words);
- unknown expired: expired, and nothing in the receiver's records settles its fate
  (refused, dropped, lost, or the hold expired). Nothing settles a Codex envelope's loss
  here: Codex keeps no record of an item taken back out of its queue.

Run as a script: `python tests/oracle/checker.py --manifest M --outbox O` prints the
summary line and exits 1 when anything is counted.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SENDER = "cwkCoop"
_NOTE = re.compile(r"frame ([0-9a-fA-F-]{36}): (.+)$")
_CLEARED = re.compile(r"cleared: conversation (\S+) is now (\S+)")
_ASKS = re.compile(r"COOP_ACCEPT\s+([A-Za-z0-9_-]+)")
_WORK = re.compile(r"coop todo report (\d+) --outcome")
# What a receiver's log says it did with a frame, by the words it starts with.
FATES = (
    ("hold (", "held"),
    ("held frame expired and was dropped", "hold-expired"),
    ("refuse (", "refused"),
    ("dropped: ", "dropped"),
    ("lost (", "lost"),
    ("released (", "released"),
)
# Fates that settle a frame as never entered: the receiver said so itself.
NEVER_ENTERED = frozenset({"hold-expired", "refused", "dropped", "lost"})
# Coop's verdicts that say the receiver does not have the envelope.
NOT_THERE = frozenset({"expired", "pending", "cancelled"})


@dataclass(frozen=True)
class ClaudeReceiver:
    """A Claude chat: its Mac, the conversation it started in, and where its files are."""

    name: str
    host: str
    session_id: str
    config_dir: Path
    frame_log: Path
    notes: Path


@dataclass(frozen=True)
class CodexReceiver:
    """A Codex thread: its Mac, its id, and its Codex home."""

    name: str
    host: str
    thread_id: str
    codex_home: Path


Receiver = ClaudeReceiver | CodexReceiver


@dataclass
class Records:
    """What one receiver's own files say, by envelope id."""

    ids: set[str] = field(default_factory=set)  # its conversation or thread ids
    entries: Counter[str] = field(default_factory=Counter)  # Coop's provenance only
    reads: Counter[str] = field(default_factory=Counter)  # lines its inbox read
    fates: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))
    asks: defaultdict[str, set[str]] = field(default_factory=lambda: defaultdict(set))


@dataclass
class Report:
    """The comparison: each list holds the envelope ids (or invitation keys) counted."""

    invitations: int = 0
    envelopes: int = 0
    receivers: int = 0
    false_receipts: list[str] = field(default_factory=list)
    false_losses: list[str] = field(default_factory=list)
    duplicates: list[str] = field(default_factory=list)
    holds_expired: list[str] = field(default_factory=list)
    unknowns_expired: list[str] = field(default_factory=list)
    unaddressed: list[str] = field(default_factory=list)  # for no receiver of the manifest
    states: Counter[str] = field(default_factory=Counter)
    settled: Counter[str] = field(default_factory=Counter)  # how expiries were settled

    def line(self) -> str:
        """`ORACLE invitations=N receivers=M false_receipts=0 ...`."""
        return (
            f"ORACLE invitations={self.invitations} receivers={self.receivers} "
            f"false_receipts={len(self.false_receipts)} false_losses={len(self.false_losses)} "
            f"duplicates={len(self.duplicates)} holds_expired={len(self.holds_expired)} "
            f"unknowns_expired={len(self.unknowns_expired)}"
        )

    def detail(self) -> str:
        """Envelopes by state, how each expiry was settled, and every id counted."""
        states = " ".join(f"{k}={v}" for k, v in sorted(self.states.items()))
        settled = " ".join(f"{k}={v}" for k, v in sorted(self.settled.items())) or "none"
        counted = {
            "false_receipts": self.false_receipts,
            "false_losses": self.false_losses,
            "duplicates": self.duplicates,
            "holds_expired": self.holds_expired,
            "unknowns_expired": self.unknowns_expired,
            "unaddressed": self.unaddressed,
        }
        named = " ".join(f"{k}={v}" for k, v in counted.items() if v)
        return (
            f"ORACLE-DETAIL envelopes={self.envelopes} {states}; expiries settled by: "
            f"{settled}" + (f"; {named}" if named else "")
        )

    @property
    def clean(self) -> bool:
        """Nothing counted, and every envelope was for a receiver the manifest names."""
        return not (
            self.false_receipts
            or self.false_losses
            or self.duplicates
            or self.holds_expired
            or self.unknowns_expired
            or self.unaddressed
        )


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    """Each whole line of a JSONL file that is a JSON object (a torn last line is not)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return
    for raw in data[: data.rfind(b"\n") + 1].splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            yield value


def _text(content: Any) -> str:
    """A message's words: a string, or the text of its parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text") or "") for part in content if isinstance(part, dict))
    return ""


def _coops(origin: Any) -> str | None:
    """The envelope id an origin names when it is exactly a peer frame from Coop."""
    if not isinstance(origin, dict) or origin.get("kind") != "peer":
        return None
    msg_id = origin.get("msg_id")
    return msg_id if origin.get("from") == SENDER and isinstance(msg_id, str) else None


def peer_entry(entry: dict[str, Any]) -> tuple[str, str] | None:
    """(envelope id, words) when a transcript entry is a peer entry of Coop's, in either
    shape, with its provenance whole; None for anything else."""
    if entry.get("type") == "user" and entry.get("isMeta") is True:
        msg_id = _coops(entry.get("origin"))
        message = entry.get("message")
        words = _text(message.get("content")) if isinstance(message, dict) else ""
        return (msg_id, words) if msg_id else None
    attachment = entry.get("attachment")
    if entry.get("type") != "attachment" or not isinstance(attachment, dict):
        return None
    if attachment.get("type") != "queued_command":
        return None
    if attachment.get("isMeta") is not True and entry.get("isMeta") is not True:
        return None
    msg_id = _coops(attachment.get("origin", entry.get("origin")))
    return (msg_id, _text(attachment.get("prompt"))) if msg_id else None


def _asked(records: Records, msg_id: str, words: str) -> None:
    """Note which invitation (its token) or which todo's work the entered words carry."""
    for token in set(_ASKS.findall(words)):
        records.asks[f"invitation {token}"].add(msg_id)
    for todo in set(_WORK.findall(words)):
        records.asks[f"work of todo #{todo}"].add(msg_id)


def read_claude(receiver: ClaudeReceiver) -> Records:
    """A Claude chat's transcripts, its log of frames and its inbox's log."""
    records = Records(ids={receiver.session_id})
    try:
        notes = receiver.notes.read_text(errors="replace").splitlines()
    except FileNotFoundError:
        notes = []
    for line in notes:
        if cleared := _CLEARED.search(line):
            records.ids.add(cleared.group(2))
        elif noted := _NOTE.search(line):
            msg_id, said = noted.groups()
            for words, fate in FATES:
                if said.startswith(words):
                    records.fates[msg_id].add(fate)
    for session_id in sorted(records.ids):
        for transcript in receiver.config_dir.glob(f"projects/*/{session_id}.jsonl"):
            for entry in _json_lines(transcript):
                found = peer_entry(entry)
                if found is not None:
                    records.entries[found[0]] += 1
                    _asked(records, *found)
    for frame in _json_lines(receiver.frame_log):
        msg_id = frame.get("msg_id")
        if isinstance(msg_id, str):
            records.reads[msg_id] += 1
    return records


def _rollouts(receiver: CodexReceiver) -> list[Path]:
    home = receiver.codex_home
    name = f"rollout-*-{receiver.thread_id}.jsonl"
    return sorted(home.glob(f"sessions/**/{name}")) + sorted(home.glob(f"archived_sessions/{name}"))


def read_codex(receiver: CodexReceiver) -> Records:
    """A Codex thread's rollouts: each `UserMessage` item's client id is an entry."""
    records = Records(ids={receiver.thread_id})
    for rollout in _rollouts(receiver):
        for line in _json_lines(rollout):
            payload = line.get("payload")
            if line.get("type") != "event_msg" or not isinstance(payload, dict):
                continue
            item = payload.get("item")
            if payload.get("type") != "item_completed" or not isinstance(item, dict):
                continue
            client_id = item.get("client_id")
            if item.get("type") == "UserMessage" and isinstance(client_id, str):
                records.entries[client_id] += 1
                _asked(records, client_id, _text(item.get("content")))
    return records


def read(receiver: Receiver) -> Records:
    """The receiver's own records."""
    if isinstance(receiver, ClaudeReceiver):
        return read_claude(receiver)
    return read_codex(receiver)


def _addressed(row: dict[str, Any], receivers: list[Receiver], records: list[Records]) -> int:
    """Which receiver an envelope was for (its index), by its door, Mac and chat; -1 for
    none. A Claude chat is any of its conversations, as Coop names it by the current."""
    door, _, native_id = str(row.get("session") or "").partition(":")
    kind = ClaudeReceiver if door == "claude" else CodexReceiver
    for index, receiver in enumerate(receivers):
        if isinstance(receiver, kind) and receiver.host == row.get("host"):
            if native_id in records[index].ids:
                return index
    return -1


def check(outbox: list[dict[str, Any]], receivers: list[Receiver]) -> Report:
    """Coop's printed verdicts (`coop outbox --json`) against the receivers' records."""
    records = [read(receiver) for receiver in receivers]
    entered: Counter[str] = sum((r.entries for r in records), Counter())
    reads: Counter[str] = sum((r.reads for r in records), Counter())
    report = Report(receivers=len(receivers), envelopes=len(outbox))
    for row in outbox:
        msg_id, state = str(row["id"]), str(row["state"])
        report.states[state] += 1
        report.invitations += row.get("kind") == "invitation"
        index = _addressed(row, receivers, records)
        if index < 0:
            report.unaddressed.append(msg_id)
            continue
        own = records[index]
        received = (row.get("facts") or {}).get("received") is not None or state == "delivered"
        if received and own.entries[msg_id] == 0:
            report.false_receipts.append(msg_id)
        if state in NOT_THERE and entered[msg_id] > 0:
            report.false_losses.append(msg_id)
        if entered[msg_id] > 1 or reads[msg_id] > 1:
            report.duplicates.append(msg_id)
        if state == "expired" and entered[msg_id] == 0:
            _judge_expiry(report, msg_id, own.fates.get(msg_id, set()))
    for own in records:
        for key, msg_ids in sorted(own.asks.items()):
            if len(msg_ids) > 1:
                report.duplicates.append(f"{key} ({', '.join(sorted(msg_ids))})")
    return report


def _judge_expiry(report: Report, msg_id: str, fates: set[str]) -> None:
    """An expiry stands only on the receiver's own words that the frame never entered."""
    if "held" in fates and "hold-expired" not in fates:
        report.holds_expired.append(msg_id)
    elif fates & NEVER_ENTERED:
        report.settled[",".join(sorted(fates & NEVER_ENTERED))] += 1
    else:
        report.unknowns_expired.append(msg_id)


def receiver_from_json(data: dict[str, Any]) -> Receiver:
    """One receiver of a manifest: `{"kind": "claude", "name", "host", "session_id",
    "config_dir", "frame_log", "notes"}` or `{"kind": "codex", "name", "host",
    "thread_id", "codex_home"}`."""
    if data["kind"] == "claude":
        return ClaudeReceiver(
            data["name"],
            data["host"],
            data["session_id"],
            Path(data["config_dir"]),
            Path(data["frame_log"]),
            Path(data["notes"]),
        )
    return CodexReceiver(data["name"], data["host"], data["thread_id"], Path(data["codex_home"]))


def receiver_to_json(receiver: Receiver) -> dict[str, Any]:
    """The manifest's form of a receiver (receiver_from_json reads it back)."""
    if isinstance(receiver, ClaudeReceiver):
        return {
            "kind": "claude",
            "name": receiver.name,
            "host": receiver.host,
            "session_id": receiver.session_id,
            "config_dir": str(receiver.config_dir),
            "frame_log": str(receiver.frame_log),
            "notes": str(receiver.notes),
        }
    return {
        "kind": "codex",
        "name": receiver.name,
        "host": receiver.host,
        "thread_id": receiver.thread_id,
        "codex_home": str(receiver.codex_home),
    }


def main(argv: list[str] | None = None) -> int:
    """Print the summary and the detail; exit 1 when anything was counted."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", required=True, type=Path, help="JSON: {receivers: [...]}")
    parser.add_argument("--outbox", required=True, type=Path, help="`coop outbox --json`")
    args = parser.parse_args(argv)
    manifest = json.loads(args.manifest.read_text())
    receivers = [receiver_from_json(r) for r in manifest["receivers"]]
    report = check(json.loads(args.outbox.read_text()), receivers)
    print(report.line())
    print(report.detail())
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main())
