"""Comparing what two receivers wrote, by shape: the simulator against the real chat.

A transcript is reduced to the entries Coop reads (``kind``), in file order, without
the tool calls no frame arrived during (``shaped``); each is compared with the
entry at the same place on the other side by its keys (values may differ) and the keys
of the objects inside it Coop reads. Id rules (which ids equal Coop's id, which are
minted, which must equal each other) and the wording of notices are reduced to facts
and templates and compared whole. Registries are compared by keys, key order, value
types, and status. ``differences(real, sim)`` lists every mismatch in words.

The real chat's bookkeeping records that Coop never reads are left out on both sides:
``BOOKKEEPING`` types and attachments other than ``queued_command``. The simulator must
not write any entry type the real chat does not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

Entry = dict[str, Any]

BOOKKEEPING = {
    "mode",
    "permission-mode",
    "atis-latch",
    "tools-used",
    "last-prompt",
    "file-history-snapshot",
    "cost-state",
    "api-request-shape",
    "api-request-blob",
    "api-request",
}
# Keys the real chat writes on some entries of a kind and not others.
# `verifiedPeerProcStart` is the sender's start time, read when the chat takes the frame:
# a sender that has exited by then (a `coop tick` that wrote and left) has none
# (OBSERVED.md 3). Coop does not read it.
VARIABLE_KEYS = {"serverClassifierRequest", "verifiedPeerProcStart"}
# Objects inside an entry whose keys are compared too.
NESTED = (
    ("message",),
    ("origin",),
    ("turnPosition",),
    ("toolUseResult",),
    ("permissionDecision",),
    ("attachment",),
    ("attachment", "origin"),
)
TOOL_CALL = ("assistant:tool_use", "user:tool_result")
BETWEEN_CALLS = ("queue:enqueue", "assistant:tool_use")
# tmux is there only when the chat runs inside tmux (the real ones here always do).
REGISTRY_OPTIONAL = {"tmux"}
NOTICE_KINDS = (
    ("Held peer message", "held"),
    ("Released ", "released"),
    ("Dropped a peer message", "dropped"),
)


def _content(entry: Entry) -> Any:
    message = entry.get("message")
    return message.get("content") if isinstance(message, dict) else None


def kind(entry: Entry) -> str | None:
    """What an entry is to Coop, or None for the bookkeeping it never reads."""
    kind_ = entry.get("type")
    if kind_ in BOOKKEEPING:
        return None
    if kind_ == "attachment":
        attachment = entry.get("attachment") or {}
        return "attachment:queued_command" if attachment.get("type") == "queued_command" else None
    if kind_ == "queue-operation":
        return f"queue:{entry.get('operation')}"
    if kind_ == "user":
        content = _content(entry)
        if isinstance(content, list):
            return "user:tool_result"
        origin = entry.get("origin") or {}
        return "user:peer" if origin.get("kind") == "peer" else "user:typed"
    if kind_ == "assistant":
        blocks = _content(entry) or []
        tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
        return "assistant:tool_use" if tools else "assistant:text"
    if kind_ == "system":
        if entry.get("subtype") == "informational":
            content = str(entry.get("content") or "")
            for prefix, name in NOTICE_KINDS:
                if content.startswith(prefix):
                    return f"notice:{name}"
            return "notice:other"
        return f"system:{entry.get('subtype')}"
    return f"other:{kind_}"


def shaped(entries: Iterable[Entry]) -> list[tuple[str, Entry]]:
    """The entries Coop reads, without the tool calls nothing happened during (a
    tool_use followed at once by its tool_result): how many there are, and during which
    one a frame lands, is the model's and the clock's choice. A call a frame arrived
    during stays, with what it wrote in between. A frame that lands between two calls,
    while the model chooses the next one, is taken as landing during that next call:
    the chat absorbs it at the same place, and which of the two moments it hit is the
    clock's choice too (seen in the real chat's busy turn on a loaded machine)."""
    kept = [(k, e) for e in entries if (k := kind(e)) is not None]
    for index in range(len(kept) - 1):
        if (kept[index][0], kept[index + 1][0]) == BETWEEN_CALLS:
            kept[index], kept[index + 1] = kept[index + 1], kept[index]
    out: list[tuple[str, Entry]] = []
    index = 0
    while index < len(kept):
        if tuple(k for k, _ in kept[index : index + 2]) == TOOL_CALL:
            index += 2
            continue
        out.append(kept[index])
        index += 1
    return out


def _keys(value: Any) -> list[str] | None:
    return sorted(set(value) - VARIABLE_KEYS) if isinstance(value, dict) else None


def _at(entry: Entry, path: tuple[str, ...]) -> Any:
    value: Any = entry
    for step in path:
        value = value.get(step) if isinstance(value, dict) else None
    return value


def entry_shape(entry: Entry) -> dict[str, Any]:
    """An entry's keys and the keys of the objects inside it that Coop reads."""
    shape: dict[str, Any] = {"keys": _keys(entry)}
    for path in NESTED:
        keys = _keys(_at(entry, path))
        if keys is not None:
            shape[".".join(path)] = keys
    content = _content(entry)
    if isinstance(content, list):
        shape["content"] = sorted({k for b in content if isinstance(b, dict) for k in b})
    return shape


