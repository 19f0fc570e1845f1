"""What Coop writes into frames is checked at the door (coop_engine/frame_text.py): a todo
title is one line of at most 200 characters, a body at most 64 KiB, and neither holds a
control or bidi character (a body may hold tab and newline). `coop todo add` and `coop
invite` refuse anything else in one line naming the character and its position, exit 2,
and record nothing."""

from __future__ import annotations

from typing import Any

import pytest

from coop_engine.engine import Engine
from coop_engine.errors import BadInput
from coop_engine.models import Todo

from .support import CHAT, Steps
from .test_bad_input import ledger_rows, one_line

HOSTILE = "\x1b]2;PWNED\x07ev\x1b[2Jil\x9b31m\u202egnp.exe"


@pytest.mark.parametrize(
    ("title", "said"),
    [
        ("Fix \x1b[2J the importer", "U+001B (ESC) (character 5)"),
        ("Fix\tthe importer", "U+0009 (TAB) (character 4)"),
        ("Fix the importer\u202e", "U+202E (RIGHT-TO-LEFT OVERRIDE) (character 17)"),
        ("Fix the \x9b31m importer", "U+009B (CSI) (character 9)"),
        ("Fix the importer\x7f", "U+007F (DEL) (character 17)"),
        ("Fix the\nimporter", "one line: U+000A (newline) at character 8"),
        ("x" * 201, "at most 200 characters, not 201"),
    ],
)
def test_a_title_that_no_frame_may_carry_is_refused_naming_why(
    engine: Engine, title: str, said: str
) -> None:
    with pytest.raises(BadInput) as refused:
        engine.add_todo(title)
    assert said in str(refused.value)
    assert Todo.select().count() == 0


def test_a_body_may_hold_tabs_and_lines_but_no_escape_and_at_most_64_kib(engine: Engine) -> None:
    engine.add_todo("Fix the importer", body="Steps:\n\t1. run it\n\t2. read it")
    with pytest.raises(BadInput, match=r"U\+001B \(ESC\) \(character 3\)"):
        engine.add_todo("Fix the importer", body="ok\x1b[31m")
    with pytest.raises(BadInput, match="at most 65,536 characters, not 65,537"):
        engine.add_todo("Fix the importer", body="b" * (64 * 1024 + 1))
    engine.add_todo("Fix the importer", body="b" * (64 * 1024))
    assert Todo.select().count() == 2


def test_a_title_of_200_characters_is_kept_whole(engine: Engine) -> None:
    todo = engine.add_todo("t" * 200)["id"]
    assert Todo.get_by_id(todo).title == "t" * 200


def test_an_invitation_of_a_todo_an_older_ledger_kept_raw_is_refused(
    engine: Engine, steps: Steps
) -> None:
    todo = steps.todo()
    Todo.update(title=HOSTILE).where(Todo.id == todo).execute()
    before = ledger_rows()
    with pytest.raises(BadInput, match="U\\+001B"):
        engine.invite(todo, CHAT, "office")
    assert ledger_rows() == before


@pytest.mark.parametrize(
    "argv",
    [
        ("todo", "add", HOSTILE),
        ("todo", "add", "t" * 201),
        ("todo", "add", "Fix the importer", "--body", "x\x1b]52;c;cGFzdGU=\x07"),
    ],
    ids=["an escape", "201 characters", "an OSC 52 in the body"],
)
def test_coop_todo_add_refuses_at_the_door_in_one_line_and_records_nothing(
    run_coop: Any, steps: Steps, argv: tuple[str, ...]
) -> None:
    steps.todo()
    before = ledger_rows()
    line = one_line(run_coop(*argv), 2)
    assert "\x1b" not in line and "\u202e" not in line
    assert "character" in line
    assert ledger_rows() == before
