"""The adoption pass (seed 003): find the chat behind each CLI take and enroll it.

CLI takers are observed compatibility rows with an active binding younger than 48 h.
At most five are considered per pass, each at most once every ten minutes. Each is
looked for one Mac at a time: the declared host, then the office, then the other Macs,
reachable ones first (seed 003: "online ones first"): as the coordinator last found them
in `coop serve`, else as each answers a health request asked of all at once when the
pass starts (`coop adopt --once`, the app). The first Mac that has the id answers:
several matches there is a conflict, exactly one is adopted, none anywhere is "not
found" (tried again later).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from coop_engine.engine import Engine
from coop_engine.errors import Conflict, CoopError, KeyReused
from coop_engine.models import Binding, Session
from coop_engine.takes import ADOPTION_RETRY_SECONDS
from hosts.mac.host import Host, HostError

TAKE_WINDOW_SECONDS = 48 * 3600
PER_PASS = 5
Log = Callable[[str], None]


def candidates(now: float) -> list[Session]:
    """CLI takers due for a search, oldest attempt first."""
    recent = Binding.select(Binding.session).where(
        (Binding.state == "active") & (Binding.created_at >= now - TAKE_WINDOW_SECONDS)
    )
    query = (
        Session.select()
        .where(
            (Session.mode == "observed")
            & (Session.surface == "compatibility")
            & Session.vendor.in_(["claude", "codex"])
            & Session.id.in_(recent)
            & (Session.refused_until.is_null() | (Session.refused_until <= now))
            & (
                Session.last_tried_at.is_null()
                | (Session.last_tried_at <= now - ADOPTION_RETRY_SECONDS)
            )
        )
        .order_by(Session.last_tried_at.asc(nulls="first"), Session.id)
        .limit(PER_PASS)
    )
    return list(query)


class AdoptionPass:
    def __init__(
        self,
        engine: Engine,
        hosts: Mapping[str, Host],
        office: str,
        log: Log,
        reachable: Callable[[str], bool] | None = None,
    ) -> None:
        self.engine = engine
        self.hosts = hosts
        self.office = office
        self.log = log
        self._told = reachable  # what a running coordinator knows of each Mac
        self.reachable: Callable[[str], bool] = reachable or (lambda name: True)

    def search_order(self, declared: str) -> list[str]:
        first = [name for name in (declared, self.office) if name in self.hosts]
        others = [name for name in self.hosts if name not in first]
        others.sort(key=lambda name: (not self.reachable(name), name))
        return list(dict.fromkeys(first + others))

    def run(self) -> list[dict[str, Any]]:
        """One pass; per candidate: session, searched, found, result."""
        due = candidates(self.engine.clock())
        if due and self._told is None and len(self.hosts) > 1:
            online = self._online()
            self.reachable = online.__contains__
        return [self.adopt_one(session) for session in due]

    def _online(self) -> set[str]:
        """The Macs that answer a health request now, all asked at once."""
        from coop_engine.loop.survey import ask_each

        names = list(self.hosts)
        answers = ask_each([self.hosts[name] for name in names], lambda host: host.health())
        return {
            name
            for name, answer in zip(names, answers, strict=True)
            if not isinstance(answer, HostError)
        }

    def adopt_one(self, session: Session) -> dict[str, Any]:
        searched: list[dict[str, Any]] = []
        found: dict[str, Any] | None = None
        for name in self.search_order(session.host):
            try:
                answer = self.hosts[name].find_session(session.vendor, session.native_id)
            except (HostError, ValueError) as error:
                searched.append({"host": name, "error": str(error)})
                continue
            searched.append({"host": name, "matches": answer["matches"]})
            if answer["matches"]:
                found = {**answer, "host": name}
                break
        result, refused = self._decide(session, found)
        search = {"searched": searched, "found": found["host"] if found else None, "result": result}
        try:
            self.engine.record_adoption_search(session.id, search, refused=refused)
        except CoopError as refusal:  # the row went (or moved) meanwhile: nothing to record
            result = f"not recorded: {refusal}"
        self.log(f"adoption {session.ref}: {result}")
        return {"session": session.ref, **search, "result": result}

    def _decide(self, session: Session, found: dict[str, Any] | None) -> tuple[str, bool]:
        if found is None:
            return "not found", False
        if found["matches"] > 1:
            return f"conflict: {found['matches']} matches on {found['host']}", False
        identity = {"host": found["host"], "status": found.get("status"), "name": found.get("name")}
        try:
            adopted = self.engine.adopt_take(session.id, identity)
        except KeyReused:
            # Another adoption pass (serve, `coop adopt --once`, the app) adopted this
            # chat with what it read a moment earlier: adopted, not refused.
            return f"adopted by another pass on {found['host']}", False
        except Conflict as refusal:
            if Session.get_by_id(session.id).mode == "managed":
                return f"adopted by another pass on {found['host']}", False
            return f"refused: {refusal}", True
        return f"adopted at generation {adopted['generation']} on {found['host']}", False