def notice_template(content: str) -> str:
    """A notice with what varies taken out: quoted previews, numbers, plurals."""
    text = re.sub(r"\u00ab.*?\u00bb", "\u00abP\u00bb", content, flags=re.S)
    text = re.sub(r"\d+", "N", text)
    return re.sub(r"\b(line|message)s\b", r"\1", text)


def _first(entries: list[Entry], match: Any) -> Entry | None:
    return next((e for e in entries if match(e)), None)


def envelope_facts(entries: list[Entry], msg_id: str, text: str) -> dict[str, Any]:
    """The id rules and wording around one frame, as facts that hold on either side."""

    def names(entry: Entry) -> bool:
        origin = entry.get("origin") or (entry.get("attachment") or {}).get("origin") or {}
        return origin.get("msg_id") == msg_id

    sightings = [e for e in entries if names(e)]
    facts: dict[str, Any] = {"sightings": [kind(e) for e in sightings]}
    enqueue = _first(
        entries, lambda e: e.get("operation") == "enqueue" and e.get("content") == text
    )
    facts["enqueue records the raw text, no id"] = enqueue is not None and set(enqueue) == {
        "type",
        "operation",
        "timestamp",
        "sessionId",
        "content",
    }
    for entry in sightings:
        origin = entry.get("origin") or entry["attachment"]["origin"]
        facts[f"{kind(entry)} origin"] = {
            "keys": sorted(set(origin) - VARIABLE_KEYS),
            "kind": origin.get("kind"),
            "from": origin.get("from"),
        }
        if entry.get("type") == "user":
            facts["user.uuid is Coop's id"] = entry.get("uuid") == msg_id
            facts["user.isMeta"] = entry.get("isMeta")
            facts["user content"] = str(_content(entry)).replace(text, "<TEXT>")
            continue
        attachment = entry["attachment"]
        source = attachment.get("source_uuid")
        removes = [e for e in entries if e.get("operation") == "remove"]
        remove = next((e for e in removes if e.get("commandUuid") == source), None)
        facts["attachment"] = {
            "top-level isMeta": entry.get("isMeta"),
            "attachment.isMeta": attachment.get("isMeta"),
            "source_uuid is Coop's id": attachment.get("source_uuid") == msg_id,
            "remove names source_uuid": remove is not None,
            "remove reason": (remove or {}).get("reason"),
            "remove.deliveryId is delivery_id": (remove or {}).get("deliveryId")
            == attachment.get("delivery_id"),
            "remove.content is the text": (remove or {}).get("content") == text,
            "prompt is the text": attachment.get("prompt") == text,
            "timestamps are the enqueue time": entry.get("timestamp")
            == attachment.get("timestamp"),
            "rendered": [
                str(r.get("content")).replace(text, "<TEXT>") for r in entry.get("rendered") or []
            ],
            "renderedRole": entry.get("renderedRole"),
        }
    return facts


