"""The command palette: every action of the app, found by name."""

from __future__ import annotations

from functools import partial

from textual.command import DiscoveryHit, Hit, Hits, Provider

ACTIONS = (
    ("Send again", "Send again the selected expired delivery (once, as Dad)", "resend"),
    (
        "Withdraw",
        "Take back the selected envelope: never sent, or still in Codex's queue (as Dad)",
        "withdraw",
    ),
    ("Adoption review", "CLI takers, where each was searched, adopt one", "adoption"),
    ("Inspect chat", "Registry entry and transcript tail of the selected chat", "inspect"),
    ("Invite", "Invite a chat to a todo", "invite"),
    ("Add a todo", "A new todo, as Dad", "add_todo"),
    ("Notifications", "What Dad was told, newest first", "notifications"),
    ("Filter outbox", "Envelopes matching every word, in any column, as you type", "filter"),
    ("Clear filters", "Every Mac's chats and every envelope", "clear_filter"),
    ("Focus Macs", "Move to the Macs pane", "focus_pane('hosts')"),
    ("Focus chats", "Move to the chats pane", "focus_pane('sessions')"),
    ("Focus outbox", "Move to the outbox pane", "focus_pane('outbox')"),
    ("Help", "Every key, and what the fact marks mean", "help"),
)


class CoopCommands(Provider):
    async def discover(self) -> Hits:
        for name, help_text, action in ACTIONS:
            yield DiscoveryHit(name, partial(self.app.run_action, action), help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, action in ACTIONS:
            score = matcher.match(name)
            if score > 0:
                yield Hit(
                    score,
                    matcher.highlight(name),
                    partial(self.app.run_action, action),
                    help=help_text,
                )
