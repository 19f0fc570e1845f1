"""The chats as the app knows them: the ledger's enrollments joined to what each Mac's
survey shows now (its live Claude chats and its Codex threads), and the one way the app
names a chat: its name (or its folder) beside its short id, as `coop chats` prints it.

Short ids are the shortest unique prefixes of the ids the chats pane lists (at least 8
characters): Codex thread ids are time-ordered, so two threads made the same minute share
their first eight characters, and theirs grow until they differ (coop_engine/naming.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from coop_engine.naming import SHORT_ID, codeman, label, short_ids

CODEX_ROUTE = "codex queue"  # where a Codex thread's messages go: Codex's own queue
# A chat a Mac shows that no enrollment names yet (its mode shown as `live`).
UNENROLLED: dict[str, Any] = {"mode": None, "generation": None, "id": None, "live": True}


def chat_key(host: str, vendor: str, native_id: str) -> str:
    """A chats pane row's key: the Mac, the door and the chat's own id."""
    return f"{host}/{vendor}:{native_id}"


def shown_id(vendor: str | None, short: str) -> str:
    """A chat's short id as the tables print it: a Codex thread's with its door
    (`codex:01a2322c`), so it reads back into `coop invite --session codex:...`."""
    return short if vendor in (None, "", "claude") else f"{vendor}:{short}"


def called(name: str, vendor: str | None, short: str) -> str:
    """A chat in a sentence: `importer (1a2b3c4d)`, `ship it (codex:01a2322c9)`; a chat
    with neither name nor folder is its id alone, one of no known id its name alone."""
    if not short:
        return name
    if not name or short.startswith(name):
        return shown_id(vendor, short)
    return f"{name} ({shown_id(vendor, short)})"


def short_of(native_id: str, shorts: Mapping[str, str]) -> str:
    """The chat's short id among those listed, or its first characters when it is not
    listed (yet)."""
    return shorts.get(native_id) or native_id[:SHORT_ID]


def thread_prediction(thread: Mapping[str, Any]) -> dict[str, Any]:
    """A Codex thread's route, as the Codex door records it at send: queued in Codex's
    queue, and when it will run (the thread open or saved)."""
    return {
        "verdict": "queued",
        "source": CODEX_ROUTE,
        "open": thread.get("status") == "open",
        "expect": thread.get("inbound"),
    }


def _live_claude(host: str, chat: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "host": host,
        "vendor": "claude",
        "native_id": chat["session_id"],
        "name": chat.get("name"),
        "cwd": chat.get("cwd"),
        "pid": chat.get("pid"),
        "status": chat.get("status"),
        "tmux": chat.get("tmux"),
        "inbound": chat.get("inbound"),
    }


def _live_thread(host: str, thread: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "host": host,
        "vendor": "codex",
        "native_id": thread["session_id"],
        "name": thread.get("name"),
        "cwd": thread.get("cwd"),
        "pid": None,
        "status": thread.get("status"),
        "tmux": None,
        "inbound": thread_prediction(thread),
    }


def live_chats(surveys: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every chat a Mac's last survey shows as there now, by row key: its live Claude
    chats and its Codex threads (open or saved; archived ones are not listed)."""
    live: dict[str, dict[str, Any]] = {}
    for host, survey in surveys.items():
        for chat in survey.get("chats", []):
            if chat.get("live"):
                live[chat_key(host, "claude", chat["session_id"])] = _live_claude(host, chat)
        for thread in survey.get("threads", []):
            live[chat_key(host, "codex", thread["session_id"])] = _live_thread(host, thread)
    return live


def _named(row: dict[str, Any]) -> dict[str, Any]:
    """The row with what it is called (its label) and its Codeman session."""
    row["label"] = label(row.get("name"), row.get("cwd"), row["native_id"])
    row["codeman"] = codeman(row.get("tmux"))
    return row