def chain_problems(entries: list[Entry]) -> list[str]:
    """Chained entries must name an earlier entry (or none) as parent; uuids are unique."""
    seen: set[str] = set()
    problems = []
    for index, entry in enumerate(entries):
        if "parentUuid" not in entry:
            continue
        parent = entry.get("parentUuid")
        if parent is not None and parent not in seen:
            problems.append(f"entry {index} ({kind(entry)}): parentUuid names no earlier entry")
        uuid = entry.get("uuid")
        if uuid in seen:
            problems.append(f"entry {index} ({kind(entry)}): uuid {uuid} repeats")
        seen.add(str(uuid))
    return problems


def transcript_differences(real: list[Entry], sim: list[Entry]) -> list[str]:
    out: list[str] = []
    real_types = {str(e.get("type")) for e in real}
    extra = sorted({str(e.get("type")) for e in sim} - real_types)
    if extra:
        out.append(f"the simulator writes entry types the real chat does not: {extra}")
    head = [str(e.get("type")) for e in real[:2]], [str(e.get("type")) for e in sim[:2]]
    if head[0] != head[1]:
        out.append(f"first records: real {head[0]}, simulator {head[1]}")
    real_shaped, sim_shaped = shaped(real), shaped(sim)
    real_kinds = [k for k, _ in real_shaped]
    sim_kinds = [k for k, _ in sim_shaped]
    if real_kinds != sim_kinds:
        out.append(f"entry order differs:\n  real: {real_kinds}\n  sim:  {sim_kinds}")
        return out
    for index, ((name, r), (_, s)) in enumerate(zip(real_shaped, sim_shaped, strict=True)):
        real_shape, sim_shape = entry_shape(r), entry_shape(s)
        for part in sorted(set(real_shape) | set(sim_shape)):
            if real_shape.get(part) != sim_shape.get(part):
                out.append(
                    f"{name} #{index} {part}: real {real_shape.get(part)}, "
                    f"simulator {sim_shape.get(part)}"
                )
        if name.startswith("notice:"):
            rt, st = notice_template(r["content"]), notice_template(s["content"])
            if rt != st:
                out.append(f"{name} #{index} wording:\n  real: {rt}\n  sim:  {st}")
    for label, entries in (("real", real), ("simulator", sim)):
        out += [f"{label}: {p}" for p in chain_problems(entries)]
    return out


def facts_differences(
    real: list[Entry],
    sim: list[Entry],
    real_envelopes: list[tuple[str, str]],
    sim_envelopes: list[tuple[str, str]],
) -> list[str]:
    out = []
    for index, ((rid, rtext), (sid, stext)) in enumerate(
        zip(real_envelopes, sim_envelopes, strict=True)
    ):
        rf, sf = envelope_facts(real, rid, rtext), envelope_facts(sim, sid, stext)
        for key in sorted(set(rf) | set(sf)):
            if rf.get(key) != sf.get(key):
                out.append(
                    f"envelope {index}: {key}: real {rf.get(key)!r}, simulator {sf.get(key)!r}"
                )
    return out


def registry_shape(entry: Entry | None) -> Any:
    if entry is None:
        return None
    keys = [k for k in entry if k not in REGISTRY_OPTIONAL]
    return {
        "keys": keys,
        "types": {k: type(entry[k]).__name__ for k in keys},
        "status": entry.get("status"),
        "waitingFor": entry.get("waitingFor"),
    }


def registry_differences(real: dict[str, Entry | None], sim: dict[str, Entry | None]) -> list[str]:
    out = []
    for label in sorted(set(real) | set(sim)):
        rs, ss = registry_shape(real.get(label)), registry_shape(sim.get(label))
        if rs == ss:
            continue
        if rs is None or ss is None:
            out.append(f"registry {label}: real {rs}, simulator {ss}")
            continue
        for part in ("keys", "types", "status", "waitingFor"):
            if rs[part] != ss[part]:
                out.append(f"registry {label} {part}: real {rs[part]}, simulator {ss[part]}")
    return out
