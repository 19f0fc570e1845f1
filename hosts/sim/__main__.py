"""``python -m hosts.sim chat ...``: start one simulated Claude Code chat.
``python -m hosts.sim codex ...``: write threads into a simulated Codex home.
``python -m hosts.sim codex-holder ...``: hold a Codex thread open, running its queue."""

from __future__ import annotations

import sys

from hosts.sim import app, codex, codex_holder


def main(argv: list[str] | None = None) -> int:
    """Dispatch the subcommand; returns the exit status (2 for a usage error)."""
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "codex":
        return codex.main(args[1:])
    if args and args[0] == "codex-holder":
        return codex_holder.main(args[1:])
    if not args or args[0] != "chat":
        print("usage: python -m hosts.sim chat --config-dir DIR [options]", file=sys.stderr)
        print("       python -m hosts.sim codex --codex-home DIR [options]", file=sys.stderr)
        print(
            "       python -m hosts.sim codex-holder --codex-home DIR --thread ID [options]",
            file=sys.stderr,
        )
        return 2
    return app.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
