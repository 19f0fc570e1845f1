"""Bad arguments to every command of `coop --help`: one clear line, the contract's exit
code (DESIGN.md section 12) and a ledger exactly as it was.

Malformed input is a usage error (exit 2), found by the parser before anything is
opened, so it creates nothing either; a well-formed id that names nothing is the
ledger's refusal (exit 1). Every case runs the real CLI, on SQLite and on PostgreSQL.
(A bad home, ledger file or database URL, and a ledger that fails underneath a command,
are in tests/faults/test_ledger_faults.py.)
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from coop_engine.models import TABLES

from .support import CHAT, Steps

BIG = "a" * 60_000
UNKNOWN_CHAT = "claude:00000000-0000-4000-8000-000000000000"
UNKNOWN_ENVELOPE = "00000000-0000-4000-8000-00000000dead"
REVIEW = ("obligation", "review")
# What a 60,000-character argument may cost a line: its start and its length.
LONGEST_LINE = 500

MALFORMED: dict[str, tuple[str, ...]] = {
    "todo take, empty": ("todo", "take", ""),
    "todo take, 60,000 characters": ("todo", "take", BIG),
    "todo take, beyond the largest integer": ("todo", "take", "9" * 30),
    "todo take, digits that are not ASCII": ("todo", "take", "\u0661\u0662"),
    "todo take, negative": ("todo", "take", "-1"),
    "todo report, 60,000 characters": ("todo", "report", BIG, "--outcome", "x", "--by", "dad"),
    "todo report, --by 60,000 characters": ("todo", "report", "1", "--outcome", "x", "--by", BIG),
    "todo add, no title": ("todo", "add"),
    "todo list, a stray argument": ("todo", "list", BIG),
    "outbox, a stray argument": ("outbox", BIG),
    "sessions, an unknown option": ("sessions", "--" + BIG),
    "notifications, a stray argument": ("notifications", ""),
    "events, --limit 0": ("events", "--limit", "0"),
    "events, --limit 60,000 characters": ("events", "--limit", BIG),
    "obligations, a stray argument": ("obligations", BIG),
    "resend, empty": ("resend", "", "--by", "dad"),
    "resend, 60,000 characters": ("resend", BIG, "--by", "dad"),
    "resend, shell in the id": ("resend", "$(touch /tmp/coop-x)", "--by", "dad"),
    "resend, by a worker": ("resend", UNKNOWN_ENVELOPE, "--by", "worker"),
    "withdraw, no decider": ("withdraw", UNKNOWN_ENVELOPE),
    "invite, an empty session": ("invite", "1", "--session", ""),
    "invite, an unknown vendor": ("invite", "1", "--session", "slack:" + UNKNOWN_CHAT[7:]),
    "invite, an id that is no UUID": ("invite", "1", "--session", "claude:abc"),
    "invite, a 60,000-character session": ("invite", "1", "--session", "claude:" + BIG),
    "invite, an empty host": ("invite", "1", "--session", UNKNOWN_CHAT, "--host", ""),
    "invite, a 60,000-character host": ("invite", "1", "--session", UNKNOWN_CHAT, "--host", BIG),
    "invite, todo 0": ("invite", "0", "--session", UNKNOWN_CHAT),
    "obligations, --json twice and more": ("obligations", "--json", "--json", "x"),
    "adopt, without --once": ("adopt",),
    "obligation, no action": ("obligation",),
    "obligation review, no decision": (*REVIEW, "1", "--by", "dad"),
    "obligation review, an unknown decision": (*REVIEW, "1", "--decision", "x", "--by", "dad"),
    "obligation review, by a worker": (*REVIEW, "1", "--decision", "wait", "--by", "worker"),
    "obligation review, 60,000 characters": (*REVIEW, BIG, "--decision", "wait", "--by", "dad"),
    "obligation review, obligation 0": (*REVIEW, "0", "--decision", "wait", "--by", "dad"),
    "chief set, 60,000 characters": ("chief", "set", BIG),
    "chief show, a stray argument": ("chief", "show", "x"),
    "serve, --interval 0": ("serve", "--interval", "0"),
    "serve, --interval -1": ("serve", "--interval", "-1"),
    "serve, --interval nan": ("serve", "--interval", "nan"),
    "tick, --at nan": ("tick", "--at", "nan"),
    "tick, --at beyond year 9999": ("tick", "--at", "1e400"),
    "tick, --at 60,000 characters": ("tick", "--at", BIG),
    "chats, an empty host": ("chats", "--host", ""),
    "chats, a 60,000-character host": ("chats", "--host", BIG),
    "hosts, a stray argument": ("hosts", BIG),
    "chat show, empty": ("chat", "show", ""),
    "chat show, 60,000 characters": ("chat", "show", BIG),
    "chat show, --lines 0": ("chat", "show", UNKNOWN_CHAT, "--lines", "0"),
    "status, a stray argument": ("status", BIG),
    "an empty --home": ("--home", "", "todo", "list"),
    "a 60,000-character command": (BIG,),
}

# Well-formed, naming nothing: the ledger (or the fleet) refuses.
NAMES_NOTHING: dict[str, tuple[str, ...]] = {
    "todo take, the largest integer": ("todo", "take", str(2**63 - 1)),
    "todo report, no such todo": ("todo", "report", "999", "--outcome", "x", "--by", "dad"),
    "invite, no such todo": ("invite", "999", "--session", UNKNOWN_CHAT),
    "invite, no such Mac": ("invite", "1", "--session", UNKNOWN_CHAT, "--host", "no-such-mac"),
    "resend, no such envelope": ("resend", UNKNOWN_ENVELOPE, "--by", "dad"),
    "resend, a prefix of no envelope": ("resend", "dead", "--by", "dad"),
    "chats, no such Mac": ("chats", "--host", "no-such-mac"),
    "obligation review, no such obligation": (*REVIEW, "999", "--decision", "wait", "--by", "dad"),
    "chat show, no such chat": ("chat", "show", UNKNOWN_CHAT),
    # A chat is also named by its name or its short id: text that is neither names nothing.
    "invite, a name no chat has": ("invite", "1", "--session", "nope"),
    "chief set, a name no chat has": ("chief", "set", "nope"),
    "chat show, a path no chat is named": ("chat", "show", "../../sessions/1"),
}


def ledger_rows() -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table, read through the test's own connection."""
    return {model._meta.table_name: sorted(model.select().tuples(), key=repr) for model in TABLES}


