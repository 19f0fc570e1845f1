"""The pacing rule (DESIGN.md 5.7b) on the ledger alone: a bucket of 30 frames refilled
at 0.5 a second, at most 50 outstanding, never the same text twice within 30 s; each
limit kept with a margin, derived from what the ledger recorded, and said in words that
stay the same while nothing changes. The clock is the test's."""

from __future__ import annotations

import math

from coop_engine import pacing
from coop_engine.engine import Engine
from coop_engine.formats import iso
from coop_engine.models import Outbox
from hosts.sim.admission import Admission

from .support import CHAT, NOT_WRITTEN, OTHER_CHAT, SENT, FakeClock, Steps, cursor, peer_entry

RECEIVER_INTERVAL = 1 / pacing.RECEIVER_REFILL_PER_SECOND  # 2 s


def hms(at: float) -> str:
    return str(iso(math.ceil(at), timespec="seconds"))[11:19]


class Sender:
    """What the door does with each envelope: ask the rule, send only when it allows."""

    def __init__(self, engine: Engine, steps: Steps, clock: FakeClock) -> None:
        self.engine, self.steps, self.clock = engine, steps, clock
        self.sent_at: dict[str, float] = {}

    def reason(self, outbox_id: str) -> str | None:
        return pacing.pace(Outbox.get_by_id(outbox_id), self.clock())

    def offer(self, outbox_id: str) -> str | None:
        """Send when the rule allows; returns the rule's reason when it does not."""
        reason = self.reason(outbox_id)
        if reason is None:
            self.steps.send(outbox_id)
            self.sent_at[outbox_id] = self.clock()
        return reason

    def invitations(self, count: int, chat: str = CHAT) -> list[str]:
        """New invitations, in the order the coordinator takes them."""
        made = [self.steps.invitation(chat=chat)["outbox"] for _ in range(count)]
        ordered = Outbox.select(Outbox.id).where(Outbox.id.in_(made))
        return [row.id for row in ordered.order_by(Outbox.created_at, Outbox.id)]

    def reply(self, session: int, text: str) -> str:
        return str(self.engine.queue_reply(session, text, by="dad")["outbox"])


def sender(engine: Engine, steps: Steps, clock: FakeClock) -> Sender:
    return Sender(engine, steps, clock)