def merge_live(
    sessions: Iterable[dict[str, Any]], surveys: Mapping[str, Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Ledger sessions joined to what the Macs show now, then the chats no enrollment
    names yet (mode None: shown as `live`): one row per chat, each with its label, its
    Codeman session, its short id (`short`) among all of them, and whether a Mac shows
    it now (`live`: a live Claude chat, a Codex thread open or saved)."""
    live = live_chats(surveys)
    rows = []
    for session in sessions:
        row = dict(session)
        seen = live.pop(chat_key(row["host"], row["vendor"], row["native_id"]), None)
        row["live"] = seen is not None
        if seen is not None:
            row.update(
                pid=seen["pid"],
                status=seen["status"],
                tmux=seen["tmux"] or row.get("tmux"),
                inbound=seen["inbound"],
                name=row.get("name") or seen["name"],
                cwd=row.get("cwd") or seen["cwd"],
            )
        rows.append(_named(row))
    for _, seen in sorted(live.items()):
        rows.append(_named({**seen, **UNENROLLED, "todos": []}))
    shorts = short_ids(row["native_id"] for row in rows)
    for row in rows:
        row["short"] = shorts[row["native_id"]]
    return rows


# --- what the rest of the app calls a chat ------------------------------------------------


@dataclass(frozen=True)
class Called:
    """A chat as the app names it: its label (name, else folder, else the start of its
    id), its door and its short id."""

    name: str
    vendor: str | None
    short: str

    @property
    def ref(self) -> str:
        """The short id as a table's SESSION column shows it, with its door
        (`claude:1a2b3c4d`), as `coop outbox` prints it."""
        return f"{self.vendor}:{self.short}" if self.vendor else self.short

    @property
    def words(self) -> str:
        """In a sentence: `importer (1a2b3c4d)`, `ship it (codex:01a2322c9)`."""
        return called(self.name, self.vendor, self.short)


def place_name(session: Mapping[str, Any]) -> str:
    """What the ledger's notices call a session (queries.status.place): its name, else
    its `vendor:id`."""
    return str(session.get("name") or f"{session['vendor']}:{session['native_id']}")


class Directory:
    """The chats pane's rows, looked up the ways the rest of the app names a chat: a
    session (an enrollment, a chats pane row), an envelope's chat, the chat a notice or
    an alert names. Short ids are the chats pane's, so every pane agrees."""

    def __init__(self, rows: Iterable[dict[str, Any]] = ()) -> None:
        self.rows = list(rows)
        self.shorts = {row["native_id"]: row["short"] for row in self.rows if row.get("short")}
        self.by_session = {row["id"]: row for row in self.rows if row.get("id") is not None}
        self._by_place: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for row in self.by_session.values():
            self._by_place.setdefault((place_name(row), row["host"]), []).append(row)

    def short(self, native_id: str) -> str:
        return short_of(native_id, self.shorts)

    def _called(self, said: Any, session_id: Any, vendor: str | None, native_id: str) -> Called:
        """The label a ledger row gives the chat, unless it is only the start of its id
        (no name, no folder recorded): then the chats pane's, which may have the name
        its Mac shows now."""
        name = str(said or "")
        if not name or native_id.startswith(name):
            name = str(self.by_session.get(session_id, {}).get("label") or name)
        return Called(name or native_id[:SHORT_ID], vendor or None, self.short(native_id))

    def session(self, session: Mapping[str, Any]) -> Called:
        """A chats pane row or a ledger session (`queries.session`)."""
        native_id = str(session["native_id"])
        return self._called(
            session.get("label"), session.get("id"), session.get("vendor"), native_id
        )

    def envelope(self, envelope: Mapping[str, Any]) -> Called:
        """An envelope's chat, its label as the envelope's row gives it (as `coop outbox`
        prints it)."""
        vendor, _, native_id = str(envelope["session"]).rpartition(":")
        said = envelope.get("session_name")
        return self._called(said, envelope.get("session_id"), vendor, native_id)

    def place(self, place: Mapping[str, Any], envelopes: Mapping[str, Any]) -> Called | None:
        """The chat a notice or an alert names (`chat`, `mac`, `outbox` as
        queries.status.place gives them); None when it names none. Its envelope, when
        the outbox shows it, says which enrollment; else what the notice calls it on that
        Mac, when only one enrollment is called so."""
        envelope = envelopes.get(str(place.get("outbox")))
        if envelope is not None:
            return self.envelope(envelope)
        said = place.get("chat")
        if not said:
            return None
        found = self._by_place.get((str(said), str(place.get("mac"))), [])
        if len(found) == 1:
            return self.session(found[0])
        vendor, _, native_id = str(said).partition(":")
        if vendor in ("claude", "codex") and native_id:
            return Called(native_id[:SHORT_ID], vendor, self.short(native_id))
        return Called(str(said), None, "")
