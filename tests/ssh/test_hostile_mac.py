"""A Mac that answers garbage, a line of a gigabyte or JSON nested without end is one
unreachable Mac with one reason; the office lists, invites and delivers on the others.

The hostile Mac is a real sshd whose every session runs a command of its own
(ForceCommand): it runs the command the office asked for, so the real helper starts and
answers `hello`, then bends every later answer. Whatever runs on a Mac is the Mac's to
choose; the office only reads its bytes."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fleet_macs import Mac
from test_remote_flows import coop_json, write_fleet
from waiting import wait_until

pytestmark = pytest.mark.ssh

RunCoop = Callable[..., Any]

# How each Mac bends every answer after hello's, and the reason the office gives: a
# gigabyte line ends at the 64 MiB cap or at the request's deadline, whichever is first
# (paramiko reads some tens of MB a second).
BENT = {
    "garbage": "helper sent something that is not an answer",
    "gigabyte": r"helper's answer to \w+ exceeded 64 MiB|timed out after \d+s waiting",
    "nested": "helper sent something that is not an answer",
}

WRAPPER = """#!{python}
import json, os, subprocess, sys
asked_for = os.environ["SSH_ORIGINAL_COMMAND"]
child = subprocess.Popen(["/bin/sh", "-c", asked_for], stdout=subprocess.PIPE)
out = sys.stdout.buffer
out.write(child.stdout.readline())  # hello's answer, as the real helper gave it
out.flush()
for line in child.stdout:
    asked = json.loads(line)["id"]
    if {bent!r} == "garbage":
        out.write(b"Traceback? no: this is not an answer\\n")
    elif {bent!r} == "gigabyte":
        for _ in range(1024):  # a gigabyte with no end of line
            out.write(b"x" * (1 << 20))
    else:
        deep = b"[" * 200000 + b"]" * 200000
        out.write(b'{{"id": %d, "ok": true, "result": %s}}\\n' % (asked, deep))
    out.flush()
"""


def hostile_sshd(root: Path, bent: str) -> tuple[str, ...]:
    """The sshd_config line that makes every session bend the helper's answers as
    `bent` says."""
    script = root / f"hostile-{bent}"
    script.write_text(WRAPPER.format(python=sys.executable, bent=bent))
    script.chmod(0o755)
    return (f"ForceCommand {script}",)


@pytest.mark.parametrize("bent", list(BENT))
def test_a_mac_answering_garbage_is_one_unreachable_mac_and_the_others_are_served(
    run_coop: RunCoop,
    coop_home: Path,
    tmp_path: Path,
    start_mac: Callable[..., Mac],
    bent: str,
) -> None:
    hostile = start_mac("hostile", sshd_settings=hostile_sshd(tmp_path, bent))
    hostile.chat("--name", "never-listed")
    studio = start_mac("studio")
    chat = studio.chat("--name", "renderer")
    env = write_fleet(coop_home, hostile.fleet_entry(deadline=2.0), studio.fleet_entry())

    rows = {row["name"]: row for row in coop_json(run_coop, "hosts", env=env)}
    assert (rows["studio"]["reachable"], rows["studio"]["chats_live"]) == (True, 1)
    assert rows["hostile"]["reachable"] is False, rows["hostile"]
    assert re.search(BENT[bent], rows["hostile"]["reason"]), rows["hostile"]["reason"]

    listed = run_coop("chats", "--json", env=env)
    assert listed.returncode == 0, listed.stderr
    assert [row["name"] for row in json.loads(listed.stdout)] == ["renderer"]
    [warning] = listed.stderr.splitlines()
    assert warning.startswith("coop: warning: hostile: ") and re.search(BENT[bent], warning)

    assert run_coop("todo", "add", "Fix the renderer", env=env).returncode == 0
    invited = run_coop("invite", "1", "--session", "renderer", env=env)
    assert invited.returncode == 0, invited.stderr

    def delivered() -> list[dict[str, Any]] | None:
        ticked = run_coop("tick", env=env)
        assert ticked.returncode == 0, ticked.stderr
        rows = coop_json(run_coop, "outbox", env=env)
        return rows if rows and rows[0]["facts"]["received"] else None

    [invitation, *_] = wait_until(delivered, "the studio's invitation received")
    assert [frame["msg_id"] for frame in chat.frames()][:1] == [invitation["id"]]
