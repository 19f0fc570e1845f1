"""`make screenshots`: the demo's fleet, the real app driven by Textual's pilot, and an
SVG of each screen in `screenshots/`.

    python -m coop_tui.screenshots [--out screenshots]
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from textual.pilot import Pilot

from coop_engine import queries
from coop_engine.loop.demo import HINT, Demo
from coop_tui.app import CoopApp
from coop_tui.screens.adoption import AdoptionScreen, TakersTable
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import ConfirmResend
from coop_tui.screens.help import HelpScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

SIZE = (160, 48)
WAIT_SECONDS = 20.0


async def until(pilot: Pilot[None], check: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"screenshots: no {what} within {WAIT_SECONDS:.0f} s")
        await pilot.pause(0.05)


async def settled(pilot: Pilot[None]) -> None:
    """Every worker done and its result drawn."""
    deadline = time.monotonic() + WAIT_SECONDS
    while any(not w.is_finished for w in pilot.app.workers) and time.monotonic() < deadline:
        await pilot.pause(0.05)
    await pilot.pause(0.2)
    await pilot.wait_for_scheduled_animations()


class Camera:
    def __init__(self, out: Path) -> None:
        self.out = out
        self.written: list[Path] = []

    async def shoot(self, pilot: Pilot[None], name: str) -> None:
        await settled(pilot)
        path = self.out / f"{name}.svg"
        path.write_text(pilot.app.export_screenshot(title=f"coop · {name}"), encoding="utf-8")
        self.written.append(path)


async def tour(pilot: Pilot[Any], camera: Camera) -> None:
    """Each screen, reached by the keys a user would press."""
    app = cast(CoopApp, pilot.app)
    await until(pilot, lambda: app.outbox_pane.row_count > 0, "outbox rows")
    await until(pilot, lambda: len(app.surveys) == len(app.office.names), "answer from every Mac")
    await camera.shoot(pilot, "main")

    envelopes = queries.outbox()  # oldest first
    accepted = next(
        row for row in envelopes if row["kind"] == "invitation" and row["facts"]["accepted"]
    )
    await select(pilot, app.outbox_pane, accepted["id"])
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, DeliveryScreen), "delivery detail")
    detail = cast(DeliveryScreen, app.screen)
    await until(pilot, lambda: detail.detail is not None, "delivery detail loaded")
    await camera.shoot(pilot, "delivery-detail")
    await pilot.press("escape")

    lost = next(
        row for row in reversed(envelopes) if row["state"] == "expired" and not row["resent_as"]
    )
    await select(pilot, app.outbox_pane, lost["id"])
    await pilot.press("r")
    await until(pilot, lambda: isinstance(app.screen, ConfirmResend), "confirmation")
    await camera.shoot(pilot, "confirm-send-again")
    await pilot.press("n")

    await pilot.press("a")
    await until(pilot, lambda: isinstance(app.screen, AdoptionScreen), "adoption review")
    await until(pilot, lambda: app.screen.query_one(TakersTable).row_count > 0, "CLI takers")
    await camera.shoot(pilot, "adoption-review")
    await pilot.press("escape")

    importer = next(c for c in app.surveys["office"]["chats"] if c["name"] == "importer")
    await select(pilot, app.sessions_pane, f"office/claude:{importer['session_id']}")
    await pilot.press("c")
    await until(pilot, lambda: isinstance(app.screen, InspectorScreen), "chat inspector")
    await camera.shoot(pilot, "chat-inspector")
    await pilot.press("escape")

    await pilot.press("exclamation_mark")
    await until(pilot, lambda: isinstance(app.screen, NotificationsScreen), "notifications")
    await until(pilot, lambda: app.screen.query_one(NoticesTable).row_count > 0, "notices")
    await camera.shoot(pilot, "notifications")
    await pilot.press("escape")

    await pilot.press("question_mark")
    await until(pilot, lambda: isinstance(app.screen, HelpScreen), "help")
    await camera.shoot(pilot, "help")
    await pilot.press("escape")


async def select(pilot: Pilot[None], table: Any, key: str) -> None:
    table.focus()
    table.move_cursor(row=table.get_row_index(key))
    await pilot.pause()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coop_tui.screenshots")
    parser.add_argument("--out", type=Path, default=Path("screenshots"))
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    camera = Camera(args.out)
    with Demo(None, say=lambda line: print(line, file=sys.stderr)) as demo:
        assert demo.office is not None
        app = CoopApp(demo.home, demo.office, banner=HINT, first_adoption_after=60.0)

        async def drive(pilot: Pilot[object]) -> None:
            try:
                await tour(pilot, camera)
            finally:
                app.exit()

        app.run(headless=True, size=SIZE, auto_pilot=drive)
    for path in camera.written:
        print(path)
    return 0 if len(camera.written) == 7 else 1


if __name__ == "__main__":
    sys.exit(main())
