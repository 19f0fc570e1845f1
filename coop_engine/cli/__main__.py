"""`python -m coop_engine.cli`: the same as the `coop` command."""

from coop_engine.cli.main import run

run()
