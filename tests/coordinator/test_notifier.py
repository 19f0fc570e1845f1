"""The notifier outside the app: the exact argv of each platform's command, run as a
real child process that records what it got; a chat's markup, escapes and shell
metacharacters arrive as inert argv; `[notify]` quiet and `on` are obeyed."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from coop_engine.loop.notifier import OSASCRIPT, Notifier, message_of, run_quietly
from coop_engine.queries.status import ALERT_KINDS
from hosts.fleet import NOTIFY_EVENTS, Notify

CHAT = "claude:5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"
HOSTILE = "x\"; touch PWNED; $(touch PWNED2) `touch PWNED3` [bold]b[/] \x1b[31m' & end"


def recorder(folder: Path, name: str) -> tuple[str, Path]:
    """An executable named `name` that writes its argv (without itself) as JSON, whole:
    written beside the record and renamed onto it, so a record that exists is complete."""
    record = folder / f"{name}.json"
    script = folder / "bin" / name
    script.parent.mkdir(exist_ok=True)
    script.write_text(
        f"#!{sys.executable}\nimport json, os, sys\n"
        f"open({str(record)!r} + '.part', 'w').write(json.dumps(sys.argv[1:]))\n"
        f"os.replace({str(record)!r} + '.part', {str(record)!r})\n"
    )
    script.chmod(0o755)
    return str(script), record


def alert(**fields: Any) -> dict[str, Any]:
    base = {
        "kind": "expired",
        "title": "Delivery expired",
        "text": "not delivered: the receiver sat idle (receiver-idle-without-entry)",
        "chat": HOSTILE,
        "mac": "laptop",
        "todo": 7,
        "todo_title": "Fix it; rm -rf ~",
        "outbox": "0f6e",
    }
    return {**base, **fields}


def on_path(*found: tuple[str, str]) -> Any:
    paths = dict(found)
    return lambda name: paths.get(name)


def test_the_alert_kinds_are_the_ones_notify_on_names() -> None:
    assert ALERT_KINDS == NOTIFY_EVENTS


def test_macos_osascript_gets_the_text_as_argv_of_an_on_run_script(tmp_path: Path) -> None:
    osascript, record = recorder(tmp_path, "osascript")
    notifier = Notifier(Notify(), platform="darwin", which=on_path(("osascript", osascript)))
    assert notifier.tell(alert())
    argv = json.loads(record.read_text())
    message = message_of(alert())
    assert argv == [
        "-e",
        "on run argv",
        "-e",
        "display notification (item 2 of argv) with title (item 1 of argv)",
        "-e",
        "end run",
        "Coop: Delivery expired",
        message,
    ]
    assert list(OSASCRIPT) == argv[1:6:2]  # the script's source holds no text of the alert
    assert message.startswith('chat x"; touch PWNED; $(touch PWNED2) `touch PWNED3` [bold]b[/]')
    assert "\\x1b[31m" in message and "\x1b" not in message  # the escape shown, never sent
    assert 'todo #7 "Fix it; rm -rf ~": not delivered' in message
    assert not list(Path.cwd().glob("PWNED*")) and not list(tmp_path.glob("PWNED*"))


def test_macos_prefers_terminal_notifier_when_it_is_on_path(tmp_path: Path) -> None:
    found, record = recorder(tmp_path, "terminal-notifier")
    which = on_path(("terminal-notifier", found), ("osascript", "/usr/bin/osascript"))
    Notifier(Notify(), platform="darwin", which=which).tell(alert())
    argv = json.loads(record.read_text())
    assert argv == [
        "-title",
        "Coop: Delivery expired",
        "-message",
        message_of(alert()),
        "-group",
        "coop",
    ]


def test_linux_notify_send_gets_argv_with_its_markup_escaped(tmp_path: Path) -> None:
    found, record = recorder(tmp_path, "notify-send")
    shown = alert(chat="<b>bold</b> & $HOME")
    Notifier(Notify(), platform="linux", which=on_path(("notify-send", found))).tell(shown)
    argv = json.loads(record.read_text())
    assert argv[:3] == ["--app-name=Coop", "--", "Coop: Delivery expired"]
    assert argv[3].startswith("chat &lt;b&gt;bold&lt;/b&gt; &amp; $HOME on laptop todo #7")


def test_without_a_notifier_on_path_the_terminal_bell_rings(tmp_path: Path) -> None:
    rung: list[bool] = []

    def runner(argv: list[str]) -> None:
        raise AssertionError(f"nothing to run, yet ran {argv}")

    notifier = Notifier(Notify(), platform="linux", which=on_path(), runner=runner)
    notifier.bell = lambda: rung.append(True)
    assert notifier.tell(alert())
    assert rung == [True]


def test_quiet_tells_nothing_and_on_keeps_only_the_events_it_names(tmp_path: Path) -> None:
    ran: list[list[str]] = []
    which = on_path(("notify-send", "/usr/bin/notify-send"))
    quiet = Notifier(Notify(quiet=True), platform="linux", which=which, runner=ran.append)
    assert not any(quiet.tell(alert(kind=kind)) for kind in NOTIFY_EVENTS)
    assert ran == []
    held_only = Notifier(Notify(on=("held",)), platform="linux", which=which, runner=ran.append)
    told = [kind for kind in NOTIFY_EVENTS if held_only.tell(alert(kind=kind, title=kind))]
    assert told == ["held"] and len(ran) == 1 and ran[0][3] == "Coop: held"


@pytest.mark.parametrize("kind", ["delivered", "received", "take", None])
def test_a_routine_event_is_never_told(kind: str | None) -> None:
    ran: list[list[str]] = []
    notifier = Notifier(Notify(), platform="linux", which=on_path(), runner=ran.append)
    notifier.bell = lambda: ran.append(["bell"])
    assert not notifier.tell(alert(kind=kind))
    assert ran == []


def test_coop_serve_tells_the_notifier_of_an_expiry_and_not_of_its_history(
    tmp_path: Path,
) -> None:
    """The coordinator's own loop: what happened before it started is not news; an
    expiry after it is told once, through a real child process, as argv."""
    from officekit import Office
    from waiting import wait_until

    from coop_engine.loop.serve import Server
    from coop_engine.models import Event
    from hosts.fleet import Fleet

    office = Office(tmp_path / "office")
    try:
        script, record = recorder(tmp_path, "notify-send")
        told: list[list[str]] = []

        def runner(argv: list[str]) -> None:
            told.append(argv)
            run_quietly(argv)

        which = on_path(("notify-send", script))
        notifier = Notifier(Notify(), platform="linux", which=which, runner=runner)
        engine = office.engine
        old = engine.invite(engine.add_todo("Before serve")["id"], CHAT, "office")["outbox"]
        engine.mark_uncertain(old, {"host": "office", "offset": 0})
        engine.expire(old, {"reason": "receiver-idle-without-entry"})  # history, not news
        fleet = Fleet("office", {"office": office.hosts["office"]})
        server = Server(engine, fleet, office.home, office.log.append, notifier=notifier)
        thread = server.start_thread()
        try:
            # Its first round: the baseline.
            wait_until(lambda: server._told_upto is not None, "serve's first look at the ledger")
            new = engine.invite(engine.add_todo("After serve")["id"], CHAT, "office")["outbox"]
            engine.mark_uncertain(new, {"host": "office", "offset": 0})
            engine.expire(new, {"reason": "receiver-idle-without-entry"})
            last = Event.select().order_by(Event.id.desc()).first().id
            wait_until(
                lambda: record.exists() and (server._told_upto or 0) >= last,
                "serve telling the notifier",
            )
        finally:
            server.stop()
            thread.join(15)
        assert len(told) == 1, told
        argv = json.loads(record.read_text())
        assert argv[:3] == ["--app-name=Coop", "--", "Coop: Delivery expired"]
        assert "After serve" in argv[3] and "Before serve" not in argv[3]
    finally:
        office.stop()
