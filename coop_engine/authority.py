"""Who decides for Dad: the chief Dad names, and decisions attempted by someone who may
not make them, kept as history (seed 001: a peer frame or a worker's text is never
Dad's authorization)."""

from __future__ import annotations

from typing import Any

from coop_engine.dispatching import parse_session_ref
from coop_engine.frame import CommandBase, fresh_key
from coop_engine.models import Setting


class AuthorityCommands(CommandBase):
    def set_chief(self, session_ref: str, by: str, host: str | None = None) -> dict[str, Any]:
        """Name the chat that acts as Dad's proxy, and the Mac it lives on (where its
        reviews are delivered). Only Dad names the chief."""
        parse_session_ref(session_ref)

        def run(now: float) -> dict[str, Any]:
            previous = Setting.get_or_none(Setting.name == "chief")
            value = {"session": session_ref, "host": host}
            Setting.insert(name="chief", value=value, updated_at=now).on_conflict(
                conflict_target=[Setting.name],
                update={Setting.value: value, Setting.updated_at: now},
            ).execute()
            old = previous.value["session"] if previous else None
            self._event(now, "set_chief", "setting:chief", old, session_ref, who=by)
            return {"chief": session_ref}

        args = {"session": session_ref, "host": host}
        return self._command("set_chief", fresh_key("chief"), args, run)

    def chief(self) -> str | None:
        row = Setting.get_or_none(Setting.name == "chief")
        return None if row is None else str(row.value["session"])

    def record_refused_decision(
        self, command: str, by: str, caller: str | None, reason: str
    ) -> None:
        """A decision attempted by someone who may not make it: kept as history."""

        def run(now: float) -> dict[str, Any]:
            evidence = {"claimed": by, "caller": caller, "reason": reason}
            self._event(
                now,
                "refused_decision",
                f"command:{command}",
                None,
                None,
                evidence,
                who=caller or "unknown",
            )
            return {}

        args = {"command": command, "by": by, "caller": caller}
        self._command("refused_decision", fresh_key("refused"), args, run)
