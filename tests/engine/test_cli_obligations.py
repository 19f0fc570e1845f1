"""`coop obligation review` and `coop obligations` through the real program: Dad's or
the chief's decision on an overdue obligation, checked as every decision is (who is
typing), one line on success, one line and exit 1 on a refusal, and nothing changed."""

from __future__ import annotations

import json

from coop_engine.models import Event, Obligation

from .support import CHAT, HOST, OTHER_CHAT, Steps, counts

LEGACY_DUE = 3 * 3600.0


def overdue(steps: Steps, clock) -> int:
    """An overdue legacy take by CHAT; its obligation's id."""
    taken = steps.cli_taker(chat=CHAT)
    clock.advance(LEGACY_DUE)
    assert len(steps.engine.sweep_obligations()["overdue"]) == 1
    return int(Obligation.get(Obligation.dispatch == taken["dispatch"]).id)


def listed(run_coop) -> list[dict]:
    done = run_coop("obligations", "--json")
    assert done.returncode == 0, done.stderr
    rows: list[dict] = json.loads(done.stdout)
    return rows


def test_dad_waits_then_releases_and_the_listing_shows_each_decision(steps, clock, run_coop):
    obligation = overdue(steps, clock)
    (row,) = listed(run_coop)
    assert (row["state"], row["decision"], row["decided_by"], row["decided_at"]) == (
        "overdue",
        None,
        None,
        None,
    )
    done = run_coop("obligation", "review", str(obligation), "--decision", "wait", "--by", "dad")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        f"obligation {obligation} reviewed: the work on todo #1 goes on, its outcome still"
        " owed (dad)\n"
    )
    (row,) = listed(run_coop)
    assert (row["state"], row["decision"], row["decided_by"]) == ("reviewed", "wait", "dad")
    assert row["decided_at"].endswith("Z")
    table = run_coop("obligations").stdout.splitlines()
    assert table[0].split() == ["ID", "TODO", "KIND", "DUE_AT", "STATE", "DECISION"]
    assert table[1].split()[-4:] == ["reviewed", "wait", "by", "dad"]
    done = run_coop("obligation", "review", str(obligation), "--decision", "release", "--by", "dad")
    assert done.returncode == 0, done.stderr
    assert "closed: the take is released and todo #1 is open again" in done.stdout
    assert listed(run_coop)[0]["state"] == "closed"
    todos = json.loads(run_coop("todo", "list", "--json").stdout)
    assert todos[0]["state"] == "open"


def test_a_review_refused_by_a_rule_is_one_line_exit_1_and_changes_nothing(steps, clock, run_coop):
    taken = steps.cli_taker(chat=CHAT)  # still due
    obligation = Obligation.get(Obligation.dispatch == taken["dispatch"]).id
    before = counts()
    done = run_coop("obligation", "review", str(obligation), "--decision", "wait", "--by", "dad")
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"coop: Obligation {obligation} (todo #1) is due at ")
    assert line.endswith(": it is reviewed once overdue")
    assert counts() == before


def test_dad_decides_from_outside_any_chat_and_the_chief_from_its_own(steps, clock, run_coop):
    obligation = overdue(steps, clock)
    steps.engine.set_chief(OTHER_CHAT, "dad", HOST)
    argv = ("obligation", "review", str(obligation), "--decision", "wait")
    inside = run_coop(*argv, "--by", "dad", env={"PIPPA_COOP_SESSION": CHAT})
    assert inside.returncode == 1
    assert "--by dad is refused inside a chat" in inside.stderr
    worker = run_coop(*argv, "--by", "chief", env={"PIPPA_COOP_SESSION": CHAT})
    assert worker.returncode == 1
    assert "--by chief is accepted only from the chief's chat" in worker.stderr
    refused = Event.select().where(Event.command == "refused_decision").count()
    assert refused == 2  # each attempt kept as history
    assert listed(run_coop)[0]["state"] == "overdue"
    chief = run_coop(*argv, "--by", "chief", env={"PIPPA_COOP_SESSION": OTHER_CHAT})
    assert chief.returncode == 0, chief.stderr
    assert listed(run_coop)[0]["decided_by"] == "chief"
