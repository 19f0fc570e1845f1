"""Who may decide (seed 001): Dad from outside any chat, the chief from its own chat.
A worker chat typing `--by dad` is refused with who may, and the attempt is recorded."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from officekit import Office
from waiting import wait_until

from coop_engine import queries

COOP = str(Path(sys.executable).with_name("coop"))


def expired_invitation(office: Office) -> str:
    """An invitation proven undelivered, ready for Send again."""
    todo = office.engine.add_todo("Fix the importer")["id"]
    outbox_id = str(
        office.engine.invite(todo, "claude:aaaaaaaa-0000-4000-8000-000000000001", "office")[
            "outbox"
        ]
    )
    attempt = office.engine.mark_uncertain(outbox_id, {"host": "office", "offset": 0})["attempt"]
    office.engine.record_transport(outbox_id, attempt, {"ok": True, "written": True})
    office.engine.expire(outbox_id, {"reason": "receiver-idle-without-entry"})
    return outbox_id


def run_in_chat(office: Office, command: str, *args: str) -> str:
    """Run `command` through the Bash tool of a simulated chat; returns its output and,
    on the last line, its exit status."""
    out = office.home.parent / f"out-{time.monotonic_ns()}.txt"
    script = f"{command} > {out}.part 2>&1; echo $? >> {out}.part; mv {out}.part {out}"
    chat = office.macs["office"].start("--run", script, *args, env=office.env())
    wait_until(out.exists, "the chat running the command")
    chat.stop()
    return out.read_text()


@pytest.fixture
def resend_id(office: Office) -> str:
    return expired_invitation(office)


def test_worker_chat_typing_by_dad_is_refused_and_recorded(office: Office, resend_id: str) -> None:
    output = run_in_chat(office, f"{COOP} resend {resend_id} --by dad")
    assert "--by dad is refused inside a chat (claude:" in output
    assert output.strip().splitlines()[-1] == "1"
    (refused,) = [e for e in queries.events() if e["command"] == "refused_decision"]
    assert refused["evidence"]["claimed"] == "dad"
    assert refused["evidence"]["caller"].startswith("claude:")
    assert queries.envelope_row(resend_id)["resent_as"] is None


def test_worker_chat_typing_by_chief_is_refused(office: Office, resend_id: str) -> None:
    office.engine.set_chief("claude:cccccccc-0000-4000-8000-00000000c1ef", "dad")
    output = run_in_chat(office, f"{COOP} resend {resend_id} --by chief")
    assert "--by chief is accepted only from the chief's chat" in output
    assert queries.envelope_row(resend_id)["resent_as"] is None


def test_the_chiefs_own_chat_may_send_again(office: Office, resend_id: str) -> None:
    chief = "9c1e5a2b-0000-4000-8000-00000000c41e"
    office.engine.set_chief(f"claude:{chief}", "dad")
    output = run_in_chat(office, f"{COOP} resend {resend_id} --by chief", "--session-id", chief)
    assert output.strip().splitlines()[-1] == "0", output
    # stdout's one line is the new id (stderr, merged here, compares the predictions).
    assert queries.envelope_row(resend_id)["resent_as"] in output.splitlines()


def test_the_chief_named_in_the_environment_may_send_again(office: Office, resend_id: str) -> None:
    chief = "claude:9c1e5a2b-0000-4000-8000-00000000c41f"
    office.engine.set_chief(chief, "dad")
    result = subprocess.run(
        [COOP, "resend", resend_id, "--by", "chief"],
        capture_output=True,
        text=True,
        env=office.env(PIPPA_COOP_SESSION=chief),
    )
    assert result.returncode == 0, result.stderr


def test_dad_from_a_plain_terminal_may_send_again(office: Office, resend_id: str) -> None:
    result = subprocess.run(
        [COOP, "resend", resend_id[:8], "--by", "dad"],
        capture_output=True,
        text=True,
        env=office.env(),
    )
    assert result.returncode == 0, result.stderr
    assert queries.envelope_row(resend_id)["resent_as"] == result.stdout.strip()


def test_only_dad_names_the_chief(office: Office) -> None:
    chief = office.macs["office"].start()  # a live chat: the chief must be one, or enrolled
    output = run_in_chat(office, f"{COOP} chief set {chief.ref}")
    assert "--by dad is refused inside a chat" in output
    assert office.engine.chief() is None
    result = subprocess.run(
        [COOP, "chief", "set", chief.ref],
        capture_output=True,
        text=True,
        env=office.env(),
    )
    assert result.returncode == 0, result.stderr
    assert office.engine.chief() == chief.ref


def test_a_worker_report_comes_from_the_bound_chat(office: Office) -> None:
    chat = office.macs["office"].start()
    todo = office.engine.add_todo("Write the docs")["id"]
    office.engine.take_cli(todo, chat.ref, "office")
    outsider = subprocess.run(
        [COOP, "todo", "report", str(todo), "--outcome", "done", "--by", "worker"],
        capture_output=True,
        text=True,
        env=office.env(),
    )
    assert outsider.returncode == 1
    assert "Only the chat bound to todo #1 reports as worker" in outsider.stderr
    bound = subprocess.run(
        [COOP, "todo", "report", str(todo), "--outcome", "docs written", "--by", "worker"],
        capture_output=True,
        text=True,
        env=office.env(PIPPA_COOP_SESSION=chat.ref),
    )
    assert bound.returncode == 0, bound.stderr
    (obligation,) = queries.obligations()
    assert obligation["state"] == "met"
