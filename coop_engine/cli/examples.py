"""The "examples" block at the end of each command's `--help`: what a person types, with
ids of the shapes Coop prints. A test parses every line, so none can drift from the
parser."""

from __future__ import annotations

import argparse

# By the command's words after `coop`; each line is a whole command line.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "": ("coop", "coop --home ~/coop-office status", "coop --version"),
    "todo": ("coop todo add 'Fix the flaky importer test'", "coop todo list --json"),
    "todo add": (
        "coop todo add 'Fix the flaky importer test'",
        "coop todo add 'Ship the release notes' --body 'Draft them from the log' --project docs",
    ),
    "todo list": ("coop todo list", "coop todo list --json"),
    "todo take": ("coop todo take 3",),
    "todo report": ("coop todo report 3 --outcome 'merged in #412' --by worker",),
    "outbox": ("coop outbox", "coop outbox --json"),
    "sessions": ("coop sessions", "coop sessions --json"),
    "notifications": ("coop notifications",),
    "events": ("coop events --limit 20", "coop events --json"),
    "resend": ("coop resend 1a2b3c4d --by dad",),
    "withdraw": ("coop withdraw 1a2b3c4d --by dad",),
    "status": ("coop status", "coop status --json"),
    "invite": (
        "coop invite 3 --session importer",
        "coop invite 3 --session claude:aac872d5 --host laptop",
        "coop invite 4 --session codex:01a24937-7",
    ),
    "obligations": ("coop obligations", "coop obligations --json"),
    "obligation": ("coop obligation review 2 --decision wait --by dad",),
    "obligation review": (
        "coop obligation review 2 --decision wait --by dad",
        "coop obligation review 2 --decision release --by chief",
    ),
    "adopt": ("coop adopt --once", "coop adopt --once --json"),
    "chief": ("coop chief show", "coop chief set reviewer"),
    "chief set": ("coop chief set reviewer",),
    "chief show": ("coop chief show",),
    "serve": ("coop serve", "coop serve --interval 10", "coop serve --standby --lease 15"),
    "tick": ("coop tick", "coop tick --at 1790000000"),
    "chats": ("coop chats", "coop chats --host laptop --json"),
    "hosts": ("coop hosts", "coop hosts --json"),
    "chat": ("coop chat show importer",),
    "chat show": ("coop chat show importer", "coop chat show claude:aac872d5 --host laptop --json"),
    "tui": ("coop tui", "coop tui --read-only"),
    "web": ("coop web", "coop web --read-only --port 8421"),
    "demo": ("coop demo", "coop demo --home /tmp/coop-demo"),
    "completion": (
        "coop completion bash > ~/.local/share/bash-completion/completions/coop",
        "coop completion zsh > ~/.zfunc/_coop",
        "coop completion fish > ~/.config/fish/completions/coop.fish",
    ),
}


def attach(parser: argparse.ArgumentParser, words: str = "") -> None:
    """Give `parser` and every subcommand parser it holds its examples block."""
    found = EXAMPLES.get(words)
    if found:
        parser.epilog = "examples:\n" + "\n".join(f"  {line}" for line in found)
    for name, child in subcommands(parser).items():
        attach(child, f"{words} {name}".strip())


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The subcommand parsers `parser` holds, by their names (none for a leaf)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}
