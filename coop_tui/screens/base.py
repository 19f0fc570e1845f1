"""What every screen of the app shares: a typed way to the app, and failed workers
turned into a visible notice (the app's one handler)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from textual.worker import Worker

if TYPE_CHECKING:
    from textual.dom import DOMNode

    from coop_tui.seat import TheApp

    _Node = DOMNode
else:
    _Node = object  # a plain mixin at run time: the screen's own classes decide its CSS


class OfTheApp(_Node):
    """Mixed into each screen: `self.coop` is the CoopApp, typed as what a screen may ask
    of it (coop_tui/seat.py)."""

    @property
    def coop(self) -> TheApp:
        return cast("TheApp", self.app)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        # Worker.StateChanged does not bubble: each screen hands its own workers' news on.
        self.coop.report_worker(event)
