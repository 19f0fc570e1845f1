"""Simulated Claude Code chats: real processes that behave as the real receiver does.

Built from DESIGN.md sections 5 and 8 alone; nothing here imports Coop's own code.
Start one with ``python -m hosts.sim chat --config-dir DIR ...`` (see ``options``).
"""
