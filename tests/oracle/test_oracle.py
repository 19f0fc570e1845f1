"""An independent oracle in the suite (issue 29, item 9): a mixed office driven through a
real `coop serve` and the CLI, then every verdict `coop outbox --json` printed held
against the receivers' own records by tests/oracle/checker.py, which reads files only.

The office: an idle chat, a chat busy in a turn with tool calls, one holding frames for
approval (dialog expiry known, 60 s on a clock a hundred times fast) and one holding
under an expiry Coop cannot know, one refusing by its settings, one past its admission
bucket (Coop paces it), one that exits with Coop's frame unread, one /cleared
mid-delivery, one losing every frame it reads, a Codex thread held open and one only
saved, and a laptop over real sshd whose link hangs (its proxy SIGSTOPped) with an
envelope in flight and another waiting. Then a pass as of two hours later decides what
the rules let it decide; the laptop answers again, Dad sends a proven loss again, the
held chat's user approves its frame, and passes decide the rest. The checker compares
twice: while the laptop hangs, and at the end.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from prerequisites import missing
from ssh.sshd_harness import SSHD, remove, short_tmp

from coop_engine.db import open_ledger
from coop_engine.engine import Engine

from .checker import Report, check, receiver_to_json
from .office import FAST, MixedOffice

pytestmark = pytest.mark.ssh

HOURS_LATER = 2 * 3600.0
BURST = 32  # beyond the receiver's bucket of 30: the last two wait for its refill
FAST_CLOCK = {"COOP_SIM_TIME_SCALE": "0.01"}  # the holding chat's 60 s dialog: 0.6 s
ACCEPTING = ("idle", "busy", "drifting", "laptop-idle")
LAPTOP = ("laptop-losing", "laptop-while-hung")
CLEAN = "false_receipts=0 false_losses=0 duplicates=0 holds_expired=0 unknowns_expired=0"


@pytest.fixture
def office(monkeypatch: pytest.MonkeyPatch) -> Iterator[MixedOffice]:
    if os.geteuid() != 0:
        missing("root, to run sshd (CI runs as root)")
    if not os.path.exists(SSHD):
        missing(f"{SSHD} (make test installs openssh-server)")
    monkeypatch.delenv("COOP_DATABASE_URL", raising=False)  # the ledger is the home's file
    root = short_tmp("or")
    office: MixedOffice | None = None
    try:
        office = MixedOffice(root)
        yield office.start()
    finally:
        if office is not None:
            office.stop()
        remove(root)


def start_receivers(office: MixedOffice) -> None:
    """Every receiver, each a process of its own keeping its own records: eleven Claude
    chats (two of them on the laptop, reached over its sshd) and two Codex threads."""
    here, laptop = office.office, office.laptop
    office.chat("idle", here, *FAST)
    office.chat("busy", here, *FAST, "--busy", "--tool-gate", str(office.root / "busy-gate"))
    holding = ("--mode", "bypassPermissions", "--dialog-expiry", "60s")
    office.chat("holding", here, *FAST, *holding, env=FAST_CLOCK)
    unknown = ("--mode", "bypassPermissions", "--settings", '{"dialogExpiry": "7m"}')
    office.chat("holding-unknown", here, *FAST, *unknown)
    office.chat("refusing", here, *FAST, "--inbound", "refuse")
    office.chat("bucket", here, *FAST, "--answer", "silent")
    office.chat("exiting", here, *FAST, "--history")
    office.chat("drifting", here, *FAST, "--think", "3")
    office.chat("losing", here, *FAST, "--lose-frames")
    office.chat("laptop-idle", laptop, *FAST)
    office.chat("laptop-losing", laptop, *FAST, "--lose-frames")
    office.thread("codex-open", here, held=True)
    office.thread("codex-saved", here, held=False)


def invite_everyone(office: MixedOffice) -> dict[str, str]:
    """Each receiver invited (the bucket many times over); invitation ids by receiver."""
    invited: dict[str, str] = {}
    # Written while the chat is stopped, then it dies with the frame unread.
    exiting = office.chats["exiting"][1]
    os.kill(exiting.pid, signal.SIGSTOP)
    invited["exiting"] = office.invite("exiting", "Exits before it reads this")
    office.until(
        lambda: office.envelope(invited["exiting"])["facts"]["transport"], "the frame written"
    )
    exiting.kill()
    # Absorbed into a turn with tool calls, answered when the turn ends.
    invited["busy"] = office.invite("busy", "Join the running turn")
    office.until(lambda: office.envelope(invited["busy"])["facts"]["received"], "absorbed")
    (office.root / "busy-gate").touch()
    # Thinking on another peer's message, /clear typed: the invitation arrives around it.
    office.foreign_frame("drifting", "Think about the release for a while.")
    office.chats["drifting"][1].type("/clear")
    invited["drifting"] = office.invite("drifting", "Arrives around a /clear")
    for name in ("idle", "holding", "holding-unknown", "refusing", "losing"):
        invited[name] = office.invite(name, f"An invitation to the {name} chat")
    for name in ("laptop-idle", "laptop-losing", "codex-open", "codex-saved"):
        invited[name] = office.invite(name, f"An invitation to {name}")
    # A burst past the receiver's bucket, through the engine as the coordinator tests do.
    engine = Engine(open_ledger(office.home), actor="dad")
    try:
        ref = office.chats["bucket"][1].ref
        for n in range(BURST):
            todo = engine.add_todo(f"Burst invitation {n + 1} of {BURST}")["id"]
            invited[f"bucket-{n}"] = str(engine.invite(todo, ref, "office")["outbox"])
    finally:
        engine.db.close()
    return invited


def work_of(rows: dict[str, dict[str, Any]], invitation: dict[str, Any]) -> dict[str, Any] | None:
    """The work envelope of an invitation's todo, when there is one."""
    works = [r for r in rows.values() if r["kind"] == "work" and r["todo"] == invitation["todo"]]
    return works[0] if works else None


