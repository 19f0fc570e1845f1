"""What a screen may ask of the app, as a type: the screens reach the running CoopApp
through this protocol, never by importing `coop_tui.app` (which imports the screens), so
the app's package has no import cycle. A test checks that CoopApp satisfies it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from textual.worker import Worker

    from coop_engine.engine import Engine
    from coop_engine.loop.office import Office
    from coop_tui.chats import Directory
    from coop_tui.widgets.panes import OutboxPane


class TheApp(Protocol):
    """The app as its screens see it."""

    engine: Engine | None  # None until the ledger is open
    office: Office
    chats: Directory  # every chat by its name and short id, as the panes show them
    outbox_pane: OutboxPane
    surveys: dict[str, dict[str, Any]]  # each Mac's latest survey, by its name

    def report_worker(self, event: Worker.StateChanged) -> None:
        """A screen's worker's failure made a visible notice (the app's one handler)."""
