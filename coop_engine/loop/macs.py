"""Each Mac served on its own: a worker per Mac, and for a Mac reached through a helper, a
long-poll that wakes its worker.

A worker runs its Mac's part of a pass (coordinator.pass_mac: one survey, then that Mac's
envelopes) when woken, and otherwise sleeps until its Mac's next due time (a verdict's
grace, a paced envelope's turn). A Mac with a long-poll needs nothing more: its helper
tells of every change there, a chat that died included. The office's own Mac, watched
by watchdog, is surveyed at least every `longest` seconds too, for a chat that died
(which changes no file). A Mac that cannot be
asked within its deadline is unreachable with the reason: its envelopes wait (never
inferred unsent, never expired for silence), it is tried again after 1, 2, 4 ... up to
RETRY_MOST seconds, and it rejoins on the first answer. No worker waits for another, so
no Mac delays another's chats.

The long-poll asks the Mac's helper, on a connection of its own, to answer as soon as
anything its last survey watched changes (hosts/mac/watch.py); the worker then surveys
at once. When nothing changes, the long-poll is the only request outstanding.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from functools import partial
from typing import Any

from coop_engine.loop.coordinator import Coordinator
from hosts.mac.host import HostError

LONG_POLL_SECONDS = 25.0
RETRY_FIRST = 1.0
RETRY_MOST = 15.0
Log = Callable[[str], None]
Guard = Callable[[str, Callable[[], object]], bool]
UNKNOWN = object()  # what the ledger could not answer
IDLE_FOREVER = 24 * 3600.0


class MacWorker:
    def __init__(
        self,
        name: str,
        coordinator: Coordinator,
        guarded: Guard,
        stopping: threading.Event,
        longest: float,
        log: Log,
        after_pass: Callable[[], None],
        crashed: Callable[[BaseException], None],
        long_poll: bool,
        long_poll_seconds: float = LONG_POLL_SECONDS,
        retry_most: float = RETRY_MOST,
    ) -> None:
        self.name = name
        self.coordinator = coordinator
        self.view = coordinator.views[name]
        self.guarded = guarded
        self.stopping = stopping
        # The longest this Mac goes unsurveyed when nothing is due: for a Mac with a
        # long-poll, only as long as nothing changes there (its liveness included).
        self.longest = IDLE_FOREVER if long_poll else longest
        self.retry_wait = longest
        self.log = log
        self.after_pass = after_pass
        self.crashed = crashed
        self.long_poll_seconds = long_poll_seconds
        self.retry_most = retry_most
        self.wake = threading.Event()
        # Why it was woken: a write to the ledger (which needs a pass only for an envelope
        # to send), a change on the Mac (which always does), or both at once.
        self.ledger_news = False
        self.mac_news = False
        self._news = threading.Lock()
        self.passes = 0
        self.progress = threading.Condition()  # notified after each pass, answered or not
        # Passes asked for (coop tick beside this coordinator): the asks a pass took in
        # when it began, and the last ask a finished pass took in.
        self._pass_asks = 0
        self._taking = 0
        self.answered_upto = 0
        self._told: str | None = None  # the unreachable reason last logged
        self._passed_at: float | None = None  # the ledger's time the last pass ran as of
        self._threads = [threading.Thread(target=self.run, name=f"mac-{name}", daemon=True)]
        if long_poll:
            self.view.long_poll = uuid.uuid4().hex
            self._poller = self.view.long_poller()
            self._threads.append(
                threading.Thread(target=self.long_poll, name=f"long-poll-{name}", daemon=True)
            )

    def start(self) -> MacWorker:
        for thread in self._threads:
            thread.start()
        return self

    def news(self) -> None:
        """The ledger changed under another process's (or thread's) command."""
        with self._news:
            self.ledger_news = True
        self.wake.set()

    def changed(self) -> None:
        """Something this Mac's survey watches changed: a pass is due, whatever else
        woke the worker at the same moment."""
        with self._news:
            self.mac_news = True
        self.wake.set()

    def ask_pass(self) -> int:
        """Ask for a pass begun after this call: its ticket, for `await_pass`."""
        with self._news:
            self._pass_asks += 1
            self.mac_news = True  # a pass, whatever else woke the worker
            ticket = self._pass_asks
        self.wake.set()
        return ticket

    def await_pass(self, ticket: int, deadline: float) -> bool:
        """Whether a pass that began after the ask `ticket` finished by `deadline`
        (time.monotonic); False once the coordinator is stopping."""
        with self.progress:
            while self.answered_upto < ticket:
                left = deadline - time.monotonic()
                if left <= 0 or self.stopping.is_set():
                    return False
                self.progress.wait(left)
        return True

    def _woken_by(self) -> tuple[bool, bool]:
        """(ledger, Mac) news since the last asking, taken together: a change arriving
        after this is kept for the next wake, never lost between the two flags. The
        passes asked for so far are taken in by the pass about to begin."""
        with self._news:
            told = self.ledger_news, self.mac_news
            self.ledger_news = self.mac_news = False
            self._taking = self._pass_asks
        return told

    def stop(self) -> None:
        """Wake both threads to see `stopping`; a long-poll in flight is cut off."""
        self.wake.set()
        with self.progress:
            self.progress.notify_all()
        if len(self._threads) > 1:
            self._poller.abort()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    # --- the worker -------------------------------------------------------------------

    def run(self) -> None:
        """Serve this Mac until stopping; a bug in Coop stops the coordinator."""
        try:
            self._serve()
        except Exception as error:
            self.crashed(error)

    def _serve(self) -> None:
        retry = 0.0
        next_at = 0.0  # the first pass runs at once
        while not self.stopping.is_set():
            woken = self.wake.wait(max(0.0, next_at - time.monotonic()))
            if self.stopping.is_set():
                return
            self.wake.clear()
            from_ledger, from_mac = self._woken_by()
            news_only = woken and from_ledger and not from_mac
            if news_only and not self._worth_a_pass():
                continue
            answered = self._pass()
            self.after_pass()
            with self.progress:
                self.passes += 1
                self.answered_upto = self._taking
                self.progress.notify_all()
            if answered:
                retry = 0.0
                next_at = time.monotonic() + self._rest()
            else:
                retry = min(max(retry * 2, RETRY_FIRST), self.retry_most)
                next_at = time.monotonic() + retry

    def _worth_a_pass(self) -> bool:
        """A write to the ledger wakes this Mac only for an envelope it must send."""
        return self._asked(
            "the ledger's news", lambda: self.coordinator.has_pending(self.name), True
        )

    def _asked(self, what: str, question: Callable[[], Any], otherwise: Any) -> Any:
        """The ledger's answer to `question`, or `otherwise` when the ledger refused it
        (told once, as every refused step is)."""
        answers: list[Any] = []
        if self.guarded(f"{what} for {self.name}", lambda: answers.append(question())):
            return answers[0]
        return otherwise

    def _pass(self) -> bool:
        """One pass over this Mac; whether the Mac answered its survey (a pass the
        ledger or a rule refused is tried again as usual, not backed off)."""
        coordinator = self.coordinator
        now = self._passed_at = coordinator.engine.clock()
        self.guarded(
            f"a pass on {self.name}",
            partial(coordinator.pass_mac, self.name, now, self.stopping.is_set),
        )
        reason = coordinator.unreachable.get(self.name)
        if reason != self._told:
            if reason is None:
                self.log(f"{self.name} answers again")
            else:
                self.log(f"{self.name} is unreachable: {reason}; its envelopes wait")
            self._told = reason
        return reason is None

    def _rest(self) -> float:
        """How long this Mac may sleep: until its next due time, or at once when its
        survey left sightings for the next one. What is due is asked as of the time the
        pass ran as of: a try (or a verdict) that fell due while the pass ran, after it
        looked, is due now, not forgotten until the longest wait (a wake a millisecond
        early on the wall clock left a backed-off envelope untried)."""
        if self.view.more:
            return 0.0
        clock = self.coordinator.engine.clock
        passed_at = self._passed_at if self._passed_at is not None else clock()
        due = self._asked(
            "the next due time", lambda: self.coordinator.due(self.name, passed_at), 0.0
        )
        if due == 0.0:
            return RETRY_FIRST  # the ledger could not say: look again soon
        return self.longest if due is None else min(self.longest, max(0.0, due - clock()))

    # --- the long-poll ----------------------------------------------------------------

    def long_poll(self) -> None:
        """Keep one `watch` outstanding on the Mac; a bug here stops the coordinator, as
        one in the worker does, rather than leave the Mac silently unwatched."""
        try:
            self._watch()
        except Exception as error:
            self.crashed(error)

    def _watch(self) -> None:
        """One `watch` outstanding at a time, with what the last survey watched; wake
        the worker when it answers changed (unless a newer survey already took the
        change in)."""
        while not self.stopping.is_set():
            seen, watch = self.view.surveys, self.view.watching
            if watch is None:
                self._await_pass(seen, self.retry_wait)
                continue
            try:
                answer = self._poller.watch(watch["paths"], watch["digest"], self.long_poll_seconds)
            except HostError:
                if self.stopping.is_set():
                    break
                # The worker's own survey tells how the Mac is: once, at once; then this
                # waits for a survey that reached it.
                if self.coordinator.reachable(self.name):
                    self.changed()
                self._await_pass(seen, self.retry_most)
                continue
            if answer["changed"] and self.view.surveys == seen:
                self.changed()
                self._await_pass(seen, self.retry_wait)
        self._poller.close()

    def _await_pass(self, seen: int, timeout: float) -> None:
        """Until a survey newer than `seen` was taken (or `timeout`, or stopping)."""
        deadline = time.monotonic() + timeout
        with self.progress:
            while self.view.surveys == seen and not self.stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    return
                self.progress.wait(left)
