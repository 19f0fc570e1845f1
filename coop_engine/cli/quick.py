"""The command line read from the command table (cli/table.py) without argparse, for
the shapes people and scripts type: `[--home DIR] COMMAND [ACTION] ARGS`, each option
spelled whole and apart from its value. Anything else (help, an abbreviation,
`--opt=value`, `--`, a value that starts with a dash, a value its type or choices
refuse, a missing or extra argument) is left to argparse (None), which words its help
and its errors; for what this reads, the namespace is argparse's own, value for value
(tests/engine/test_cli_quick.py parses every example and its variants both ways).

argparse, with the gettext and locale it loads to translate its words, costs more
milliseconds than `coop chats` spends on its 200 chats' files.
"""

from __future__ import annotations

from coop_engine.cli.table import COMMAND_HOME, SUPPRESS, TOP_HOME

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    from argparse import Namespace
    from collections.abc import Mapping, Sequence
    from typing import Any

    from coop_engine.cli.table import Arg, Command
else:
    # What a handler reads of argparse's Namespace: the values as attributes.
    from types import SimpleNamespace as Namespace


class _Declined(Exception):
    """A command line this reader leaves to argparse."""


def parse(commands: Mapping[str, Command], argv: Sequence[str]) -> Namespace | None:
    """The namespace argparse would give for `argv`, or None to ask argparse."""
    try:
        values = _parse(commands, list(argv))
    except _Declined:
        return None
    return Namespace(**values)


def _parse(commands: Mapping[str, Command], argv: list[str]) -> dict[str, Any]:
    values: dict[str, Any] = {TOP_HOME.dest: None}
    words = iter(argv)
    word = next(words, None)
    while word == "--home":
        values[TOP_HOME.dest] = _value(TOP_HOME, next(words, None))
        word = next(words, None)
    command = commands.get(word) if word is not None else None
    if command is None:
        raise _Declined
    values["command"] = word
    while command.actions:
        action = next(words, None)
        then = command.actions.get(action) if action is not None else None
        if then is None:
            raise _Declined
        values[str(command.dest)] = action
        command = then
    values.update(_arguments((COMMAND_HOME, *command.args), list(words)))
    values["handler"] = command.handler
    return values


def _arguments(args: Sequence[Arg], words: list[str]) -> dict[str, Any]:
    """One parser's values: its options, by their whole flag, and its positionals in
    order; the defaults of those not given."""
    options = {flag: arg for arg in args if not arg.positional for flag in arg.flags}
    positionals = [arg for arg in args if arg.positional]
    given: dict[str, Any] = {}
    seen: set[str] = set()
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if not word.startswith("-"):
            if not positionals:
                raise _Declined
            arg = positionals.pop(0)
        elif word in options:
            arg = options[word]
            if arg.flag:
                given[arg.dest] = True
                seen.add(arg.dest)
                continue
            if index == len(words):
                raise _Declined
            word = words[index]
            index += 1
        else:
            raise _Declined
        given[arg.dest] = _value(arg, word)
        seen.add(arg.dest)
    if positionals:
        raise _Declined
    for arg in {arg.dest: arg for arg in args}.values():
        if arg.dest in seen:
            continue
        if arg.options.get("required"):
            raise _Declined
        default = arg.options.get("default", False if arg.flag else None)
        if default != SUPPRESS:
            # argparse passes a default written as text through the type, as typed.
            given[arg.dest] = _typed(arg, default) if isinstance(default, str) else default
    return given


def _value(arg: Arg, word: str | None) -> Any:
    """`word` as `arg` takes it from the command line; a missing word, a dash, or one
    its type or its choices refuse is argparse's to word."""
    if word is None or word.startswith("-"):
        raise _Declined
    value = _typed(arg, word)
    choices = arg.options.get("choices")
    if choices is not None and value not in choices:
        raise _Declined
    return value


def _typed(arg: Arg, word: str) -> Any:
    kind = arg.options.get("type")
    try:
        return kind(word) if kind is not None else word
    except Exception:  # argparse calls it again, and words the refusal (or the crash)
        raise _Declined from None