def answering(office: MixedOffice, invited: dict[str, str]) -> list[str]:
    """The receivers that take their invitation and get its work: the accepting chats
    and the open thread. The cleared chat is one unless Coop read its registry just
    before the /clear and wrote just after: then the chat dropped the frame, naming the
    ended conversation (its log says so), a loss the later passes must prove."""
    dropped = office.said("drifting", f"frame {invited['drifting']}: dropped")
    return [name for name in (*ACCEPTING, "codex-open") if not (dropped and name == "drifting")]


def delivered_everything_it_could(office: MixedOffice, invited: dict[str, str]) -> bool:
    """What serve can settle at today's time is settled: nothing waits to be sent, the
    accepting chats and the open thread have their work, each hold was seen and the
    60 s one dropped, the refusal expired, the losing chats lost their frames, and the
    saved thread's invitation waits in Codex's queue."""
    rows = office.outbox()
    row = {name: rows[outbox_id] for name, outbox_id in invited.items()}
    if any(r["state"] == "pending" for r in rows.values()):
        return False
    for name in answering(office, invited):
        work = work_of(rows, row[name])
        if work is None or work["state"] != "delivered":
            return False
    held = office.said("holding", f"frame {invited['holding']}: held frame expired")
    losses = all(office.said(n, f"frame {invited[n]}: lost") for n in ("losing", "laptop-losing"))
    return (
        held
        and bool(row["holding"]["held"] and row["holding-unknown"]["held"])
        and row["refusing"]["state"] == "expired"
        and losses
        and row["codex-saved"]["queued"] is True
        and all(row[f"bucket-{n}"]["state"] == "delivered" for n in range(BURST))
    )


def hang_the_laptop(office: MixedOffice, invited: dict[str, str]) -> None:
    """The laptop's link hangs; Dad invites its chat again, and `coop invite` records
    the invitation all the same: it waits for the laptop."""
    office.hang_point().hang()
    again = office.invite("laptop-idle", "While the laptop hangs")
    invited["laptop-while-hung"] = again


def hours_later(office: MixedOffice) -> float:
    """Serve stopped and every chat quiet, a pass as of two hours later (the laptop still
    hung) decides what the rules let it decide. Returns the time it was as of."""
    office.quiet([name for name in office.chats if name != "exiting"])
    later = time.time() + HOURS_LATER
    office.tick(later)
    return later


