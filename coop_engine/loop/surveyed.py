"""One Mac as its last survey saw it, in front of the Mac itself.

A pass asks each Mac one `survey` (hosts/mac/survey.py) and then works from its answer:
the registry as it stood (`live_entry`, the verdict's and the statuses' reading) and
each in-flight envelope's sightings (answering the door's transcript read from where the
envelope's reading stands). Every other request, and any read the survey did not
answer, goes to the Mac: a send's readings and its third read are always fresh (seed
000), as is the verdict's re-read of a transcript from the send's offset. Each sighting
answers one read, once.

The readings the pass's first send will ask before its intent may ride with the survey,
in the same write (`ahead`): one round trip less on the way to a frame. They are that
send's own readings, each made on the Mac in turn after the survey, and they answer
only that send's asking of exactly those reads, once, and only while nothing else was
asked of the Mac since: a request gone to the Mac in between (a frame written, another
read) drops them, and the send asks afresh.
"""

from __future__ import annotations

from typing import Any

from coop_engine import identity
from hosts.mac.host import Host

Reading = tuple[str, str, int, tuple[str, ...], Any]
Request = tuple[str, dict[str, Any]]  # an operation and its arguments, as read_together takes
SCANS = {"claude": "transcript_scan", "codex": "rollout_scan"}  # a door's read, by vendor


def reading(op: str, session_id: str, offset: int, needles: list[str], inode: Any) -> Reading:
    """What identifies one read of a transcript (or a rollout): the operation, the
    session, the offset, the needles."""
    return (op, session_id, int(offset), tuple(sorted(needles)), inode)


class Surveyed(Host):
    def __init__(self, host: Host) -> None:
        self.name = host.name
        self.host = host
        self.cursor: str | None = None  # the Mac's cursor for "what changed since"
        self.entries: dict[str, dict[str, Any]] = {}  # registry key -> the chat as last told
        self.watching: dict[str, Any] | None = None  # what the long-poll watches, and its digest
        self.more = False  # the Mac left sightings for another survey
        self.codex_digest = ""
        self.codex_list: list[dict[str, Any]] | None = None
        self.long_poll: str | None = None  # the name of the office's long-poll, when one runs
        self.surveys = 0  # answers taken, so a long-poll can tell a newer survey came
        self.queue: dict[str, dict[str, Any]] = {}  # Codex envelope -> its queue rows, open
        self._sightings: dict[Reading, dict[str, Any] | None] = {}
        self._processes: identity.Processes | None = None  # of `live()`, read once a survey
        self._ahead: list[tuple[Request, Any]] = []  # reads asked with the survey, answered

    def take(
        self,
        envelopes: list[dict[str, Any]],
        codex: bool = False,
        ahead: list[Request] | None = None,
    ) -> None:
        """Survey the Mac for these in-flight envelopes (`{id, session_id, offset, inode,
        needles}`) and keep what it answered; with `ahead`, reads asked in the same round
        trip, after the survey, kept for the one asking of them that follows. HostError
        when the Mac cannot be asked."""
        self._ahead = []
        asked: dict[str, Any] = {
            "since": self.cursor,
            "envelopes": envelopes,
            "codex": self.codex_digest if codex else None,
            "long_poll": self.long_poll,
        }
        if ahead:
            answer, *readings = self.host.read_together([("survey", asked), *ahead])
            if isinstance(answer, Exception):
                raise answer
        else:
            answer, readings = self.host.survey(**asked), []
        if answer["full"]:
            self.entries = {}
        for key in answer["gone"]:
            self.entries.pop(key, None)
        for chat in answer["chats"]:
            self.entries[str(chat["pid"])] = chat
        self._processes = None
        self.cursor = answer["cursor"]
        self.watching = answer["watch"]
        self.more = bool(answer["more"])
        found = answer["sightings"]
        self._sightings = {
            reading(
                SCANS[e.get("vendor", "claude")],
                e["session_id"],
                e["offset"],
                e["needles"],
                e.get("inode"),
            ): found[e["id"]]
            for e in envelopes
            if e["id"] in found
        }
        self.queue = answer.get("queue") or {}
        self.surveys += 1
        changes = answer.get("codex")
        if changes is not None:
            self.codex_digest = changes["digest"]
            if changes["threads"] is not None:
                self.codex_list = changes["threads"]["threads"]
        self._ahead = list(zip(ahead or [], readings, strict=True))

    def chat_entry(self, enrollment: Any) -> dict[str, Any] | None:
        """The registry entry of the live process that is this enrollment's chat, as
        surveyed (coop_engine/identity.py), or None."""
        found = identity.match_among(enrollment, self.processes())
        return None if found is None else dict(found.entry)

    def live(self) -> list[dict[str, Any]]:
        """The registry entries of the live chats, as surveyed."""
        return [chat["entry"] for chat in self.entries.values() if chat["live"]]

    def processes(self) -> identity.Processes:
        """The live chats' entries with their processes (identity.processes), read once
        for each survey however many enrollments are matched against them."""
        if self._processes is None:
            self._processes = identity.processes(self.live())
        return self._processes

    def call(self, op: str, **args: Any) -> Any:
        if op in SCANS.values():
            session_id = str(args.get("session_id") or args.get("thread_id"))
            key = reading(op, session_id, args["offset"], args["needles"], args.get("inode"))
            if key in self._sightings:
                chunk = self._sightings.pop(key)
                return chunk if chunk is not None else _nothing_yet(args["offset"], key[4])
        self._ahead = []  # anything else asked of the Mac: what rode with the survey is old
        return self.host.call(op, **args)

    def read_together(self, requests: list[Request]) -> list[Any]:
        ahead, self._ahead = self._ahead, []
        if ahead and [request for request, _ in ahead] == requests:
            return [answer for _, answer in ahead]  # asked with the survey, for this asking
        if any(op in SCANS.values() for op, _ in requests):
            return super().read_together(requests)  # each scan answered from the survey, once
        return self.host.read_together(requests)

    def long_poller(self) -> Host:
        return self.host.long_poller()

    def close(self) -> None:
        self.host.close()


def _nothing_yet(offset: int, inode: Any) -> dict[str, Any]:
    """A read the Mac left for its next survey: nothing seen, nothing passed over."""
    return {
        "path": None,
        "start": offset,
        "end": offset,
        "size": offset,
        "inode": inode,
        "rotated": False,
        "lines": [],
    }
