"""Who is calling, and may they decide (seed 001): Send again and outcome decisions are
Dad's, or the chief's as his proxy. A peer frame or a worker's text is never Dad's authorization.

Dad is whoever types outside any chat; the chief is the chat Dad enrolled as chief;
everything else typed inside a chat is a worker. The caller is detected the same way as
a CLI take: PIPPA_COOP_SESSION, else the process ancestry.
"""

from __future__ import annotations

import os

from coop_engine.engine import Engine
from coop_engine.errors import NotAuthorized
from hosts.mac.identity import detect_claude_session
from hosts.mac.platforms import current_platform
from hosts.mac.settings import default_config_dir

SESSION_ENV = "PIPPA_COOP_SESSION"
HOST_ENV = "PIPPA_COOP_HOST"


def caller_session() -> str | None:
    """The chat this process runs inside: `claude:<id>` / `codex:<id>`, or None."""
    declared = os.environ.get(SESSION_ENV, "").strip()
    if declared:
        return declared
    return detect_claude_session(default_config_dir(), current_platform())


def check_decider(engine: Engine, command: str, by: str, caller: str | None) -> None:
    """Refuse, and record the attempt, unless `by` is who the caller really is."""
    reason = None
    if by == "dad" and caller is not None:
        reason = (
            f"--by dad is refused inside a chat ({caller}): Dad decides from a terminal "
            "outside any chat, the chief from its own chat with --by chief"
        )
    elif by == "chief":
        chief = engine.chief()
        if chief is None:
            reason = (
                "No chat is enrolled as the chief; Dad names one with: coop chief set claude:ID"
            )
        elif caller != chief:
            where = f"inside {caller}" if caller else "outside any chat"
            reason = (
                f"--by chief is accepted only from the chief's chat ({chief}); this runs {where}"
            )
    if reason is not None:
        engine.record_refused_decision(command, by, caller, reason)
        raise NotAuthorized(reason)


def check_worker(engine: Engine, todo_id: int, caller: str | None) -> None:
    """A worker's report comes from the chat bound to the todo (when one is bound)."""
    from coop_engine import queries

    bound = queries.bound_sessions(todo_id)
    if bound and caller not in bound:
        reason = f"Only the chat bound to todo #{todo_id} reports as worker ({', '.join(bound)})"
        engine.record_refused_decision("report", "worker", caller, reason)
        raise NotAuthorized(reason)
