"""Dad told outside the app: a desktop notification for each event that needs a
decision (the same alerts the app toasts), as `[notify]` in fleet.toml allows.

macOS: `terminal-notifier` when it is on PATH, else `osascript`; Linux: `notify-send`
when it is on PATH; otherwise the terminal's bell. Chat text never reaches a shell or
a script's source: every command is an argv list, and osascript gets the text as the
arguments of an `on run argv` script, never interpolated into AppleScript.
"""

from __future__ import annotations

import html
import shutil
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from coop_engine.formats import one_line
from hosts.fleet import Notify

Runner = Callable[[list[str]], None]
Which = Callable[[str], str | None]
RUN_SECONDS = 10.0
# The text arrives as `argv`: AppleScript never parses it.
OSASCRIPT = (
    "on run argv",
    "display notification (item 2 of argv) with title (item 1 of argv)",
    "end run",
)


def run_quietly(argv: list[str]) -> None:
    """Run a notifier's command without a shell; a notifier that fails tells nothing."""
    try:
        subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=RUN_SECONDS,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        pass


def ring_bell() -> None:
    sys.stderr.write("\a")
    sys.stderr.flush()


def message_of(alert: dict[str, Any]) -> str:
    """One line naming the chat, the Mac and the todo, then what happened. It begins
    with Coop's own words, never with a chat's, so no notifier takes it for an option."""
    where = []
    if alert.get("chat"):
        where.append(f"chat {alert['chat']}")
    if alert.get("mac"):
        where.append(f"on {alert['mac']}")
    if alert.get("todo"):
        title = alert.get("todo_title")
        where.append(f"todo #{alert['todo']}" + (f' "{title}"' if title else ""))
    text = str(alert.get("text") or "")
    return one_line(f"{' '.join(where)}: {text}" if where else text)


class Notifier:
    """Tells Dad of alerts outside the app; the platform, PATH lookup, runner and bell
    are injectable, so every platform's command is testable on any machine."""

    def __init__(
        self,
        settings: Notify,
        *,
        platform: str = sys.platform,
        which: Which = shutil.which,
        runner: Runner = run_quietly,
        bell: Callable[[], None] = ring_bell,
    ) -> None:
        self.settings = settings
        self.platform = platform
        self.which = which
        self.runner = runner
        self.bell = bell

    def wants(self, alert: dict[str, Any]) -> bool:
        return not self.settings.quiet and alert.get("kind") in self.settings.on

    def command(self, title: str, message: str) -> list[str] | None:
        """The argv that shows this notification here; None: only the bell can."""
        if self.platform == "darwin":
            notifier = self.which("terminal-notifier")
            if notifier:
                return [notifier, "-title", title, "-message", message, "-group", "coop"]
            osascript = self.which("osascript")
            if osascript:
                script = [arg for line in OSASCRIPT for arg in ("-e", line)]
                return [osascript, *script, title, message]
            return None
        notify_send = self.which("notify-send")
        if notify_send:
            # The body may hold the notification server's markup: chat text is escaped.
            return [notify_send, "--app-name=Coop", "--", title, html.escape(message)]
        return None

    def tell(self, alert: dict[str, Any]) -> bool:
        """Notify of one alert if `[notify]` wants it; True when something was told."""
        if not self.wants(alert):
            return False
        title = one_line(f"Coop: {alert.get('title') or alert.get('kind')}")
        argv = self.command(title, message_of(alert))
        if argv is None:
            self.bell()
        else:
            self.runner(argv)
        return True
