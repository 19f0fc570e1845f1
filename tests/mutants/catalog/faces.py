"""Every face asks the same fleet (issue 29, item 2; DESIGN 13): beside a running
coordinator the CLI is its client for whatever touches the fleet, a command's question
sent and not answered is never asked again of another fleet, `coop tick` is never a
second pass beside it, Send again after a refusal by policy reads the receiver's
settings now, and `coop demo` runs on the home it is given and never on a ledger."""

from __future__ import annotations

from ..mutant import Mutant

LEDGER_CLI = "coop_engine/cli/ledger.py"
RESEND = "coop_engine/loop/resend.py"
HUB = "coop_engine/loop/hub.py"
MACS = "coop_engine/loop/macs.py"
LAUNCHER = "coop_engine/cli/launcher.py"
DEMO = "coop_engine/loop/demo.py"
FACES = "tests/coordinator/test_faces.py"
TICKS = "tests/coordinator/test_tick_beside_serve.py"
LOOKS = "tests/door/test_send_again_looks_again.py"
DECISIONS = "tests/door/test_cli_decisions.py"
DEMO_HOME = "tests/coordinator/test_demo_home.py"
OWN_FLEET = "    from hosts.fleet import load_fleet\n\n"

MUTANTS = (
    Mutant(
        "cli-invite-asks-its-own-fleet",
        "the CLI beside a running coordinator is its client: invite asks the coordinator's Macs",
        LEDGER_CLI,
        "    with Side(command=True).choose() as side:\n",
        "    with Side(command=True) as side:\n        side._direct()\n",
        (f"{FACES}::test_invite_by_the_name_the_demos_laptop_gives_its_chat",),
    ),
    Mutant(
        "cli-resend-looks-with-its-own-fleet",
        "the CLI beside a running coordinator is its client: Send again's look is the"
        " coordinator's",
        LEDGER_CLI,
        "    looked, _ = ask(\n"
        '        "look_again",\n'
        '        {"envelope": envelope},\n'
        "        lambda desk: desk.look_again(envelope),\n"
        "        command=True,\n"
        "    )\n",
        "    from coop_engine.loop.desk import Desk\n"
        + OWN_FLEET
        + "    looked = Desk(load_fleet(coop_home())).look_again(envelope)\n",
        (f"{FACES}::test_resend_into_a_chat_that_still_refuses_is_refused_and_sends_nothing",),
    ),
    Mutant(
        "cli-withdraw-with-its-own-fleet",
        "the CLI beside a running coordinator is its client: withdraw asks the coordinator's Codex",
        LEDGER_CLI,
        "    result, _ = ask(\n"
        '        "withdraw",\n'
        '        {"outbox": outbox_id, "by": args.by},\n'
        "        lambda desk: withdraw_envelope(engine, desk.fleet, outbox_id, args.by),\n"
        "        command=True,\n"
        "    )\n",
        OWN_FLEET
        + "    result = withdraw_envelope(engine, load_fleet(coop_home()), outbox_id, args.by)\n",
        (f"{FACES}::test_withdraw_takes_a_queued_codex_envelope_out_of_the_demos_codex_queue",),
    ),
    Mutant(
        "cli-adopt-with-its-own-fleet",
        "the CLI beside a running coordinator is its client: adopt --once is its adoption pass",
        LEDGER_CLI,
        '    results, _ = ask("adopt", {}, here, command=True)\n',
        "    from coop_engine.loop.desk import Desk\n"
        + OWN_FLEET
        + "    results = here(Desk(load_fleet(coop_home())))\n",
        (f"{FACES}::test_adopt_once_beside_the_demo_is_its_adoption_pass_over_its_macs",),
    ),
    Mutant(
        "cli-tick-passes-with-its-own-fleet",
        "coop tick is never a second pass beside a running coordinator: it asks for its pass",
        LEDGER_CLI,
        "    answer, via = ask(\n"
        '        "tick", {"at": args.at}, lambda desk: _tick_here(desk.fleet, args.at),'
        " command=True\n"
        "    )\n",
        OWN_FLEET + '    answer, via = _tick_here(load_fleet(coop_home()), args.at), "direct"\n',
        (f"{FACES}::test_tick_beside_the_demo_is_its_coordinators_pass_and_exits_no_live_chat",),
    ),
    Mutant(
        "cli-tick-passes-beside-a-silent-coordinator",
        "coop tick is never a second pass beside a running coordinator, even one whose hub"
        " does not answer (neither the look at the claim nor the lease's take stops it)",
        LEDGER_CLI,
        "    if look.state == RUNNING:\n"
        "        raise _running_beside(look.holder)\n"
        "    if look.lease is None:\n",
        "    if True:\n",
        (f"{TICKS}::test_tick_beside_a_coordinator_that_does_not_answer_on_the_hub_is_refused",),
    ),
    Mutant(
        "tick-answered-before-the-pass",
        "coop tick beside a coordinator returns once a pass begun after the ask finished",
        MACS,
        "            while self.answered_upto < ticket:\n",
        "            while False:\n",
        (f"{TICKS}::test_a_pass_asked_of_serve_is_one_begun_after_the_ask_and_waited_for",),
    ),
    Mutant(
        "command-unanswered-asked-again-elsewhere",
        "a command sent to the coordinator and not answered is never done again with another fleet",
        HUB,
        'the coordinator may have done it."""\n    return _exchange(home, op, args, timeout)\n',
        'the coordinator may have done it."""\n    return ask(home, op, args, timeout)\n',
        (
            "tests/coordinator/test_hub.py"
            "::test_a_command_sent_and_not_answered_is_unanswered_never_none",
        ),
    ),
    Mutant(
        "resend-after-refusal-skips-the-fresh-read",
        "Send again after a refusal by policy reads the receiver's settings now",
        RESEND,
        "    today = predict_today(hosts, envelope)\n",
        '    today = envelope.get("inbound") or predict_today(hosts, envelope)\n',
        (
            f"{LOOKS}::test_after_a_policy_refusal_settings_unreadable_now_refuse_send_again",
            f"{DECISIONS}::test_send_again_after_a_refusal_by_policy_reads_the_receivers_settings_now",
        ),
    ),
    Mutant(
        "resend-after-refusal-into-unreadable-settings",
        "Send again after a refusal by policy: settings that cannot be read now refuse it",
        RESEND,
        '    elif today["verdict"] == "unknown" and envelope.get("reason") == REFUSED_BY_POLICY:\n',
        "    elif False:\n",
        (
            f"{FACES}::test_resend_after_a_policy_refusal_with_settings_unreadable_now_sends_nothing",
        ),
    ),
    Mutant(
        "demo-ignores-the-home-named",
        "coop demo runs on the home --home or $COOP_HOME names, and says where it is",
        LAUNCHER,
        '    with Demo(os.environ.get("COOP_HOME"), say=_say) as demo:\n',
        "    with Demo(None, say=_say) as demo:\n",
        (f"{DEMO_HOME}::test_demo_uses_and_says_the_home_named_after_it_and_keeps_its_ledger",),
    ),
    Mutant(
        "demo-stages-into-a-ledger",
        "coop demo never stages its todos into a home that holds a ledger",
        DEMO,
        "        if (self.home / LEDGER_FILE).exists():\n",
        "        if False:\n",
        (
            f"{DEMO_HOME}"
            "::test_demo_on_a_home_holding_a_ledger_is_refused_in_one_line_and_stages_nothing",
        ),
    ),
)
