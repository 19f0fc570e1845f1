"""argparse's parser of the `coop` command, built from the command table (cli/table.py):
what prints `--help` (with its examples block), words a usage error, makes the
completion scripts, and parses whatever command line cli/quick.py leaves to it."""

from __future__ import annotations

import argparse
import os
import sys

from coop_engine.cli import table

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence
    from typing import Any


def _columns() -> int:
    """The terminal's width, as shutil would say, without importing shutil."""
    try:
        return int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        pass
    stdout = sys.__stdout__
    try:
        return os.get_terminal_size(stdout.fileno()).columns if stdout else 80
    except (ValueError, OSError):
        return 80


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    # argparse builds a formatter for every argument it adds, and the stock one imports
    # shutil (with bz2, lzma and zlib) to measure the terminal: that costs more than
    # `coop chats` spends reading 200 chats. Raw: the examples block keeps its lines.
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)


class Parser(argparse.ArgumentParser):
    """Every command's parser takes `--home` too (`coop todo list --home DIR`), unless
    it is the top one, whose `--home` comes before the command; a command may say again
    what `--home` means for it (the later definition wins)."""

    def __init__(self, *args: Any, home: bool = True, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        kwargs.setdefault("conflict_handler", "resolve")
        super().__init__(*args, **kwargs)
        if home:
            add(self, table.COMMAND_HOME)


class Version(argparse.Action):
    """`coop --version`: Coop's version, from its package's constant (the installed
    package's metadata says the same, and reading it costs tens of milliseconds)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        from coop_engine import __version__

        print(f"coop {__version__}")
        parser.exit()


def add(parser: argparse.ArgumentParser, arg: table.Arg) -> None:
    """`parser.add_argument` of one table entry, with argparse's own SUPPRESS."""
    options: dict[str, Any] = {
        key: argparse.SUPPRESS if value == table.SUPPRESS else value
        for key, value in arg.options.items()
    }
    parser.add_argument(*arg.flags, **options)


def build(commands: Mapping[str, table.Command], argv: Sequence[str] = ()) -> Parser:
    """The parser. For a known command word only that command's subparser is built:
    building all of them costs more than `coop chats` itself."""
    parser = Parser(
        prog="coop",
        description="Coordinate a fleet of Claude Code and Codex chats.",
        home=False,
    )
    add(parser, table.TOP_HOME)
    parser.add_argument("--version", action=Version, help="print Coop's version")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    word = _command_word(argv)
    for name, command in commands.items():
        if word not in commands or name == word:
            _register(sub, name, command)
    if "-h" in argv or "--help" in argv:
        from coop_engine.cli import examples

        examples.attach(parser)
    return parser


def _register(sub: argparse._SubParsersAction[Parser], name: str, command: table.Command) -> None:
    parser = sub.add_parser(name, help=command.help)
    for arg in command.args:
        add(parser, arg)
    if command.actions:
        actions = parser.add_subparsers(dest=command.dest, metavar="ACTION", required=True)
        for action, then in command.actions.items():
            _register(actions, action, then)
    else:
        parser.set_defaults(handler=command.handler)


def _command_word(argv: Sequence[str]) -> str | None:
    after_home = False
    for arg in argv:
        if after_home:
            after_home = False
        elif arg == "--home":
            after_home = True
        elif not arg.startswith("-"):
            return arg
    return None
