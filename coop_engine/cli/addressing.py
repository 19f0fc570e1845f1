"""Addressing a chat as the CLI shows it (coop_engine/naming.py holds the rules): the
chats a reference is looked up among, and how a chat is shown in a line.

A whole `claude:<UUID>` or `codex:<UUID>` is never looked up: the commands take it as
they always did. Anything else (a short id, the start of an id, a name) is resolved
against the chats `coop chats` lists, each named by its label, the NAME it shows.
"""

from __future__ import annotations

from coop_engine.errors import Ambiguous, NotFound
from coop_engine.naming import label, resolve, short_ids

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Mapping, Sequence
    from typing import Any

    Chat = Mapping[str, Any]


def live_pool(rows: Iterable[Chat]) -> list[dict[str, Any]]:
    """`coop chats` rows as `naming.resolve` reads them, each named by its label."""
    return [
        {
            "vendor": row["vendor"],
            "session_id": row["session_id"],
            "name": row.get("label") or label(row.get("name"), row.get("cwd"), row["session_id"]),
            "host": row["host"],
            "cwd": row.get("cwd"),
            "live": True,
        }
        for row in rows
    ]


def ledger_pool(sessions: Iterable[Chat]) -> list[dict[str, Any]]:
    """The ledger's sessions (`coop sessions` rows) as `naming.resolve` reads them: not
    live, so a name alone never picks one, while its id does."""
    return [
        {
            "vendor": row["vendor"],
            "session_id": row["native_id"],
            "name": row["label"],
            "host": row["host"],
            "cwd": row.get("cwd"),
            "live": False,
        }
        for row in sessions
    ]


def resolve_chat(text: str, pool: Sequence[Chat], asked: Callable[[], str]) -> Chat:
    """The one chat of `pool` that `text` names. Several: Ambiguous (exit 2), listing
    them. None: NotFound, saying which Macs were asked (`asked()`, worded only then)."""
    try:
        return resolve(text, pool)
    except Ambiguous:
        raise
    except NotFound as missing:
        raise NotFound(f"{missing} (asked: {asked()})") from None


def asked_line(names: Iterable[str], failed: Iterable[tuple[str, str]]) -> str:
    """`office, laptop; laptop could not be asked (timed out)`: the Macs a lookup asked."""
    line = ", ".join(names) or "no Mac"
    return line + "".join(f"; {host} could not be asked ({cause})" for host, cause in failed)


def shown_chat(chat: Chat, pool: Iterable[Chat] = ()) -> str:
    """A chat in a line: `reviewer-7 (claude:abcd1111)`, its short id unique among `pool`."""
    native_id = str(chat["session_id"])
    shorts = short_ids([native_id, *(str(other["session_id"]) for other in pool)])
    called = chat.get("name") or label(None, chat.get("cwd"), native_id)
    return f"{called} ({chat['vendor']}:{shorts[native_id]})"
