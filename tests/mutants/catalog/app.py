"""What Dad sees and is told ([5/6], DESIGN 9): the header's truth about the coordinator,
alerts only for decisions, the notifier's argv, a terminal's width, one meaning per key;
the app's text boundary (issue 28): one renderer, by type, for every pane, dialog,
toast, header and status line, and the door's refusal in the app's dialogs."""

from __future__ import annotations

from ..mutant import Mutant

ATTENTION = "coop_tui/attention.py"
COORDINATION = "coop_tui/coordination.py"
STATUS = "coop_engine/queries/status.py"
NOTIFIER = "coop_engine/loop/notifier.py"
RESPONSIVE = "tests/tui/test_responsive.py"
HEADER = f"{RESPONSIVE}::test_the_header_says_it_in_fewer_words_before_anything_is_cut"
TOASTS = "tests/tui/test_attention.py"
NOTIFY = "tests/coordinator/test_notifier.py"
CELLS = "coop_tui/widgets/cells.py"
DIALOGS = "coop_tui/screens/dialogs.py"
ONE_RENDERER = (
    "tests/tui/test_one_renderer.py"
    "::test_no_module_of_the_app_shows_text_but_through_the_one_renderer"
)
ESCAPES = "tests/tui/test_escapes.py"
ON_EVERY_SCREEN = f"{ESCAPES}::test_a_chat_named_with_escapes_shows_them_printed_on_every_screen"
AS_TYPED = f"{ESCAPES}::test_the_filter_the_status_line_and_a_widgets_toast_take_markup_as_written"
APP_PROPERTIES = "tests/properties/test_app_text_boundary.py"
ADD_TODO = "tests/tui/test_add_todo.py"
PASTED = f"{ADD_TODO}::test_a_pasted_title_holding_controls_is_refused_in_the_doors_words_and_kept"

