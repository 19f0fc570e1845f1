"""Waiting on a simulated chat (hosts.sim.launch.SimChat) by what it wrote, not by time."""

from __future__ import annotations

import json

from waiting import wait_until

from hosts.sim.launch import SimChat


def turn_over(chat: SimChat, msg_id: str) -> None:
    """The chat's turn for the frame `msg_id` has ended and the chat is idle again: it
    writes nothing more until something new reaches it. (The chat writes turn_duration,
    then its idle status: the status read after the entry is the last word.)"""

    def over() -> bool:
        entries = chat.transcript_entries()
        named = [index for index, entry in enumerate(entries) if msg_id in json.dumps(entry)]
        ended = bool(named) and any(
            entry.get("subtype") == "turn_duration" for entry in entries[named[0] :]
        )
        return ended and chat.entry().get("status") == "idle"

    wait_until(over, f"the chat's turn for {msg_id} over and the chat idle")
