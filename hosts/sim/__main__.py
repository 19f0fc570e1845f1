"""``python -m hosts.sim chat ...``: start one simulated Claude Code chat."""

from __future__ import annotations

import sys

from hosts.sim import app


def main(argv: list[str] | None = None) -> int:
    """Dispatch the subcommand; returns the exit status (2 for a usage error)."""
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] != "chat":
        print("usage: python -m hosts.sim chat --config-dir DIR [options]", file=sys.stderr)
        return 2
    return app.main(args[1:])


if __name__ == "__main__":
    sys.exit(main())
