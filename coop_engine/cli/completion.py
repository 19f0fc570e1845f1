"""`coop completion bash|zsh|fish`: a completion script made from the argument parser
itself, so a command or an option added to the parser completes without anyone writing
it twice. It completes command words and options; values (ids, names) are left to the
person, since knowing them would mean reading the ledger or the fleet at every Tab."""

from __future__ import annotations

import argparse

from coop_engine.cli.examples import subcommands

SHELLS = ("bash", "zsh", "fish")


def commands(parser: argparse.ArgumentParser, words: str = "") -> dict[str, list[str]]:
    """Every command path (`""`, `todo`, `todo add`, ...) with what may follow it: its
    subcommand words, then its options."""
    children = subcommands(parser)
    options = [
        option
        for action in parser._actions
        if action.help is not argparse.SUPPRESS
        for option in action.option_strings
    ]
    found = {words: [*children, *options]}
    for name, child in children.items():
        found.update(commands(child, f"{words} {name}".strip()))
    return found


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script for `shell`."""
    table = commands(parser)
    if shell == "fish":
        return _fish(table)
    bash = _bash(table)
    if shell == "zsh":
        return "#compdef coop\nautoload -U +X bashcompinit && bashcompinit\n" + bash
    return bash


def _bash(table: dict[str, list[str]]) -> str:
    cases = "\n".join(
        f"        '{path}') words='{' '.join(words)}' ;;" for path, words in sorted(table.items())
    )
    return f"""# coop completion for bash (made by `coop completion bash`)
_coop() {{
    local path="" word i
    # The command path so far: the words before the cursor that are not options or
    # an option's value (only --home takes one before the command).
    for ((i = 1; i < COMP_CWORD; i++)); do
        word="${{COMP_WORDS[i]}}"
        case "$word" in
        --home) ((i++)) ;;
        -*) ;;
        *) case " $(_coop_words "$path") " in
            *" $word "*) path="${{path:+$path }}$word" ;;
            esac ;;
        esac
    done
    COMPREPLY=($(compgen -W "$(_coop_words "$path")" -- "${{COMP_WORDS[COMP_CWORD]}}"))
}}
_coop_words() {{
    local words=""
    case "$1" in
{cases}
    esac
    printf '%s' "$words"
}}
complete -F _coop coop
"""


def _fish(table: dict[str, list[str]]) -> str:
    lines = ["# coop completion for fish (made by `coop completion fish`)", "complete -c coop -f"]
    for path, words in sorted(table.items()):
        seen = [f"__fish_seen_subcommand_from {word}" for word in path.split()]
        condition = "; and ".join(seen) or "__fish_use_subcommand"
        for word in words:
            if word.startswith("--"):
                lines.append(f"complete -c coop -n '{condition}' -l {word[2:]}")
            elif word.startswith("-"):
                lines.append(f"complete -c coop -n '{condition}' -s {word[1:]}")
            else:
                lines.append(f"complete -c coop -n '{condition}' -a {word}")
    return "\n".join(lines) + "\n"
