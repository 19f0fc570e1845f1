"""A held notice is evidence about the envelope its preview shows, and no other (DESIGN
5.5): a notice for some other peer's message, in the same chat's transcript, leaves an
envelope's verdict to its own prediction."""

from __future__ import annotations

import json

from doorkit import Door

from hosts.sim.replies import held_notice

STRANGER = "uds:/run/user/501/cc-socks/777.sock"


def test_a_held_notice_previewing_another_message_is_not_this_envelopes(door: Door) -> None:
    chat = door.chat("--lose-frames", "--history")
    outbox_id = door.invite(chat)
    door.tick()
    door.tick_until(lambda: len(chat.frames()) == 1)
    notice = held_notice(
        STRANGER, 777, "Can you review my branch before lunch?", 1, "no-mode-asserted"
    )
    entry = {
        "type": "system",
        "subtype": "informational",
        "level": "warning",
        "content": notice,
        "timestamp": "2026-11-29T20:41:03.512Z",
    }
    with chat.transcript.open("a") as transcript:
        transcript.write(json.dumps(entry) + "\n")
    door.tick()
    assert door.row(outbox_id)["held"] is None
    # Its own prediction (accept) decides: idle without its entry a minute after the send.
    door.clock.advance(60)
    door.tick()
    row = door.row(outbox_id)
    assert (row["state"], row["reason"]) == ("expired", "receiver-idle-without-entry")
