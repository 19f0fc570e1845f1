"""Properties of the app's text boundary (coop_tui/shown.py): for any string a chat, a
Mac or a paste could write (controls, markup, bidi), every cell of every pane, the
dialogs' words, the delivery detail, the inspector's lines, the header, every toast and
the desktop notifier's argv hold no character that steers a terminal, show the string's
every character (nothing of it taken for markup), and give it no style it did not get
from Coop: a style never changes inside what the chat wrote."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings
from rich.console import Console
from rich.text import Text
from untrusted import HOSTILE, steering

from coop_engine.formats import one_line
from coop_engine.loop.notifier import Notifier
from coop_tui.app import CoopApp
from coop_tui.chats import Called
from coop_tui.screens.adoption import TakersTable
from coop_tui.screens.delivery import render_detail
from coop_tui.screens.dialogs import chat_label, resend_words, todo_label, withdrawal_words
from coop_tui.screens.inspector import describe_line, labelled, registry_entry
from coop_tui.screens.notices import NoticesTable
from coop_tui.shown import Shown, assemble, headline, joined, line, shown
from coop_tui.widgets.panes import HostsPane, OutboxPane, SessionsPane
from coop_tui.widgets.table import LedgerTable
from hosts.fleet import Notify

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
AT = "2026-05-04T09:00:00.000Z"
WIDE = Console(width=10_000, color_system="truecolor", force_terminal=True, legacy_windows=False)


def styles_at(text: Text, offset: int) -> tuple[str, ...]:
    return tuple(str(span.style) for span in text.spans if span.start <= offset < span.end)


def shows_as_written(text: Text, said: str) -> None:
    """`said` (what a chat wrote) appears whole in `text`, escaped, in one style; and
    `text` holds nothing that steers a terminal."""
    assert steering(text.plain, kept="\n") == []
    written = one_line(said)
    if not written:
        return
    starts = [at for at in range(len(text.plain)) if text.plain.startswith(written, at)]
    assert starts, f"{written!r} not shown whole in {text.plain!r}"
    # Where it is shown (a short string may also occur in Coop's words around it):
    looks = [{styles_at(text, at + offset) for offset in range(len(written))} for at in starts]
    assert any(len(look) == 1 for look in looks), f"a style inside {written!r}: {text.spans}"


def drawn(renderable: Any) -> str:
    """What a terminal is sent to draw it: its segments' text (no style codes)."""
    return "".join(segment.text for segment in WIDE.render(renderable))


# --- the panes ---------------------------------------------------------------------------


def hosts_row(said: str) -> dict[str, Any]:
    return {
        "name": said,
        "reachable": False,
        "reason": said,
        "latency_ms": 1.5,
        "chats_live": 1,
        "chats_registered": 2,
        "checked_at": AT,
    }


def sessions_row(said: str) -> dict[str, Any]:
    return {
        "host": said,
        "vendor": said,
        "label": said,
        "short": said,
        "native_id": said + "0" * 8,
        "pid": 4101,
        "status": said,
        "mode": said,
        "generation": 1,
        "inbound": {"verdict": "hold", "source": said, "why": said},
        "todos": [3],
        "tmux": said,
        "codeman": {"session": said, "registry": "another"},
    }


def outbox_row(said: str) -> dict[str, Any]:
    facts = dict.fromkeys(("stored", "transport", "received", "accepted", "outcome"), AT)
    return {
        "id": said + "0" * 8,
        "created_at": AT,
        "kind": said,
        "todo": 3,
        "_chat": Called(said, "claude", said),
        "session": f"claude:{said}",
        "host": said,
        "state": said,
        "facts": facts,
        "_now": 0.0,
        "reason": None,
        "conflict": said,
        "resent_as": said,
    }


def takers_row(said: str) -> dict[str, Any]:
    return {
        "_chat": Called(said, "claude", said),
        "host": said,
        "todos": [3],
        "mode": said,
        "adoption": {"searched": [{"host": said, "error": said}], "result": said},
        "searched_at": AT,
        "refused_until": AT,
    }


def notices_row(said: str) -> dict[str, Any]:
    return {"at": AT, "kind": said, "_chat": Called(said, None, said), "mac": said, "todo": 3}


PANES: dict[str, tuple[type[LedgerTable], Callable[[str], dict[str, Any]]]] = {
    "Macs": (HostsPane, hosts_row),
    "chats": (SessionsPane, sessions_row),
    "outbox": (OutboxPane, outbox_row),
    "adoption review": (TakersTable, takers_row),
    "notices": (NoticesTable, notices_row),
}
# The columns that show the chat's string whole, by pane; a notice's text is shown whole
# with its whitespace runs as one space (it wraps).
WHOLE = {
    "Macs": {"name", "state"},
    "chats": {"host", "vendor", "name", "native", "status", "mode", "inbound", "join", "codeman"},
    "outbox": {"kind", "name", "session", "host", "state", "why"},
    "adoption review": {"name", "session", "host", "mode", "searched", "result"},
    "notices": {"kind", "name", "session", "mac"},
}


