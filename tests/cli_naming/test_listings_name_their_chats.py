"""Issue "[1/6] Chats as people know them", parts 3, 5 and 7 on the CLI: every listing
that shows a chat shows its name beside its short id; a column's header is the `--json`
field it shows, upper-cased; `--json` only gains fields; `coop chats` shows the Codeman
session a chat's tmux pane belongs to."""

from __future__ import annotations

from typing import Any

import pytest

from coop_engine.engine import Engine
from hosts.sim.launch import SimFleet

from .namingkit import CLAUDE_A, CLAUDE_B, CLAUDE_C, rows, table

# DESIGN.md section 12: the fields scripts rely on.
CONTRACT = {
    "chats": {"host", "session_id", "pid", "name", "status", "socket", "inbound", "tmux"}
    | {"inbound_source"},
    "outbox": {"id", "kind", "todo", "session", "state", "facts", "reason", "conflict"}
    | {"last_error", "resent_as", "resent_from", "created_at", "payload", "door", "queued"},
    "sessions": {"id", "vendor", "host", "native_id", "mode", "surface", "status"}
    | {"generation", "name"},
    "hosts": {"name", "reachable", "reason", "latency_ms", "chats_live", "chats_registered"}
    | {"checked_at"},
    "adopt": {"session", "searched", "found", "result"},
}
ADDED = {
    "chats": {"short_id", "label", "codeman"},
    "outbox": {"short_id", "session_name", "session_short_id"},
    "sessions": {"short_id", "label"},
    "hosts": {"host"},
    "adopt": {"session_name", "session_short_id"},
    "events": {"session", "session_name", "session_short_id"},
    "notifications": {"session", "session_name", "session_short_id"},
}
# Where a header shows another field of the row than its own name says.
SHOWN_AS = {"NAME": "label"}
ARGV = {
    "chats": ("chats",),
    "hosts": ("hosts",),
    "outbox": ("outbox",),
    "sessions": ("sessions",),
    "events": ("events",),
    "notifications": ("notifications",),
    "obligations": ("obligations",),
    "todo list": ("todo", "list"),
    "adopt": ("adopt", "--once"),
}


@pytest.fixture
def busy(run_coop: Any, fleet: SimFleet, env: dict[str, str], engine: Engine) -> dict[str, str]:
    """A ledger with something in every listing: two named chats invited (one envelope
    expired, so a notice names it), and a CLI taker of a third chat for adoption."""
    fleet.start("--session-id", CLAUDE_A, "--name", "reviewer-7")
    fleet.start("--session-id", CLAUDE_B, "--name", "reviewer-8")
    fleet.start("--session-id", CLAUDE_C, "--name", "importer")
    for todo, chat in enumerate(("reviewer-7", "reviewer-8"), start=1):
        run_coop("todo", "add", f"Todo {todo}", env=env)
        assert run_coop("invite", str(todo), "--session", chat, env=env).returncode == 0
    first = rows(run_coop("outbox", "--json", env=env))[0]["id"]
    cursor = {"host": "office", "native_session": "x", "offset": 0, "inbound": None}
    attempt = int(engine.mark_uncertain(first, cursor)["attempt"])
    engine.record_transport(first, attempt, {"ok": True, "written": True})
    evidence = {"reason": "refused-by-receiver-policy", "message_id": first}
    engine.expire(first, {**evidence, "sent_at": 0.0, "observed_at": 0.0})
    engine.add_todo("Todo 3")
    engine.take_cli(3, f"claude:{CLAUDE_C}", "office")
    return env


@pytest.mark.parametrize("listing", ARGV)
def test_each_column_header_is_the_json_field_it_shows_upper_cased(
    run_coop: Any, busy: dict[str, str], listing: str
) -> None:
    argv = ARGV[listing]
    if listing == "adopt":  # a pass changes what it lists: take what this one said
        shown = run_coop(*argv, env=busy)
        header = shown.stdout.splitlines()[0].split()
        fields = set(CONTRACT["adopt"] | ADDED["adopt"])
    else:
        header = run_coop(*argv, env=busy).stdout.splitlines()[0].split()
        found = rows(run_coop(*argv, "--json", env=busy))
        assert found, listing
        fields = set().union(*found)
    for name in header:
        assert SHOWN_AS.get(name, name.lower()) in fields, (listing, name)


