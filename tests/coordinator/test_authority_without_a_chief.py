"""`--by chief` is the chief's decision only once Dad has named a chief (seed 001): with
no chief enrolled, nobody (a plain terminal included) decides as the chief."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from officekit import Office

from coop_engine import queries

COOP = str(Path(sys.executable).with_name("coop"))


def test_send_again_by_chief_with_no_chief_enrolled_is_refused_and_recorded(
    office: Office,
) -> None:
    todo = office.engine.add_todo("Fix the importer")["id"]
    ref = "claude:aaaaaaaa-0000-4000-8000-000000000002"
    outbox_id = office.engine.invite(todo, ref, "office")["outbox"]
    attempt = office.engine.mark_uncertain(outbox_id, {"host": "office", "offset": 0})["attempt"]
    office.engine.record_transport(outbox_id, attempt, {"ok": True, "written": True})
    office.engine.expire(outbox_id, {"reason": "receiver-idle-without-entry"})
    assert office.engine.chief() is None
    result = subprocess.run(
        [COOP, "resend", outbox_id, "--by", "chief"],
        capture_output=True,
        text=True,
        env=office.env(),
        timeout=60,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "No chat is enrolled as the chief" in result.stderr
    assert queries.envelope_row(outbox_id)["resent_as"] is None
    (refused,) = [e for e in queries.events() if e["command"] == "refused_decision"]
    assert (refused["evidence"]["claimed"], refused["evidence"]["caller"]) == ("chief", None)