def test_thirty_go_at_once_and_the_thirty_first_waits_for_the_next_token(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(31)
    assert [out.offer(i) for i in ids[:30]] == [None] * 30
    due = clock() + 1 / pacing.REFILL_PER_SECOND
    reason = out.offer(ids[30])
    assert reason == f"paced: this chat admits one more frame at {hms(due)}"
    clock.now = math.ceil(due) - 0.01
    assert out.offer(ids[30]) == reason  # the same words on every pass until it goes
    clock.now = math.ceil(due)
    assert out.offer(ids[30]) is None


def test_the_margin_keeps_every_frame_inside_the_receivers_own_bucket(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(45)
    while len(out.sent_at) < len(ids):
        # Those behind the first one waiting wait too: offering them changes nothing.
        for outbox_id in [i for i in ids if i not in out.sent_at]:
            if out.offer(outbox_id) is not None:
                break
        clock.advance(0.25)
    # The simulator's model of the receiver, at its real rates, drops none of them, even
    # when the burst reaches it a tenth of a second after Coop recorded it.
    times = sorted(out.sent_at.values())
    for late in (0.0, 0.1):
        receiver = Admission()
        arrivals = [t + late for t in times[:30]] + times[30:]
        admitted = [
            receiver.admit("from:cwkCoop", f"body {n}", now=t) for n, t in enumerate(arrivals)
        ]
        assert admitted == [None] * len(times)
    gaps = [later - earlier for earlier, later in zip(times[29:], times[30:], strict=False)]
    assert all(gap >= RECEIVER_INTERVAL for gap in gaps)
    # ... and the margin stays small: the last frame is less than 10% late.
    ideal = times[0] + (len(times) - 30) * RECEIVER_INTERVAL
    assert times[-1] - times[0] <= 1.1 * (ideal - times[0]) + 1


def test_an_idle_minute_refills_the_whole_burst(engine, steps, clock):
    out = sender(engine, steps, clock)
    first, second = out.invitations(30), out.invitations(31)
    assert [out.offer(i) for i in first] == [None] * 30
    for outbox_id in first:
        engine.record_receipt(outbox_id, peer_entry(outbox_id))
    clock.advance(30 / pacing.REFILL_PER_SECOND)
    assert [out.offer(i) for i in second[:30]] == [None] * 30
    assert out.offer(second[30]) is not None


def test_each_waiting_envelope_is_told_about_when_its_turn_comes(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(33)
    for outbox_id in ids[:30]:
        out.offer(outbox_id)
    start, interval = clock(), 1 / pacing.REFILL_PER_SECOND
    assert out.offer(ids[31]) == (
        f"paced: this chat admits one more frame at {hms(start + interval)}, "
        f"and 1 envelope waits ahead of this one: about {hms(start + 2 * interval)}"
    )
    assert out.offer(ids[32]) == (
        f"paced: this chat admits one more frame at {hms(start + interval)}, "
        f"and 2 envelopes wait ahead of this one: about {hms(start + 3 * interval)}"
    )


def test_frames_to_another_chat_take_none_of_this_chats_tokens(engine, steps, clock):
    out = sender(engine, steps, clock)
    for outbox_id in out.invitations(30, chat=OTHER_CHAT):
        assert out.offer(outbox_id) is None
    assert out.offer(out.invitations(1)[0]) is None


def test_an_attempt_the_host_refused_is_no_frame(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(31)
    for outbox_id in ids[:29]:
        out.offer(outbox_id)
    steps.send(ids[29], NOT_WRITTEN)  # refused before connecting: nothing reached the chat
    assert out.offer(ids[29]) is None
    assert out.offer(ids[30]) is not None


def test_a_slow_transport_counts_from_when_it_was_recorded(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(31)
    start = clock()
    attempts = [engine.mark_uncertain(i, cursor())["attempt"] for i in ids[:30]]
    clock.advance(5)  # the frames may have reached the chat only now
    for outbox_id, attempt in zip(ids[:30], attempts, strict=True):
        engine.record_transport(outbox_id, attempt, SENT)
    due = start + 5 + 1 / pacing.REFILL_PER_SECOND
    assert out.offer(ids[30]) == f"paced: this chat admits one more frame at {hms(due)}"


def test_the_same_text_waits_thirty_seconds_and_a_margin(engine, steps, clock):
    out = sender(engine, steps, clock)
    invitation = steps.invitation()
    out.offer(invitation["outbox"])
    first = out.reply(invitation["session"], "Yes, go ahead.")
    again = out.reply(invitation["session"], "Yes, go ahead.")
    other = out.reply(invitation["session"], "And run the tests first.")
    sent = clock()
    assert out.offer(first) is None
    due = math.ceil(sent + pacing.SAME_TEXT_SECONDS)
    reason = out.offer(again)
    assert reason == (
        f"paced: this chat got the same text at {hms(sent)} and drops a repeat within "
        f"30 s; this goes at {hms(due)}"
    )
    assert due >= sent + 31  # past the receiver's 30 s window, with room to spare
    assert out.offer(other) is None  # other words go at once
    clock.now = due - 0.01
    assert out.offer(again) == reason
    clock.now = due
    assert out.offer(again) is None


def test_the_same_text_to_another_chat_goes_at_once(engine, steps, clock):
    out = sender(engine, steps, clock)
    here, there = steps.invitation(), steps.invitation(chat=OTHER_CHAT)
    out.offer(here["outbox"])
    out.offer(there["outbox"])
    assert out.offer(out.reply(here["session"], "Thanks!")) is None
    assert out.offer(out.reply(there["session"], "Thanks!")) is None


def test_fifty_outstanding_hold_the_next_until_one_is_received(engine, steps, clock):
    out = sender(engine, steps, clock)
    ids = out.invitations(52)
    for outbox_id in ids[:30]:
        out.offer(outbox_id)
    clock.advance(30 / pacing.REFILL_PER_SECOND)  # the bucket is full again
    for outbox_id in ids[30:50]:
        assert out.offer(outbox_id) is None
    reason = out.offer(ids[50])
    assert reason == (
        "paced: 50 envelopes to this chat are not yet received, as many as its queue "
        "holds; this goes once one of them is"
    )
    clock.advance(3600)  # time alone frees nothing
    assert out.offer(ids[50]) == reason
    engine.record_receipt(ids[0], peer_entry(ids[0]))
    assert out.offer(ids[50]) is None
    assert out.offer(ids[51]) == reason


# --- the bucket replayed from the ledger's times -------------------------------------------


def test_a_chat_that_never_got_a_frame_has_a_full_bucket():
    assert pacing.bucket([], whole=True) is None


def test_the_whole_history_starts_full_and_a_cut_one_starts_empty():
    whole = pacing.bucket([100.0], whole=True)
    cut = pacing.bucket([100.0], whole=False)
    assert whole == pacing.Bucket(29.0, 100.0) and whole.admits() is None
    assert cut == pacing.Bucket(0.0, 100.0)
    assert cut.admits() == 100.0 + 1 / pacing.REFILL_PER_SECOND


def test_frames_the_receiver_must_have_dropped_take_no_token_below_none():
    burst = pacing.bucket([100.0] * 40, whole=True)
    assert burst == pacing.Bucket(0.0, 100.0)
