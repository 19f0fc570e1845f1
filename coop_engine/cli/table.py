"""The `coop` command's table: each command's words, help, arguments and handler, as
data. Two readers share it: cli/parser.py builds argparse's parser from it (for `--help`,
a usage error, completion, or a command line the quick one leaves alone), and
cli/quick.py reads a well-formed command line from it without loading argparse, which
with its gettext and locale costs milliseconds of every call (issue 32, item 1).
"""

from __future__ import annotations

from coop_engine.cli.arguments import home_dir

TYPE_CHECKING = False  # typing costs milliseconds at start-up; the CLI starts often
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    Handler = Callable[[argparse.Namespace], int]

# argparse's own value for "not in the namespace" and "not in --help"; cli/parser.py hands
# argparse its own object (which argparse compares by identity) in its place.
SUPPRESS = "==SUPPRESS=="


class Arg:
    """One `add_argument(*flags, **options)` of a command's parser."""

    __slots__ = ("flags", "options")

    def __init__(self, *flags: str, **options: Any) -> None:
        self.flags = flags
        self.options = options

    @property
    def positional(self) -> bool:
        return not self.flags[0].startswith("-")

    @property
    def dest(self) -> str:
        """The namespace's name for it, as argparse derives one."""
        if "dest" in self.options:
            return str(self.options["dest"])
        if self.positional:
            return self.flags[0]
        longs = [flag for flag in self.flags if flag.startswith("--")]
        return (longs or self.flags)[0].lstrip("-").replace("-", "_")

    @property
    def flag(self) -> bool:
        """Whether it takes no value (a store_true switch)."""
        return self.options.get("action") == "store_true"


class Command:
    """A command word's parser: its `help`, its `args` (after the `--home` every
    command's parser takes), and either its `handler` or its `actions` (a second word,
    kept in the namespace under `dest`)."""

    __slots__ = ("help", "args", "handler", "actions", "dest")

    def __init__(
        self,
        help: str,
        args: tuple[Arg, ...] = (),
        handler: Handler | None = None,
        actions: dict[str, Command] | None = None,
        dest: str | None = None,
    ) -> None:
        self.help = help
        self.args = args
        self.handler = handler
        self.actions = actions or {}
        self.dest = dest


# `coop --home DIR COMMAND`, and `coop COMMAND --home DIR` (every command's parser takes
# it; the later one wins, since a command's own never defaults over the first).
TOP_HOME = Arg(
    "--home",
    type=home_dir,
    help="state directory (default $COOP_HOME or ~/.local/share/coop)",
)
COMMAND_HOME = Arg(
    "--home",
    type=home_dir,
    default=SUPPRESS,  # never overrides `coop --home DIR COMMAND`
    help="state directory (as `coop --home DIR COMMAND`)",
)
