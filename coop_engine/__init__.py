"""Coop's engine: the ledger, the coordinator's loop and the `coop` command."""

# The version `coop --version` prints, kept equal to pyproject.toml's by a test
# (tests/engine/test_cli_conventions.py): reading the installed package's metadata
# instead costs `coop --version` more than `coop chats` takes at 200 chats.
__version__ = "0.1.0"
