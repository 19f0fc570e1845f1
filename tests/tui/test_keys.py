"""Every key of the app, pressed through Textual's pilot over a fixed ledger and fleet."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import OptionList
from tuikit import Staged, drive, flat, loaded, open_with, screen_text, select_row, settle, until

from coop_engine.models import Event, Outbox, Session
from coop_tui.commands import ACTIONS
from coop_tui.screens.adoption import AdoptionScreen, TakersTable
from coop_tui.screens.delivery import DeliveryScreen
from coop_tui.screens.dialogs import ConfirmResend, FilterDialog, InviteDialog
from coop_tui.screens.help import HelpScreen
from coop_tui.screens.inspector import InspectorScreen
from coop_tui.screens.notices import NoticesTable, NotificationsScreen

pytestmark = pytest.mark.tui

ALREADY = "This delivery was already sent again"


def toasts(app: Any) -> list[str]:
    return [notice.message for notice in app._notifications]


# --- Send again ------------------------------------------------------------------------------


def test_send_again_confirms_with_the_proof_of_loss_and_a_second_press_is_refused(
    staged: Staged,
) -> None:
    lost = staged.outbox["flaky"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, lost)
        await open_with(pilot, "r", ConfirmResend)
        await settle(pilot)
        shown = flat(screen_text(app))
        flaky = staged.chats["flaky"]
        assert f"Send again {lost[:8]} to flaky ({flaky.session_id[:8]}) on office?" in shown
        assert "receiver-idle-without-entry" in shown
        assert "Predicted at send: accept" in shown and "Predicted today:" in shown
        assert "recorded as Dad's" in shown
        await pilot.press("y")
        await until(pilot, lambda: Outbox.get_by_id(lost).resent_as is not None, what="resent")
        second = Outbox.get_by_id(lost).resent_as
        await until(pilot, lambda: second in app.outbox_pane.rows_by_key, what="the new row")
        assert app.outbox_pane.rows_by_key[second]["resent_from"] == lost
        assert app.outbox_pane.rows_by_key[second]["state"] == "pending"
        decided = Event.get((Event.subject == f"outbox:{second}") & (Event.command == "resend"))
        assert decided.who == "dad"
        # The cursor stayed on the envelope it was on; a second press is refused.
        assert app.outbox_pane.selected_key() == lost
        await pilot.press("r")
        await until(pilot, lambda: ALREADY in toasts(app), what="the refusal")
        await until(pilot, lambda: ALREADY in flat(screen_text(app)), what="the toast shown")
        assert not isinstance(app.screen, ConfirmResend)
        assert Outbox.select().where(Outbox.resent_from == lost).count() == 1

    drive(staged.app(), script)


def test_send_again_to_a_receiver_that_still_refuses_creates_nothing(staged: Staged) -> None:
    lost = staged.outbox["locked"]
    before = Outbox.select().count()

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, lost)
        await open_with(pilot, "r", ConfirmResend)
        still = "the receiver still refuses peer messages"
        await until(pilot, lambda: still in flat(screen_text(app)), what="today's look")
        shown = flat(screen_text(app))
        assert "refused-by-receiver-policy" in shown
        assert "Predicted today: refuse" in shown
        await pilot.press("y")
        await until(pilot, lambda: any(still in t for t in toasts(app)), what="the refusal")
        assert isinstance(app.screen, ConfirmResend)  # nothing decided, nothing created
        assert Outbox.select().count() == before

    drive(staged.app(), script)


def test_cancel_in_the_confirmation_changes_nothing(staged: Staged) -> None:
    lost = staged.outbox["flaky"]
    before = Outbox.select().count()

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, lost)
        for key in ("n", "escape"):
            await open_with(pilot, "r", ConfirmResend)
            await pilot.press(key)
            await until(pilot, lambda: not isinstance(app.screen, ConfirmResend), what="closed")
            await settle(pilot)
        assert Outbox.get_by_id(lost).resent_as is None
        assert Outbox.select().count() == before
        assert len(app.outbox_pane.rows_by_key) == before

    drive(staged.app(), script)


def test_send_again_from_the_delivery_detail_shows_the_new_resend_chain(staged: Staged) -> None:
    lost = staged.outbox["flaky"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, lost)
        await open_with(pilot, "enter", DeliveryScreen)
        await until(pilot, lambda: app.screen.detail is not None, what="detail loaded")
        assert "Resend chain" not in screen_text(app)
        await open_with(pilot, "r", ConfirmResend)
        await settle(pilot)
        await pilot.press("y")
        await until(pilot, lambda: "Resend chain" in screen_text(app), what="the chain")
        again = Outbox.get_by_id(lost).resent_as
        chain = screen_text(app)
        assert f"{lost[:8]} proven lost (expired)" in chain
        assert f"sent again as {again[:8]} → {again[:8]}" in chain
        await pilot.press("escape")
        await until(pilot, lambda: again in app.outbox_pane.rows_by_key, what="the new row")

    drive(staged.app(), script)


# --- adoption, inspection, invitation --------------------------------------------------------


def test_adopting_a_cli_taker_from_the_review_enrolls_it(staged: Staged) -> None:
    taker = staged.chats["taker"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "a", AdoptionScreen)
        table = app.screen.query_one(TakersTable)
        key = str(Session.get(Session.native_id == taker.session_id).id)
        await until(pilot, lambda: key in table.rows_by_key, what="the taker's row")
        shown = screen_text(app)
        assert "laptop: none; office: none" in shown
        assert "refused: another enrollment names this chat on office" in shown
        await select_row(pilot, table, key)
        await pilot.press("enter")
        await until(pilot, lambda: any("adopted" in t for t in toasts(app)), what="adopted")
        session = Session.get(Session.native_id == taker.session_id)
        assert (session.mode, session.surface, session.generation) == ("managed", "native", 2)
        await until(
            pilot,
            lambda: "adopted at generation 2 on laptop" in screen_text(app),
            what="the result in the table",
        )
        await pilot.press("escape")
        # The adoption's cli-take work envelope arrives in the outbox by itself.
        work = Outbox.get((Outbox.session == session.id) & (Outbox.kind == "work"))
        await until(pilot, lambda: work.id in app.outbox_pane.rows_by_key, what="work row")

    drive(staged.app(), script)


def test_inspecting_a_local_chat_shows_its_entry_socket_and_marked_transcript(
    staged: Staged,
) -> None:
    importer = staged.chats["importer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await pilot.press("2")
        await select_row(pilot, app.sessions_pane, f"office/{importer.ref}")
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: "Registry entry" in screen_text(app), what="read")
        shown = screen_text(app)
        assert f"pid {importer.pid}" in shown and "status" in shown  # labelled fields
        assert "Socket: ok" in shown
        await pilot.press("J")  # the raw JSON, one key away
        await until(pilot, lambda: '"sessionId"' in screen_text(app), what="raw JSON")
        assert f'"sessionId": "{importer.session_id}"' in screen_text(app)
        assert f"◆        54  user peer from cwkCoop msg_id {staged.outbox['importer']}" in shown
        assert "■" in shown and "assistant FINAL  I will take it. COOP_ACCEPT" in shown
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, InspectorScreen), what="back")

    drive(staged.app(), script)


def test_inspecting_shows_a_held_notice_marked(staged: Staged) -> None:
    reviewer = staged.chats["reviewer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.sessions_pane, f"office/{reviewer.ref}")
        await pilot.press("c")
        await until(pilot, lambda: "Registry entry" in screen_text(app), what="read")
        held = [line for line in screen_text(app).splitlines() if "Held peer message" in line]
        assert len(held) == 2 and all(line.lstrip().startswith("!") for line in held)

    drive(staged.app(), script)


def test_invite_picks_a_todo_then_a_chat_and_the_envelope_appears(staged: Staged) -> None:
    todo = staged.todos["open"]
    importer = staged.chats["importer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "i", InviteDialog)
        dialog = app.screen
        todos = dialog.query_one("#todos", OptionList)
        await until(pilot, lambda: todos.option_count > 0, what="the todos")
        todos.highlighted = todos.get_option_index(str(todo))
        await pilot.press("enter")
        chats = dialog.query_one("#chats", OptionList)
        await until(pilot, lambda: app.focused is chats, what="the chats list")
        chats.highlighted = chats.get_option_index(f"office|{importer.ref}")
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, InviteDialog), what="closed")

        def invited() -> Any:
            rows = app.outbox_pane.rows_by_key.values()
            return next((r for r in rows if r["todo"] == todo and r["kind"] == "invitation"), None)

        await until(pilot, invited, what="the invitation row")
        row = invited()
        assert (row["session"], row["host"], row["state"]) == (importer.ref, "office", "pending")
        assert any(f"to #{todo}" in t for t in toasts(app))

    drive(staged.app(), script)


# --- filtering and moving around --------------------------------------------------------------


def test_filter_by_a_word_then_escape_clears_it(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        everything = set(app.outbox_pane.rows_by_key)
        await open_with(pilot, "f", FilterDialog)
        await pilot.press(*"expired", "enter")
        await until(pilot, lambda: len(app.outbox_pane.rows_by_key) == 3, what="3 expired")
        rows = app.outbox_pane.rows_by_key.values()
        assert {r["state"] for r in rows} == {"expired"}
        assert "Outbox · 3 envelopes matching 'expired'" in screen_text(app)
        await open_with(pilot, "f", FilterDialog)
        await pilot.press("ctrl+u", *"#6", "enter")
        await until(
            pilot,
            lambda: {r["todo"] for r in app.outbox_pane.rows_by_key.values()} == {6},
            what="todo #6 only",
        )
        await pilot.press("escape")
        await until(pilot, lambda: set(app.outbox_pane.rows_by_key) == everything, what="all")
        assert "Outbox · 11 envelopes" in screen_text(app)

    drive(staged.app(), script)


def test_1_2_3_move_between_the_panes(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        assert app.focused is app.outbox_pane
        for key, pane in (("1", "hosts"), ("2", "sessions"), ("3", "outbox"), ("1", "hosts")):
            await pilot.press(key)
            assert app.focused.id == pane

    drive(staged.app(), script)


def test_enter_on_a_mac_shows_its_chats_and_on_a_chat_its_envelopes(staged: Staged) -> None:
    docs = staged.chats["docs"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.hosts_pane, "laptop")
        await pilot.press("enter")
        assert app.focused is app.sessions_pane
        assert {r["host"] for r in app.sessions_pane.rows_by_key.values()} == {"laptop"}
        assert "Chats on laptop · 2" in screen_text(app)
        await select_row(pilot, app.sessions_pane, f"laptop/{docs.ref}")
        await pilot.press("enter")
        await until(pilot, lambda: len(app.outbox_pane.rows_by_key) == 2, what="docs' two")
        assert app.focused is app.outbox_pane
        assert set(app.outbox_pane.rows_by_key) == {
            staged.outbox["docs"],
            staged.outbox["docs_work"],
        }
        assert "Outbox · 2 envelopes for this chat" in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: len(app.outbox_pane.rows_by_key) == 11, what="every one")
        assert len(app.sessions_pane.rows_by_key) == 9

    drive(staged.app(), script)


# --- help, notices, palette, quit ---------------------------------------------------------------


def test_help_lists_every_key_and_the_fact_marks(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "question_mark", HelpScreen)
        await settle(pilot)
        shown = screen_text(app)
        for binding in app.BINDINGS:
            assert binding.description in shown
        legend = "accepted: a final carried COOP_ACCEPT with the invitation's nonce"
        for _ in range(20):  # a page at a time, down to the fact marks
            if legend in screen_text(app):
                break
            app.screen.query_one("#help").scroll_page_down(animate=False)
            await settle(pilot)
        assert legend in screen_text(app)
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, HelpScreen), what="closed")

    drive(staged.app(), script)


def test_notifications_show_what_dad_was_told_newest_first(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        table = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: table.row_count == 4, what="four notices")
        texts = [row["text"] for row in table.rows_by_key.values()]
        gone = staged.chats["gone"].session_id
        assert texts == [
            f"Envelope {staged.outbox['gone']} could not be sent: No live chat with session {gone}"
        ] + [
            f"Envelope {staged.outbox[name]} was not delivered: {reason}"
            for name, reason in (
                ("flaky", "receiver-idle-without-entry"),
                ("locked", "refused-by-receiver-policy"),
                ("reviewer", "held-for-approval-then-expired"),
            )
        ]
        await pilot.press("escape")

    drive(staged.app(), script)


def test_the_command_palette_lists_every_action_and_runs_one(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await open_with(pilot, "ctrl+p", CommandPalette)
        await pilot.press(*"Notif")
        await until(pilot, lambda: "What Dad was told" in screen_text(app), what="the hit")
        await open_with(pilot, "enter", NotificationsScreen)
        await pilot.press("escape")
        # With no query the palette lists the app's actions (discovery), each by name.
        await open_with(pilot, "ctrl+p", CommandPalette)
        await pilot.pause(0.3)
        await settle(pilot)
        options = app.screen.query_one(OptionList)
        listed = flat(
            " ".join(
                str(options.get_option_at_index(i).prompt) for i in range(options.option_count)
            )
        )
        for name, _, _ in ACTIONS:
            assert name in listed, name

    drive(staged.app(), script)


def coordinator_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "coordinator"]


def test_quit_stops_the_coordinator_running_in_the_app(staged: Staged) -> None:
    assert not coordinator_threads()
    app = staged.app(coordinator="auto")

    async def script(pilot: Pilot[None]) -> None:
        await loaded(pilot)
        await until(pilot, coordinator_threads, what="the coordinator thread")
        assert "coordinator running in this app" in screen_text(pilot.app)
        await pilot.press("q")

    drive(app, script)
    assert app.return_code == 0
    assert not coordinator_threads()


def test_bindings_of_the_panes_do_nothing_over_another_screen(staged: Staged) -> None:
    """`r` in the adoption review must not resend the envelope selected under it."""

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, staged.outbox["locked"])
        await open_with(pilot, "a", AdoptionScreen)
        depth = len(app.screen_stack)
        await pilot.press("r", "1", "i", "a", "exclamation_mark")
        await settle(pilot)
        assert isinstance(app.screen, AdoptionScreen) and len(app.screen_stack) == depth
        assert "Send again" not in screen_text(app).splitlines()[-1]

    drive(staged.app(), script)
    assert Outbox.get_by_id(staged.outbox["locked"]).resent_as is None


# --- failures ------------------------------------------------------------------------------


def test_a_failed_worker_is_a_visible_notice_and_the_app_goes_on(
    staged: Staged, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A screen's worker that raises (here, the delivery detail's read) must neither end
    # the app nor fail silently: the app's one handler turns it into a notice.
    from coop_engine import queries

    def broken(outbox_id: str) -> dict[str, Any]:
        raise RuntimeError("the ledger said no")

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        monkeypatch.setattr(queries, "delivery_detail", broken)
        await select_row(pilot, app.outbox_pane, staged.outbox["locked"])
        await open_with(pilot, "enter", DeliveryScreen)
        failed = "load failed: the ledger said no"
        await until(pilot, lambda: failed in toasts(app), what="the failure's notice")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DeliveryScreen), what="back")
        assert app.is_running

    drive(staged.app(), script)


# --- tables: vim keys, sorting, maximising, copying ---------------------------------------------


async def moves_like_vim(pilot: Pilot[None], table: Any) -> None:
    """j k g G Home End PgDn PgUp move the cursor of this table."""
    table.focus()
    last = table.row_count - 1
    assert last > 0
    for key, row in (("G", last), ("g", 0), ("j", 1), ("k", 0), ("end", last), ("home", 0)):
        await pilot.press(key)
        assert table.cursor_row == row, key
    await pilot.press("pagedown")
    assert table.cursor_row > 0
    await pilot.press("pageup")
    assert table.cursor_row == 0


def test_j_k_g_G_home_end_and_pages_move_in_every_table(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        for pane in (app.hosts_pane, app.sessions_pane, app.outbox_pane):
            await moves_like_vim(pilot, pane)
        await open_with(pilot, "exclamation_mark", NotificationsScreen)
        notices = app.screen.query_one(NoticesTable)
        await until(pilot, lambda: notices.row_count == 4, what="four notices")
        await moves_like_vim(pilot, notices)

    drive(staged.app(), script)


def shown_keys(table: Any) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def test_s_sorts_by_the_next_column_and_a_header_click_sorts_by_its_column(
    staged: Staged,
) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        pane = app.outbox_pane
        oldest_first = [
            row["id"]
            for row in sorted(pane.rows_by_key.values(), key=lambda r: (r["created_at"], r["id"]))
        ]
        assert shown_keys(pane) == oldest_first[::-1]  # newest first, as loaded
        await pilot.press("s")
        assert shown_keys(pane) == oldest_first
        assert "sorted by ID ↑" in screen_text(app)
        await pilot.press("s")
        assert shown_keys(pane) == oldest_first[::-1]
        await pilot.press("s")  # the next column: KIND
        kinds = [pane.rows_by_key[key]["kind"] for key in shown_keys(pane)]
        assert kinds == sorted(kinds)
        # A click on the STATE header sorts by state; a second click, the other way.
        state_x = 1 + sum(
            column.get_render_width(pane)
            for column in pane.columns.values()
            if str(column.key.value) in ("id", "kind", "todo", "name", "session", "host")
        )
        for reverse in (False, True):
            await pilot.click(pane, offset=(state_x + 2, 1))
            states = [pane.rows_by_key[key]["state"] for key in shown_keys(pane)]
            assert states == sorted(states, reverse=reverse)

    drive(staged.app(), script)


def test_z_maximises_the_focused_pane_and_escape_restores_the_three(staged: Staged) -> None:
    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await pilot.press("2", "z")
        assert app.screen.maximized is app.sessions_pane
        await settle(pilot)
        assert "Outbox ·" not in screen_text(app) and "Chats ·" in screen_text(app)
        await pilot.press("escape")
        assert app.screen.maximized is None
        await pilot.press("3", "z")
        assert app.screen.maximized is app.outbox_pane
        await pilot.press("z")
        assert app.screen.maximized is None
        await settle(pilot)
        assert "Chats ·" in screen_text(app)

    drive(staged.app(), script)


def test_C_copies_the_selected_rows_full_id_through_the_terminal_and_says_so(
    staged: Staged,
) -> None:
    locked = staged.outbox["locked"]
    docs = staged.chats["docs"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        await select_row(pilot, app.outbox_pane, locked)
        await pilot.press("C")
        assert app.clipboard == locked
        await until(pilot, lambda: f"Copied envelope id {locked}" in toasts(app), what="toast")
        await select_row(pilot, app.sessions_pane, f"laptop/{docs.ref}")
        await pilot.press("C")
        assert app.clipboard == docs.session_id
        await until(pilot, lambda: f"Copied chat id {docs.session_id}" in toasts(app), what="toast")

    drive(staged.app(), script)


def test_the_inspector_reads_again_with_ctrl_r_and_r_keeps_its_one_meaning(
    staged: Staged,
) -> None:
    importer = staged.chats["importer"]

    async def script(pilot: Pilot[None]) -> None:
        app: Any = pilot.app
        await loaded(pilot)
        reads: list[str] = []
        inspect = app.office.inspect

        def counted(host: str, native_id: str, size: int) -> Any:
            reads.append(native_id)
            return inspect(host, native_id, size)

        app.office.inspect = counted
        await select_row(pilot, app.sessions_pane, f"office/{importer.ref}")
        await open_with(pilot, "c", InspectorScreen)
        await until(pilot, lambda: len(reads) == 1, what="the first read")
        await settle(pilot)
        await pilot.press("r")  # Send again's key: nothing here, and no second read
        await settle(pilot)
        assert len(reads) == 1 and isinstance(app.screen, InspectorScreen)
        await pilot.press("ctrl+r")
        await until(pilot, lambda: len(reads) == 2, what="read again")

    drive(staged.app(), script)