MUTANTS = (
    Mutant(
        "header-claims-a-stopped-coordinator-runs",
        "the coordinator's truth in the header: a claim whose heartbeat stopped is stopped",
        COORDINATION,
        "    if look.state == STOPPED and holder is not None:\n",
        "    if False:\n",
        (f"{TOASTS}::test_the_header_follows_the_heartbeat_from_running_to_stopped",),
    ),
    Mutant(
        "header-never-shortens",
        "fits the terminal: the header says it in fewer words before anything is cut",
        ATTENTION,
        "        for edges, titled, words, badge in HEADER_FORMS:\n",
        "        for edges, titled, words, badge in HEADER_FORMS[:1]:\n",
        (HEADER,),
    ),
    Mutant(
        "header-keeps-its-icon-when-narrow",
        "fits the terminal: the header's icon and clock space go before its words",
        ATTENTION,
        '        self.set_class(not edges, "-bare-header")\n',
        '        self.set_class(False, "-bare-header")\n',
        (HEADER,),
    ),
    Mutant(
        "header-ignores-a-resize",
        "fits the terminal: the header follows the terminal's width",
        ATTENTION,
        "        self._header(event.size.width)\n",
        "        self._header()\n",
        (HEADER,),
    ),
    Mutant(
        "routine-hold-raises-nothing",
        "alerts that respect attention: a hold seen needs a decision and raises one",
        STATUS,
        '    if event.command == "record_held":\n',
        '    if event.command == "record_held_never":\n',
        (f"{TOASTS}::test_routine_events_raise_no_toast_and_a_hold_seen_raises_one",),
    ),
    Mutant(
        "routine-adoption-raises-a-toast",
        "alerts that respect attention: an adoption that succeeded is routine",
        STATUS,
        '        if result.startswith("refused"):\n',
        "        if result:\n",
        (
            "tests/engine/test_adoption_record.py"
            "::test_an_adopted_chat_is_routine_and_a_refused_adoption_is_an_alert",
        ),
        select="sqlite",
    ),
    Mutant(
        "notifier-ignores-quiet",
        "the notifier: quiet = true tells nothing",
        NOTIFIER,
        '        return not self.settings.quiet and alert.get("kind") in self.settings.on\n',
        '        return alert.get("kind") in self.settings.on\n',
        (f"{NOTIFY}::test_quiet_tells_nothing_and_on_keeps_only_the_events_it_names",),
    ),
    Mutant(
        "notify-send-unescaped",
        "the notifier: chat text reaches notify-send as argv with its markup escaped",
        NOTIFIER,
        '            return [notify_send, "--app-name=Coop", "--", title, html.escape(message)]\n',
        '            return [notify_send, "--app-name=Coop", "--", title, message]\n',
        (f"{NOTIFY}::test_linux_notify_send_gets_argv_with_its_markup_escaped",),
    ),
    Mutant(
        "confirmation-without-its-own-keys",
        "fits the terminal: a confirmation's footer shows its own keys",
        "coop_tui/screens/dialogs.py",
        '            yield from self.buttons("Send again")\n        yield Footer()\n',
        '            yield from self.buttons("Send again")\n',
        (f"{RESPONSIVE}::test_a_confirmation_shows_its_own_keys_in_its_footer",),
    ),
    Mutant(
        "adoption-answer-cut-before-columns-drop",
        "fits the terminal: the adoption review drops columns before its answer is cut",
        "coop_tui/screens/adoption.py",
        "    FLEX_MIN = 56\n",
        "    FLEX_MIN = 20\n",
        (f"{RESPONSIVE}::test_the_adoption_review_drops_columns_before_the_answer_is_cut",),
    ),
    Mutant(
        "notices-key-means-no-too",
        "one meaning per key: n is no in a confirmation, so notices are on !",
        "coop_tui/app.py",
        '            "exclamation_mark",\n            "notifications",\n',
        '            "n",\n            "notifications",\n',
        ("tests/tui/test_key_meanings.py::test_every_key_means_one_thing_on_every_screen",),
    ),
    Mutant(
        "ledger-watch-ignores-writes",
        "live panes: a write to the ledger file, by any process, reaches the panes at once",
        "coop_tui/app.py",
        "        if event.event_type not in CHANGES:\n            return\n",
        "        return\n",
        (
            "tests/tui/test_live.py::"
            "test_the_outbox_shows_an_invitation_made_by_another_process_when_the_file_changes",
        ),
    ),
    Mutant(
        "ledger-watch-ignores-lost-events",
        "live panes: when the kernel dropped the ledger watch's events, the panes read the"
        " ledger at once, not at the next poll",
        "coop_tui/app.py",
        "        self.app.post_message(LedgerChanged())  # the ledger may have changed unseen\n",
        "        pass\n",
        ("tests/coordinator/test_watch_loss.py",),
        select="app",
    ),
    Mutant(
        "notices-cut-before-columns-drop",
        "fits the terminal: the notices drop columns before a value is cut",
        "coop_tui/screens/notices.py",
        '    DROP_FIRST = ("todo", "mac", "session", "name")\n',
        "    DROP_FIRST = ()\n",
        ("tests/tui/test_responsive.py::test_the_notices_drop_columns_before_a_value_is_cut",),
    ),
    Mutant(
        "cell-shows-the-raw-string",
        "the text boundary: a pane's cell is the one renderer's, a chat's escape printed",
        CELLS,
        '    cell = line(value, style, no_wrap=True, overflow="ellipsis", end="")\n',
        "    from rich.text import Text\n\n"
        '    cell = Text(str(value).replace("\\n", " "), style, overflow="ellipsis", end="")\n',
        (
            "tests/tui/test_cells_are_plain_text.py"
            "::test_a_cell_shows_an_escape_sequence_and_a_bidi_override_as_printed",
            ONE_RENDERER,
        ),
    ),
    Mutant(
        "markup-in-a-cell",
        "the text boundary: a cell is the one renderer's, never markup built from data",
        CELLS,
        '    cell = line(value, style, no_wrap=True, overflow="ellipsis", end="")\n',
        "    from rich.text import Text\n\n"
        '    cell = Text.from_markup(str(value), style=style, overflow="ellipsis", end="")\n',
        ("tests/tui/test_cells_are_plain_text.py",),
    ),
    Mutant(
        "markup-in-a-toast",
        "the text boundary: every toast, whoever raises it, shows its words as written",
        ATTENTION,
        "            markup=False,\n",
        "            markup=markup,\n",
        ("tests/tui/test_toast_markup.py", AS_TYPED),
    ),
    Mutant(
        "toast-sends-an-escape",
        "the text boundary: a toast a widget raises with an escape prints it, never sends it",
        ATTENTION,
        "            printable(message),\n",
        "            message,\n",
        (f"{APP_PROPERTIES}::test_every_toast_is_shown_as_written_whoever_raises_it", AS_TYPED),
    ),
    Mutant(
        "markup-in-a-dialog",
        "the text boundary: a dialog names a chat as written, never as markup",
        DIALOGS,
        '            yield Static(shown(f"{self.chat}: {self.why}."), id="refusing-why")\n',
        '            yield Static(f"{self.chat}: {self.why}.", id="refusing-why")\n',
        (f"{ESCAPES}::test_the_second_confirmation_names_a_refusing_chat_as_written",),
    ),
    Mutant(
        "header-sends-an-escape",
        "the text boundary: a screen's header names a chat printed, never sent",
        "coop_tui/shown.py",
        "            (one_line(piece[0]), piece[1])"
        " if isinstance(piece, tuple) else one_line(piece)\n",
        "            (piece[0], piece[1]) if isinstance(piece, tuple) else piece\n",
        (ON_EVERY_SCREEN,),
    ),
    Mutant(
        "outbox-title-parses-markup",
        "the text boundary: the outbox's title says the filter as typed (`[/]` crashed it)",
        "coop_tui/live.py",
        '        self.outbox_pane.border_title = line(f"Outbox · {self.outbox_total} envelopes'
        '{scope}{more}")\n',
        '        self.outbox_pane.border_title = f"Outbox · {self.outbox_total} envelopes'
        '{scope}{more}"\n',
        (AS_TYPED,),
    ),
    Mutant(
        "status-line-parses-markup",
        "the text boundary: the status line says who coordinates as written",
        "coop_tui/app.py",
        '        self.query_one("#status", Static).update(line(" · ".join(parts)))\n',
        '        self.query_one("#status", Static).update(" · ".join(parts))\n',
        (AS_TYPED,),
    ),
    Mutant(
        "field-draws-a-pasted-control",
        "the text boundary: a field shows a pasted control as a sign, never sends it",
        "coop_tui/widgets/field.py",
        '        return shown(pictured(self.value), no_wrap=True, overflow="ignore", end="")\n',
        "        return super()._value\n",
        (AS_TYPED, PASTED),
    ),
    Mutant(
        "add-dialog-drops-the-refused-title",
        "the door in the app: a refused title is said in the dialog and kept for editing",
        DIALOGS,
        "            self.refuse(str(refusal))\n"
        '            self.query_one("#todo-title", Input).focus()\n',
        '            self.query_one("#todo-title", Input).value = ""\n'
        "            self.refuse(str(refusal))\n",
        (PASTED,),
    ),
    Mutant(
        "invite-dialog-offers-a-todo-the-door-refuses",
        "the door in the app: the invite dialog refuses a todo the door would not send",
        DIALOGS,
        '    try:\n        frame_text.title(str(todo.get("title") or ""))\n',
        '    return None\n    try:\n        frame_text.title(str(todo.get("title") or ""))\n',
        (f"{ADD_TODO}::test_the_invite_dialog_refuses_a_todo_an_older_ledger_kept_with_an_escape",),
    ),
    Mutant(
        "a-screen-imports-the-app",
        "no import cycle: the screens reach the app through coop_tui.seat, never app.py",
        "coop_tui/screens/base.py",
        "    from coop_tui.seat import TheApp\n",
        "    from coop_tui.app import CoopApp as TheApp\n",
        ("tests/test_import_boundaries.py::test_no_package_of_coop_has_an_import_cycle",),
    ),
)
