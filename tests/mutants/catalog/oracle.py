"""Rules the oracle guards (tests/oracle): an expiry stands only where the receiver's own
records settle the frame's fate. Each mutant here makes Coop expire an envelope whose
fate nothing settles, and the oracle, reading only the receivers' records, counts it."""

from __future__ import annotations

from ..mutant import Mutant

ORACLE = (
    "tests/oracle/test_oracle.py"
    "::test_every_verdict_coop_printed_agrees_with_the_receivers_own_records"
)

MUTANTS = (
    Mutant(
        "oracle-unknown-dialog-expiry-taken-for-five-minutes",
        "unknown never expires: a dialog expiry Coop does not recognise is no expiry at all",
        "coop_engine/policy.py",
        "    return EXPIRY_SECONDS.get("
        'str(policy.get("dialog_expiry") or DEFAULT_DIALOG_EXPIRY))\n',
        "    return EXPIRY_SECONDS.get("
        'str(policy.get("dialog_expiry") or DEFAULT_DIALOG_EXPIRY), 300)\n',
        (ORACLE,),
    ),
    Mutant(
        "oracle-a-chat-without-a-process-taken-for-idle",
        "receiver-idle-without-entry: only a live chat's registry can say idle; a chat that"
        " exited with a frame unread leaves that frame's fate unknown",
        "coop_engine/loop/doors/claude.py",
        '            if entry is None or not wrote_into(entry, cursor.get("target")):\n'
        "                return None\n",
        '            if entry is None:\n                return "idle"\n',
        (ORACLE,),
    ),
    Mutant(
        "a-resumed-process-speaks-for-the-dead-one",
        "a chat is its process: only the process a frame was written into can prove it"
        " dropped; a new one resuming the conversation never had the frame",
        "coop_engine/loop/doors/claude.py",
        "    return process is not None and (process.pid, process.birth) == (\n",
        "    return process is not None or (process.pid, process.birth) == (\n",
        (
            "tests/coordinator/test_resumed_after_an_unread_frame.py"
            "::test_a_new_process_resuming_the_conversation_proves_nothing_of_a_frame_the_dead_one_held",
        ),
    ),
)
