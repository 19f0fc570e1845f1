"""Issue "[1/6] Chats as people know them", part 2: wherever the CLI takes a chat it takes
what a listing showed: the whole id, the short id, a unique start of at least four
characters, or the name one live chat has. Several: one line naming them, exit 2,
nothing recorded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hosts.sim.launch import SimFleet, codex_thread

from .namingkit import (
    CLAUDE_A,
    CLAUDE_B,
    CLAUDE_C,
    THREAD_A,
    THREAD_B,
    ledger_now,
    one_object,
    refusal_line,
    rows,
    table,
    usage_line,
)


def start(fleet: SimFleet, session_id: str, *args: str) -> None:
    fleet.start("--session-id", session_id, *args)


def outbox(run_coop: Any, env: dict[str, str]) -> list[dict[str, Any]]:
    return rows(run_coop("outbox", "--json", env=env))


def test_chat_show_takes_the_short_id_coop_chats_printed(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    """The measured bug: `coop chat show abcd1111` was refused with exit 2."""
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    (listed,) = table(run_coop("chats", env=env))
    assert (listed["SESSION_ID"], listed["NAME"]) == ("abcd1111", "reviewer-7")
    shown = one_object(run_coop("chat", "show", "abcd1111", "--json", env=env))
    assert shown["session_id"] == CLAUDE_A
    for text in ("abcd", "ABCD1111", "claude:abcd1111", "reviewer-7", CLAUDE_A):
        again = run_coop("chat", "show", text, "--json", env=env)
        assert again.returncode == 0, (text, again.stderr)


def test_invite_takes_the_name_one_live_chat_has(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    """The measured bug: `coop invite 3 --session reviewer-7` was refused with exit 2."""
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    start(fleet, CLAUDE_C, "--name", "importer")
    for title in ("One", "Two", "Three"):
        run_coop("todo", "add", title, env=env)
    done = run_coop("invite", "3", "--session", "reviewer-7", env=env)
    assert done.returncode == 0, done.stderr
    (row,) = outbox(run_coop, env)
    assert (row["id"], row["session"], row["todo"]) == (
        done.stdout.strip(),
        f"claude:{CLAUDE_A}",
        3,
    )
    assert done.stderr.splitlines() == [
        "coop: invited reviewer-7 (claude:abcd1111) on office to todo #3"
    ]


def test_every_short_id_coop_chats_prints_is_accepted_back(
    run_coop: Any, fleet: SimFleet, env: dict[str, str], codex_home: Path
) -> None:
    """Two Claude chats and two Codex threads whose first 8 characters agree: the short
    ids grow until they differ, and each one names its own chat again."""
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    start(fleet, CLAUDE_B, "--name", "reviewer-8")
    for thread in (THREAD_A, THREAD_B):
        codex_thread(codex_home, "--thread-id", thread, env=env)
    listed = table(run_coop("chats", env=env))
    shorts = {row["SESSION_ID"]: row for row in listed}
    assert set(shorts) == {"abcd1111-2", "abcd1111-9", "019adf3e-7", "019adf3e-8"}
    listed_json = rows(run_coop("chats", "--json", env=env))
    by_json = {row["short_id"]: row["session_id"] for row in listed_json}
    for number, (short, row) in enumerate(shorts.items(), start=1):
        run_coop("todo", "add", f"Todo {number}", env=env)
        invited = run_coop("invite", str(number), "--session", short, env=env)
        assert invited.returncode == 0, (short, invited.stderr)
        assert f"invited {row['NAME']} (" in invited.stderr
        assert f":{short}) on office to todo #{number}" in invited.stderr
        if short.startswith("abcd"):
            shown = one_object(run_coop("chat", "show", short, "--json", env=env))
            assert shown["session_id"] == by_json[short]
    invited_ids = [row["session"].split(":", 1)[1] for row in outbox(run_coop, env)]
    assert invited_ids == [by_json[short] for short in shorts]


def test_a_start_two_chats_share_is_refused_naming_both_and_records_nothing(
    run_coop: Any, fleet: SimFleet, env: dict[str, str], coop_home: Path
) -> None:
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    start(fleet, CLAUDE_B, "--name", "reviewer-8")
    run_coop("todo", "add", "Fix the importer", env=env)
    before = ledger_now(coop_home)
    for argv in (("invite", "1", "--session", "abcd1111"), ("chat", "show", "abcd")):
        line = usage_line(run_coop(*argv, env=env))
        assert "names 2 chats" in line
        assert "claude:abcd1111-2 (reviewer-7 on office)" in line
        assert "claude:abcd1111-9 (reviewer-8 on office)" in line
    assert ledger_now(coop_home) == before


def test_a_name_two_live_chats_share_is_refused_naming_both(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    start(fleet, CLAUDE_A, "--name", "twin")
    start(fleet, CLAUDE_C, "--name", "twin")
    run_coop("todo", "add", "Fix the importer", env=env)
    line = usage_line(run_coop("invite", "1", "--session", "twin", env=env))
    assert "'twin' names 2 chats: " in line
    assert "claude:abcd1111 (twin on office)" in line and "claude:5b7cf1d2 (twin on office)" in line
    assert outbox(run_coop, env) == []


def test_a_thread_without_a_name_is_named_by_its_folder_as_coop_chats_shows_it(
    run_coop: Any, env: dict[str, str], codex_home: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "api-server"
    folder.mkdir()
    codex_thread(codex_home, "--thread-id", THREAD_A, "--cwd", str(folder), env=env)
    (listed,) = table(run_coop("chats", env=env))
    assert (listed["NAME"], listed["SESSION_ID"]) == ("api-server", "019adf3e")
    run_coop("todo", "add", "Fix the importer", env=env)
    done = run_coop("invite", "1", "--session", "api-server", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == "coop: invited api-server (codex:019adf3e) on office to todo #1\n"


def test_text_that_names_no_chat_is_one_refusal_naming_the_macs_asked(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    run_coop("todo", "add", "Fix the importer", env=env)
    line = refusal_line(run_coop("invite", "1", "--session", "reviewer-9", env=env))
    assert line == "coop: No chat 'reviewer-9' (asked: office)"
    line = refusal_line(run_coop("chat", "show", "abc", env=env))
    assert "an id needs at least 4 characters" in line
    assert outbox(run_coop, env) == []


def test_a_malformed_reference_is_a_usage_line(run_coop: Any, env: dict[str, str]) -> None:
    run_coop("todo", "add", "Fix the importer", env=env)
    for argv, said in (
        (("invite", "1", "--session", "claude:abc"), "at least 4 characters"),
        (("invite", "1", "--session", "codex:not-a-thread"), "after codex: comes an id"),
        (("invite", "1", "--session", "slack:abcd1111"), "claude:<session id>"),
        (("chat", "show", "codex:019adf3e"), "reads a Claude chat"),
        (("chat", "show", "a\nb"), "printable"),
    ):
        assert said in usage_line(run_coop(*argv, env=env)), argv
    assert outbox(run_coop, env) == []


def test_a_whole_id_is_taken_as_it_is_without_looking_it_up(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    """A whole `claude:<UUID>` keeps its old words: not looked up among the chats."""
    run_coop("todo", "add", "Fix the importer", env=env)
    ghost = "claude:0badc0de-0000-4000-8000-000000000000"
    line = refusal_line(run_coop("invite", "1", "--session", ghost, env=env))
    assert line == f"coop: No Mac has a live chat {ghost} (asked: office)"
    line = refusal_line(run_coop("chat", "show", ghost, env=env))
    assert line == "coop: No chat with session 0badc0de-0000-4000-8000-000000000000 on any Mac"


def test_chief_set_takes_a_name_and_a_short_id(
    run_coop: Any, fleet: SimFleet, env: dict[str, str]
) -> None:
    start(fleet, CLAUDE_A, "--name", "reviewer-7")
    start(fleet, CLAUDE_C, "--name", "importer")
    done = run_coop("chief", "set", "reviewer-7", env=env)
    assert done.returncode == 0, done.stderr
    assert run_coop("chief", "show", env=env).stdout.strip() == f"claude:{CLAUDE_A}"
    assert run_coop("chief", "set", "5b7c", env=env).returncode == 0
    assert run_coop("chief", "show", env=env).stdout.strip() == f"claude:{CLAUDE_C}"


def unreachable_laptop(home: Path) -> None:
    """A fleet whose laptop refuses every connection (nothing listens on port 1)."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleet.toml").write_text(
        'office = "office"\n[[mac]]\nname = "laptop"\nhost = "127.0.0.1"\nport = 1\ntimeout = 5\n'
    )