def rejoin(office: MixedOffice, invited: dict[str, str], later: float) -> None:
    """The laptop answers again; Dad sends the proven loss again (it is lost again); the
    unknown hold's user approves it. A pass that reaches the laptop sends what waited and
    decides what it could not while the laptop hung; once the chats are quiet, a later
    one reads what they did (each tried again while the laptop is slow to answer)."""
    office.hang_point().resume()
    if office.envelope(invited["losing"])["state"] == "expired":
        again = office.coop("resend", invited["losing"], "--by", "dad").stdout.strip()
        invited["losing-again"] = again
    unknown = office.chats["holding-unknown"][1]
    os.kill(unknown.pid, signal.SIGUSR1)  # its user chooses Deliver in the dialog
    entered = f"frame {invited['holding-unknown']}: started a turn"
    office.until(lambda: office.said("holding-unknown", entered), "the approved frame entered")
    laptop = {name: invited[name] for name in LAPTOP}

    def reached() -> bool:
        rows = {name: office.envelope(outbox_id) for name, outbox_id in laptop.items()}
        return rows["laptop-losing"]["state"] != "uncertain" and bool(
            rows["laptop-while-hung"]["facts"]["transport"]
        )

    office.tick_until(later + 10, reached, "a pass that reached the laptop again")
    office.quiet([name for name in office.chats if name != "exiting"])
    waited = laptop["laptop-while-hung"]
    office.tick_until(
        later + 200,
        lambda: office.envelope(waited)["facts"]["accepted"],
        "the laptop's answer read",
    )


def oracle(office: MixedOffice, when: str) -> tuple[Report, dict[str, dict[str, Any]]]:
    """`coop outbox --json` now and the receivers' records now, compared (no coordinator
    runs meanwhile); both kept beside the office's files for whoever reads a failure."""
    rows = office.outbox()
    receivers = office.receivers()
    manifest = {"receivers": [receiver_to_json(r) for r in receivers]}
    (office.root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    (office.root / f"outbox-{when}.json").write_text(json.dumps(list(rows.values()), indent=1))
    report = check(list(rows.values()), receivers)
    print(f"{when}: {report.detail()}")
    return report, rows


def test_every_verdict_coop_printed_agrees_with_the_receivers_own_records(
    office: MixedOffice,
) -> None:
    started = time.monotonic()
    start_receivers(office)
    office.serve()
    invited = invite_everyone(office)
    office.until(lambda: delivered_everything_it_could(office, invited), "the office settled")
    hang_the_laptop(office, invited)
    assert office.stop_serving() == 0, office.serve_log.read_text()
    later = hours_later(office)
    hung, while_hung = oracle(office, "while-hung")
    assert hung.line().endswith(CLEAN), hung.detail()
    rejoin(office, invited, later)
    report, rows = oracle(office, "final")
    print(f"{report.line()} seconds={time.monotonic() - started:.1f}")
    assert report.line().endswith(CLEAN), report.detail()
    assert report.clean and hung.clean, (hung.detail(), report.detail())

    # The office was what it claims to be: every kind of verdict was there to be checked.
    row = {name: rows[outbox_id] for name, outbox_id in invited.items()}
    reasons = {r["reason"] for r in rows.values() if r["state"] == "expired"}
    assert reasons == {
        "refused-by-receiver-policy",
        "held-for-approval-then-expired",
        "receiver-idle-without-entry",
    }
    assert {"refused", "hold-expired", "lost"} <= set(report.settled)
    assert all(row[name]["facts"]["accepted"] for name in answering(office, invited))
    assert row["drifting"]["session"] != f"claude:{office.chats['drifting'][1].session_id}"
    assert row["holding-unknown"]["held"] and row["holding-unknown"]["facts"]["received"]
    assert row["losing-again"]["state"] == "expired"
    assert (row["exiting"]["state"], row["codex-saved"]["state"]) == ("uncertain", "uncertain")
    # While the laptop hung, its loss could not be proven and its invitation waited.
    hung_then = {name: while_hung[invited[name]]["state"] for name in LAPTOP}
    assert hung_then == {"laptop-losing": "uncertain", "laptop-while-hung": "pending"}
    # Two hours on, the hold under an expiry Coop cannot know was still held.
    unknown_then = while_hung[invited["holding-unknown"]]
    assert (unknown_then["state"], unknown_then["held"]["cause"]) == ("uncertain", "parity")
    assert row["laptop-losing"]["reason"] == "receiver-idle-without-entry"
    assert row["laptop-while-hung"]["facts"]["accepted"]
    assert report.invitations == 14 + BURST and report.receivers == 13
