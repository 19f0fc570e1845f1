"""Obligations close (issue 29 item 8): a review is never queued for a chief Coop only
observes, decisions are taken only from the states the rules allow, a reviewed
obligation is still owed, a release gives the todo back, and a hold's alert never sends
Dad to a dialog that hold does not have."""

from __future__ import annotations

from ..mutant import Mutant

OBLIGATIONS = "coop_engine/obligations.py"
RULES = "tests/engine/test_rules_obligations.py"
ALERTS = "tests/engine/test_hold_alerts.py"

MUTANTS = (
    Mutant(
        "review-queued-for-an-observed-chief",
        "the chief's review: never queued for a chief Coop only observes (it would wait forever)",
        OBLIGATIONS,
        '        if known is not None and known.mode != "managed":\n',
        '        if known is not None and known.mode == "retired":\n',
        (
            f"{RULES}::test_a_chief_coop_only_observes_is_sent_no_review_and_dad_is_told_how_to_decide",
        ),
        select="sqlite",
    ),
    Mutant(
        "obligation-reviewed-before-it-is-overdue",
        "obligations close: only an overdue obligation is reviewed",
        OBLIGATIONS,
        'DECIDED_FROM = {"wait": ("overdue",), "release": ("overdue", "reviewed")}\n',
        'DECIDED_FROM = {"wait": ("open", "overdue"), "release": ("overdue", "reviewed")}\n',
        (f"{RULES}::test_an_obligation_still_due_is_not_reviewed",),
        select="sqlite",
    ),
    Mutant(
        "reviewed-obligation-no-longer-owed",
        "obligations close: a reviewed obligation is still owed, and its outcome meets it",
        OBLIGATIONS,
        'OWED = ("open", "overdue", "reviewed")',
        'OWED = ("open", "overdue")',
        (f"{RULES}::test_a_reviewed_obligation_is_met_by_its_outcome_and_never_swept_again",),
        select="sqlite",
    ),
    Mutant(
        "released-take-keeps-the-todo",
        "obligations close: a released take gives its todo back, open to be invited again",
        OBLIGATIONS,
        '        self._move_todo(now, "review_obligation", dispatch.todo_id, "taken", "open")\n',
        "",
        (f"{RULES}::test_release_closes_it_and_gives_the_todo_back",),
        select="sqlite",
    ),
    Mutant(
        "unexplained-hold-sent-to-a-dialog",
        "a hold's alert says what to do for that hold: one Coop cannot explain has no dialog",
        "coop_engine/queries/status.py",
        '        advice = HOLD_ADVICE.get(str(evidence.get("cause")), HOLD_ADVICE["unknown"])\n',
        '        advice = HOLD_ADVICE.get(str(evidence.get("cause")), HOLD_ADVICE["parity"])\n',
        (f"{ALERTS}::test_a_hold_coop_cannot_explain_is_not_called_a_dialog",),
        select="sqlite",
    ),
)