def test_a_chat_the_ledger_knows_on_a_mac_that_cannot_be_asked_is_invited_and_waits(
    run_coop: Any, env: dict[str, str], engine: Any, coop_home: Path
) -> None:
    """Its short id names it from the ledger; the invitation waits for the laptop, with
    the warning a whole id gets. Its name does not: a name is a live chat's."""
    unreachable_laptop(coop_home)
    engine.add_todo("Write the docs")
    engine.invite(1, f"claude:{CLAUDE_A}", "laptop", name="docs-writer")
    engine.add_todo("Write more docs")
    done = run_coop("invite", "2", "--session", "abcd1111", env=env)
    assert done.returncode == 0, done.stderr
    note, warning = done.stderr.splitlines()
    assert note == "coop: invited docs-writer (claude:abcd1111) on laptop to todo #2"
    assert warning.startswith("coop: warning: laptop: ")
    assert warning.endswith("the invitation waits until laptop answers")
    waiting = [row for row in rows(run_coop("outbox", "--json", env=env)) if row["todo"] == 2]
    assert [(row["host"], row["state"]) for row in waiting] == [("laptop", "pending")]
    line = refusal_line(run_coop("invite", "2", "--session", "docs-writer", env=env))
    assert line.startswith("coop: No chat 'docs-writer' (asked: office, laptop; laptop could")