def one_line(done: subprocess.CompletedProcess[str], code: int) -> str:
    """The command exited `code` with exactly one line on stderr and no traceback."""
    assert done.returncode == code, (done.returncode, done.stderr[:2000])
    assert "Traceback" not in done.stderr + done.stdout, done.stderr[:2000]
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[:2000]
    assert lines[0].startswith("coop"), lines[0]
    return lines[0]


@pytest.fixture
def seeded(steps: Steps) -> dict[str, list[tuple[Any, ...]]]:
    """A ledger with a todo, a chat and a pending invitation; its rows."""
    steps.invitation(chat=CHAT)
    return ledger_rows()


@pytest.fixture
def no_chats(tmp_path: Path) -> dict[str, str]:
    """An environment of the test's own: a Claude config with no chats, and a HOME (so
    nothing reaches the machine's own chats or its ~/.local/share/coop)."""
    config = tmp_path / "claude-config"
    config.mkdir()
    return {"CLAUDE_CONFIG_DIR": str(config), "HOME": str(tmp_path / "user")}


@pytest.mark.parametrize("argv", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_input_is_one_usage_line_and_changes_nothing(
    run_coop: Any, seeded: dict, no_chats: dict[str, str], argv: tuple[str, ...]
) -> None:
    line = one_line(run_coop(*argv, env=no_chats), 2)
    assert len(line) < LONGEST_LINE
    assert ledger_rows() == seeded


@pytest.mark.parametrize("argv", NAMES_NOTHING.values(), ids=NAMES_NOTHING.keys())
def test_a_well_formed_id_that_names_nothing_is_one_refusal_line_and_changes_nothing(
    run_coop: Any, seeded: dict, no_chats: dict[str, str], argv: tuple[str, ...]
) -> None:
    one_line(run_coop(*argv, env=no_chats), 1)
    assert ledger_rows() == seeded


@pytest.mark.parametrize("prefix", ["", "d", "dea"])
def test_an_envelope_prefix_under_4_characters_says_to_give_at_least_4(
    run_coop: Any, seeded: dict, prefix: str
) -> None:
    line = one_line(run_coop("resend", prefix, "--by", "dad"), 2)
    assert line.endswith("give at least 4 characters of the envelope's id")
    assert ledger_rows() == seeded


def test_a_60000_character_id_is_echoed_as_its_start_and_its_length(run_coop: Any) -> None:
    line = one_line(run_coop("chief", "set", BIG), 2)
    assert "(60,000 characters)" in line


def test_an_unknown_session_vendor_names_the_shape_of_a_session(run_coop: Any) -> None:
    line = one_line(run_coop("invite", "1", "--session", "slack:abc"), 2)
    assert "claude:<session id> or codex:<thread id>" in line


def test_help_and_usage_errors_create_no_home_and_no_ledger(
    run_coop: Any, tmp_path: Path, no_chats: dict[str, str]
) -> None:
    user = Path(no_chats["HOME"])  # where ~/.local/share/coop would be
    never = tmp_path / "never"
    env = no_chats
    assert run_coop("--help", home=None, env=env).returncode == 0
    assert run_coop("todo", "--help", home=never, env=env).returncode == 0
    for argv in list(MALFORMED.values())[:12] + [MALFORMED["serve, --interval 0"]]:
        one_line(run_coop(*argv, home=never, env=env), 2)
        one_line(run_coop(*argv, home=None, env=env), 2)
    assert not never.exists()
    assert not user.exists()


def test_the_read_model_refuses_a_short_or_absurd_envelope_id_in_one_short_line(
    seeded: dict,
) -> None:
    """`resolve_outbox_id` holds the rule for every caller, not only the CLI's parser."""
    from coop_engine import queries
    from coop_engine.errors import NotFound

    for text in ("", "   ", "dea"):
        with pytest.raises(NotFound, match="^give at least 4 characters of the envelope's id$"):
            queries.resolve_outbox_id(text)
    with pytest.raises(NotFound) as refusal:
        queries.resolve_outbox_id(BIG)
    assert len(str(refusal.value)) < LONGEST_LINE