@pytest.mark.parametrize("listing", ["chats", "outbox", "sessions", "hosts", "events"])
def test_json_keeps_every_field_of_the_contract_and_adds_the_names(
    run_coop: Any, busy: dict[str, str], listing: str
) -> None:
    found = rows(run_coop(*ARGV[listing], "--json", env=busy))
    for row in found:
        assert CONTRACT.get(listing, set()) | ADDED[listing] <= set(row), (listing, row)


def test_the_adoption_pass_names_each_chat_by_its_label_and_short_id(
    run_coop: Any, busy: dict[str, str]
) -> None:
    (adopted,) = rows(run_coop("adopt", "--once", "--json", env=busy))
    assert CONTRACT["adopt"] | ADDED["adopt"] <= set(adopted)
    assert (adopted["session_name"], adopted["session_short_id"]) == ("importer", "5b7cf1d2")
    assert adopted["result"].startswith("adopted")


def test_every_listing_that_names_a_chat_shows_its_name_beside_its_short_id(
    run_coop: Any, busy: dict[str, str]
) -> None:
    chats = {row["NAME"]: row["SESSION_ID"] for row in table(run_coop("chats", env=busy))}
    assert chats == {"reviewer-7": "abcd1111-2", "reviewer-8": "abcd1111-9", "importer": "5b7cf1d2"}
    outbox = [(r["SESSION"], r["SESSION_NAME"]) for r in table(run_coop("outbox", env=busy))]
    assert outbox == [("claude:abcd1111-2", "reviewer-7"), ("claude:abcd1111-9", "reviewer-8")]
    (notice,) = table(run_coop("notifications", env=busy))
    assert (notice["SESSION"], notice["SESSION_NAME"]) == ("claude:abcd1111-2", "reviewer-7")
    events = table(run_coop("events", "--limit", "100", env=busy))
    named = {(r["SUBJECT"].split(":")[0], r["SESSION"], r["SESSION_NAME"]) for r in events}
    assert ("outbox", "claude:abcd1111-9", "reviewer-8") in named
    assert ("dispatch", "claude:abcd1111-2", "reviewer-7") in named
    assert ("todo", "-", "-") in named  # a todo is no chat's
    (adopted,) = table(run_coop("adopt", "--once", env=busy))
    assert (adopted["SESSION"], adopted["SESSION_NAME"]) == ("claude:5b7cf1d2", "importer")
    sessions = {r["NAME"]: r["NATIVE_ID"] for r in table(run_coop("sessions", env=busy))}
    assert sessions == chats  # the taker's name, once adoption found its chat


def test_coop_chats_shows_the_codeman_session_of_each_workers_pane(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    panes = {
        CLAUDE_A: "codeman-0123abcd:@1.%1",
        CLAUDE_B: "codeman-dkr-89abcdef:@2.%3",
        CLAUDE_C: "work:@3.%4",
    }
    for session_id, pane in panes.items():
        fleet.start("--session-id", session_id, env={"COOP_SIM_TMUX": pane})
    cells = {row["SESSION_ID"]: row["CODEMAN"] for row in table(run_coop("chats", env=env))}
    assert cells == {
        "abcd1111-2": "codeman-0123abcd",
        "abcd1111-9": "codeman-dkr-89abcdef (docker, another registry)",
        "5b7cf1d2": "-",
    }
    found = rows(run_coop("chats", "--json", env=env))
    listed = {row["session_id"]: row["codeman"] for row in found}
    assert listed[CLAUDE_A] == {
        "id8": "0123abcd",
        "kind": "local",
        "session": "codeman-0123abcd",
        "registry": "this",
    }
    assert listed[CLAUDE_B]["registry"] == "another" and listed[CLAUDE_C] is None


def test_every_short_id_coop_sessions_prints_names_its_chat_again(
    run_coop: Any, busy: dict[str, str]
) -> None:
    by_short = {row["short_id"]: row for row in rows(run_coop("sessions", "--json", env=busy))}
    for row in table(run_coop("sessions", env=busy)):
        done = run_coop("chief", "set", row["NATIVE_ID"], env=busy)
        assert done.returncode == 0, done.stderr
        chief = run_coop("chief", "show", env=busy).stdout.strip()
        enrolled = by_short[row["NATIVE_ID"]]
        assert chief == f"{enrolled['vendor']}:{enrolled['native_id']}"
