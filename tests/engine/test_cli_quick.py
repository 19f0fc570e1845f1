"""The quick reading of a command line (coop_engine/cli/quick.py) gives argparse's own
namespace, value for value, for every command's examples and their variants (`--home`
before and after the command, options in another order), and leaves to argparse every
command line whose help or error argparse words."""

from __future__ import annotations

import shlex

import pytest

from coop_engine.cli import quick
from coop_engine.cli.examples import EXAMPLES
from coop_engine.cli.main import COMMANDS, build_parser


def argparse_values(argv: list[str]) -> dict[str, object]:
    return vars(build_parser(argv).parse_args(argv))


def example_lines() -> list[list[str]]:
    lines = []
    for found in EXAMPLES.values():
        for line in found:
            argv = shlex.split(line.partition(" > ")[0])[1:]
            if argv and argv != ["--version"] and argv[0] != "--home" and argv not in lines:
                lines.append(argv)
    return lines


def command_words(argv: list[str]) -> int:
    """How many leading words name the command (and its action)."""
    command = COMMANDS[argv[0]]
    return 2 if command.actions else 1


def variants(argv: list[str]) -> list[list[str]]:
    """The line, with --home before the command, after it, both; and its arguments
    (each option with its value) in the reverse order."""
    words = command_words(argv)
    head, tail = argv[:words], argv[words:]
    units: list[list[str]] = []
    for word in tail:
        takes_value = units and units[-1][0].startswith("-") and len(units[-1]) == 1
        if takes_value and not word.startswith("-") and not _is_flag(argv, units[-1][0]):
            units[-1].append(word)
        else:
            units.append([word])
    reordered = head + [word for unit in reversed(units) for word in unit]
    return [
        argv,
        ["--home", "/tmp/first", *argv],
        [*argv, "--home", "/tmp/later"],
        ["--home", "/tmp/first", *argv, "--home", "/tmp/later"],
        reordered,
    ]


def _is_flag(argv: list[str], option: str) -> bool:
    command = COMMANDS[argv[0]]
    if command.actions:
        command = command.actions[argv[1]]
    return any(option in arg.flags and arg.flag for arg in command.args)


LINES = [variant for line in example_lines() for variant in variants(line)]


@pytest.mark.parametrize("argv", LINES, ids=" ".join)
def test_a_well_formed_line_is_read_as_argparse_reads_it(argv: list[str]) -> None:
    quickly = quick.parse(COMMANDS, argv)
    assert quickly is not None, "the quick reading left a well-formed line to argparse"
    assert vars(quickly) == argparse_values(argv)


def test_every_command_and_action_is_read_quickly() -> None:
    read = {
        " ".join(argv[: command_words(argv)])
        for argv in example_lines()
        if quick.parse(COMMANDS, argv) is not None
    }
    every = {
        f"{name} {action}".strip()
        for name, command in COMMANDS.items()
        for action in (command.actions or {"": None})
    }
    assert read == every


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["--home", "/tmp/h"],
        ["--version"],
        ["--help"],
        ["chats", "-h"],
        ["chats", "--help"],
        ["todo", "add", "--help"],
        ["chats", "--js"],  # an abbreviation argparse accepts
        ["chats", "--host=laptop"],
        ["chats", "--", "--json"],
        ["chats", "--json", "extra"],
        ["chats", "--host"],
        ["chats", "--host", ""],
        ["nosuch"],
        ["todo"],
        ["todo", "add"],
        ["todo", "--home", "/tmp/h", "list"],
        ["todo", "take", "-3"],
        ["todo", "take", "0"],
        ["events", "--limit", "-3"],
        ["todo", "report", "3", "--outcome", "done", "--by", "me"],
        ["todo", "report", "3", "--outcome", "done"],
        ["resend", "zz", "--by", "dad"],
        ["web", "--bind", "not-an-address"],
        ["--home", "", "status"],
        ["completion"],
        ["completion", "tcsh"],
    ],
    ids=" ".join,
)
def test_help_and_what_argparse_refuses_are_left_to_argparse(argv: list[str]) -> None:
    assert quick.parse(COMMANDS, argv) is None
