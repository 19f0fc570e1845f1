"""How people name chats: by the name a chat shows, by the short id a listing prints,
and by the Codeman session a worker's tmux pane belongs to. One of each, for both faces.

A chat is shown as its name (the registry's `name`, a Codex thread's name, else its
folder) beside its short id. A short id is the shortest unique prefix of the ids listed
together, at least `SHORT_ID` characters, the way git abbreviates: Codex thread ids are
time-ordered UUIDs whose first eight characters collide, so theirs grow until they differ.
Whatever a listing prints is accepted back by `resolve`.
"""

from __future__ import annotations

import re

from coop_engine.errors import Ambiguous, NotFound, shown

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from typing import Any

SHORT_ID = 8
MIN_PREFIX = 4
VENDORS = ("claude", "codex")
CANDIDATES_SHOWN = 5
_CODEMAN = re.compile(r"codeman-(?:(dkr|ssh)-)?([0-9a-f]{8})(?=[:.]|$)")
CODEMAN_KINDS = {None: "local", "dkr": "docker", "ssh": "ssh"}


def label(name: object, cwd: object, native_id: object = None) -> str:
    """What a chat is called: its name, else the last part of its folder, else the start
    of its id. Whatever a registry holds there (a number, a list), the answer is text."""
    if isinstance(name, str) and name:
        return name
    folder = cwd.rstrip("/").rsplit("/", 1)[-1] if isinstance(cwd, str) else ""
    if folder:
        return folder
    return (native_id if isinstance(native_id, str) else "")[:SHORT_ID] or "-"


def short_ids(ids: Iterable[str], minimum: int = SHORT_ID) -> dict[str, str]:
    """Each id's shortest prefix, at least `minimum` long, that no other id of the set
    starts with; a prefix never ends at a hyphen."""
    unique = sorted(set(ids))
    # In sorted order an id shares the most with a neighbour: what each shares with the
    # next one, counted once for both.
    with_next = [_common(a, b) for a, b in zip(unique, unique[1:], strict=False)] + [0]
    shorts: dict[str, str] = {}
    for index, full in enumerate(unique):
        shared = max(with_next[index], with_next[index - 1] if index else 0)
        size = max(minimum, shared + 1)
        while size < len(full) and full[size - 1] == "-":
            size += 1
        shorts[full] = full[:size]
    return shorts


def _common(a: str, b: str) -> int:
    size = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        size += 1
    return size


def codeman(tmux: object) -> dict[str, str] | None:
    """The Codeman session a chat's tmux pane names (`codeman-<id8>`, Codeman's own
    workers), or None. Docker (`codeman-dkr-`) and remote (`codeman-ssh-`) workers are
    told apart: they live in another registry than the one that listed the pane."""
    if not isinstance(tmux, str):
        return None
    found = _CODEMAN.match(tmux)
    if found is None:
        return None
    kind = CODEMAN_KINDS[found[1]]
    return {
        "id8": found[2],
        "kind": kind,
        "session": found[0],
        "registry": "this" if kind == "local" else "another",
    }


# --- addressing a chat as it is shown --------------------------------------------------------


def chat_ref(chat: Mapping[str, Any]) -> str:
    return f"{chat['vendor']}:{chat['session_id']}"


def resolve(text: str, chats: Sequence[Mapping[str, Any]], what: str = "chat") -> Mapping[str, Any]:
    """The one chat of `chats` (rows with vendor, session_id, name, host; `live` when
    known) that `text` names: its whole id, the short id a listing printed, any unique
    prefix of at least MIN_PREFIX characters, or a name exactly one live chat has;
    `claude:` or `codex:` may lead. Several: Ambiguous, listing them; none: NotFound."""
    wanted = text.strip()
    vendor, _, rest = wanted.partition(":")
    if rest and vendor.lower() in VENDORS:
        wanted = rest.strip()
        pool = [c for c in chats if c["vendor"] == vendor.lower()]
    else:
        pool = list(chats)
    if not wanted:
        raise NotFound(f"No {what} {shown(text)!r}")
    by_id = [c for c in pool if str(c["session_id"]) == wanted.lower()]
    if not by_id and len(wanted) >= MIN_PREFIX:
        by_id = [c for c in pool if str(c["session_id"]).startswith(wanted.lower())]
    by_name = [c for c in pool if c.get("name") == wanted and c.get("live", True)]
    found = _distinct([*by_id, *by_name])
    if len(found) == 1:
        return found[0]
    if found:
        raise Ambiguous(ambiguity(text, found, what))
    if len(wanted) < MIN_PREFIX:
        raise NotFound(
            f"No {what} named {shown(text)!r}; an id needs at least {MIN_PREFIX} characters"
        )
    raise NotFound(f"No {what} {shown(text)!r}")


def _distinct(chats: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    seen: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for chat in chats:
        seen.setdefault((chat["vendor"], chat["session_id"], chat.get("host")), chat)
    return list(seen.values())


def ambiguity(text: str, found: Sequence[Mapping[str, Any]], what: str = "chat") -> str:
    """One line naming the candidates a reference matched."""
    shorts = short_ids(str(c["session_id"]) for c in found)

    def candidate(chat: Mapping[str, Any]) -> str:
        native_id = str(chat["session_id"])
        where = f" on {chat['host']}" if chat.get("host") else ""
        called = label(chat.get("name"), chat.get("cwd"), native_id)
        return f"{chat['vendor']}:{shorts[native_id]} ({called}{where})"

    listed = ", ".join(candidate(chat) for chat in found[:CANDIDATES_SHOWN])
    more = f" and {len(found) - CANDIDATES_SHOWN} more" if len(found) > CANDIDATES_SHOWN else ""
    one_chat = len({(c["vendor"], c["session_id"]) for c in found}) == 1
    hint = "pass --host" if one_chat else "give more of the id"
    return f"{shown(text)!r} names {len(found)} {what}s: {listed}{more}; {hint}"