@SETTINGS
@given(st.sampled_from(sorted(PANES)), HOSTILE)
def test_every_cell_of_every_pane_shows_what_a_chat_wrote_as_written(pane: str, said: str) -> None:
    table, make_row = PANES[pane]
    row = make_row(said) | ({"text": said} if table is NoticesTable else {})
    for key, _, render in table.COLUMNS:
        cell = render(row)
        assert isinstance(cell, Shown), key
        assert steering(drawn(cell)) == [], key
        if key in WHOLE[pane]:
            shows_as_written(cell, said)
        elif key == "text":
            shows_as_written(cell, " ".join(said.split()))


# --- dialogs, the delivery detail, the inspector -----------------------------------------


@SETTINGS
@given(HOSTILE, HOSTILE)
def test_the_dialogs_words_show_a_chats_name_and_a_macs_answer_as_written(
    name: str, answer: str
) -> None:
    chat = {
        "host": "office",
        "label": name,
        "vendor": "claude",
        "short": "1a2b3c4d",
        "status": answer,
        "inbound": {"verdict": "hold", "source": answer},
    }
    shows_as_written(chat_label(chat), " ".join(name.split()))
    shows_as_written(todo_label({"id": 3, "title": name, "state": "open"}), name)
    envelope = {"id": "5d300cb9", "state": "pending", "host": answer}
    words = joined("\n", [line(said) for said in withdrawal_words(envelope, name)])
    shows_as_written(words, name)
    detail = {"host": answer, "expiry": None}
    looked = {"at_send": None, "today": None, "refusal": name, "warning": None}
    title, proof = resend_words("5d300cb9", name, detail, looked)
    shows_as_written(title, name)
    shows_as_written(proof, name)


@SETTINGS
@given(HOSTILE, HOSTILE)
def test_the_delivery_detail_and_the_inspector_show_what_a_chat_wrote_as_written(
    name: str, said: str
) -> None:
    detail = {
        "id": "5d300cb9-0000-4000-8000-000000000001",
        "kind": "invitation",
        "todo": 3,
        "host": name,
        "state": "delivered",
        "facts": dict.fromkeys(("stored", "transport", "received", "accepted", "outcome")),
        "conflict": said,
        "last_error": said,
        "held": {"offset": 10, "preview": said, "cause": "parity"},
        "timeline": [{"at": AT, "who": name, "command": said, "evidence": {}}],
        "payload": {"text": said},
    }
    shown_detail = drawn(render_detail(detail, chat=name))
    assert steering(shown_detail, kept="\n") == []
    fields = labelled([("name", name), ("folder", said)])
    assert steering(drawn(fields), kept="\n") == []
    raw = registry_entry({"name": name, "cwd": said}, 0.0, raw=True)
    assert steering(drawn(raw), kept="\n") == []
    from coop_engine.formats import EntryLine

    row = describe_line(EntryLine(0, "held", one_line(name), one_line(said)))
    shows_as_written(row, said)


# --- the renderer itself, the header, toasts, the notifier --------------------------------


@SETTINGS
@given(HOSTILE, st.lists(HOSTILE, max_size=4))
def test_a_shown_holds_no_control_however_it_is_built(said: str, more: list[str]) -> None:
    text = shown(said, "green")
    for piece in more:
        text.append(piece)
        text.append(Text(piece, style="bold"))  # a Text of anyone's, escaped on the way in
        text.append_tokens([(piece, "red")])
    text = joined(said, [text, assemble(said, (said, "dim"))]) + said
    assert isinstance(text, Shown)
    assert steering(text.plain, kept="\n\t") == []
    text.plain = said
    assert steering(text.plain, kept="\n\t") == []
    assert steering(drawn(line(said)), kept="\n") == []


@SETTINGS
@given(HOSTILE, HOSTILE)
def test_the_header_shows_a_screens_title_as_written(title: str, words: str) -> None:
    header = headline(title, (" — ", "dim"), (words, "dim"))
    assert steering(header.plain) == []
    assert one_line(title) in header.plain and one_line(words) in header.plain


def test_every_toast_is_shown_as_written_whoever_raises_it() -> None:
    app = CoopApp.__new__(CoopApp)  # its notify alone: no fleet, no ledger
    sent: list[Any] = []
    app.post_message = sent.append  # type: ignore[method-assign]
    app.NOTIFICATION_TIMEOUT = 5

    @SETTINGS
    @given(HOSTILE, HOSTILE)
    def toasts(message: str, title: str) -> None:
        sent.clear()
        app.notify(message, title=title)  # as a widget of Textual's would: markup asked
        [notify] = sent
        toast = notify.notification
        assert not toast.markup
        assert steering(toast.message, kept="\n\t") == [] and steering(toast.title) == []
        assert toast.message == shown(message).plain

    toasts()


@SETTINGS
@given(HOSTILE, HOSTILE, HOSTILE, st.sampled_from(["darwin", "linux"]))
def test_the_desktop_notifiers_argv_holds_no_control(
    chat: str, text: str, title: str, platform: str
) -> None:
    for tool in ("terminal-notifier", "osascript", "notify-send"):
        told: list[list[str]] = []
        notifier = Notifier(
            Notify(),
            platform=platform,
            which=lambda name, tool=tool: f"/usr/bin/{name}" if name == tool else None,
            runner=told.append,
            bell=lambda: None,
        )
        alert = {"kind": "expired", "title": title, "chat": chat, "mac": "laptop", "text": text}
        notifier.tell(alert)
        for argv in told:
            assert [arg for arg in argv if steering(arg, kept="\n")] == []
