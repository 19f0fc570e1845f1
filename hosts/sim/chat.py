"""The chat itself: inbound judgement, held frames, admission, and the turns it runs.

One asyncio loop drives everything, so the registry and transcript are only ever
written from one place at a time. A turn is either peer messages to an idle chat
(shape 1: every message queued when the turn starts joins it, one user entry each), or
a human-started turn with tool calls, which absorbs peer messages at its tool-call
boundaries (shape 2: a queued_command attachment). What is written, and in which order,
follows the real receiver (tests/real_claude/OBSERVED.md), quirks included: messages
queued behind a running turn are dequeued before that turn's final is written.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hosts.sim import replies
from hosts.sim.admission import Admission
from hosts.sim.inbox import Frame
from hosts.sim.options import ChatOptions
from hosts.sim.registry import Registry
from hosts.sim.settings import Verdict, judge, load_layers
from hosts.sim.transcript import Transcript, new_id, timestamp

QUEUE_CAP = 50
WAITING_FOR = "permission prompt"
POLICY_POLL_SECONDS = 0.2
# The real chat takes a queued message about 30 ms after it arrives; whatever arrives
# meanwhile joins the same turn.
QUEUE_LATENCY_SECONDS = 0.03
# How often a turn held by --think-gate looks for its file.
THINK_GATE_POLL_SECONDS = 0.02


@dataclass
class PeerItem:
    """An accepted peer message waiting for a turn, with the ids the receiver minted."""

    frame: Frame
    command_uuid: str
    delivery_id: str
    enqueued_at: str
    dequeued: bool = False
    notice: str | None = None  # a "Released ..." notice, written when it is taken


class HumanTurn:
    """A prompt the human typed that sets off a turn with tool calls."""


@dataclass
class CommandTurn:
    """A prompt asking the chat to run one shell command through its Bash tool."""

    command: str


@dataclass
class ClearCommand:
    """The human typed /clear while a turn ran: queued, it runs once the turn ends."""

    dequeued: bool = False


@dataclass
class Held:
    """A frame parked behind the approval dialog, or by a settings file's hold."""

    frame: Frame
    verdict: Verdict
    timer: asyncio.TimerHandle | None = None


def _tag(frame: Frame) -> str:
    return f"frame {frame.msg_id or '(no msg_id)'}"


class Chat:
    """A simulated interactive Claude Code chat with cross-session messaging on."""

    def __init__(
        self,
        opts: ChatOptions,
        registry: Registry,
        transcript: Transcript,
        mode: str,
        note: Callable[[str], None],
    ) -> None:
        self.opts = opts
        self.registry = registry
        self.transcript = transcript
        self.mode = mode
        self.note = note
        self.admission = Admission(opts.time_scale)
        self.session_id = opts.session_id  # the current conversation: /clear changes it
        self._queue: deque[PeerItem | HumanTurn | CommandTurn | ClearCommand] = deque()
        self._held: list[Held] = []
        self._running = False
        self._wake = asyncio.Event()
        self._watcher: asyncio.Task[None] | None = None
        self._turns = 0
        self._typed = 0

    # --- status -------------------------------------------------------------------------

    def status(self) -> str:
        """waiting while the approval dialog is open, busy while a turn runs or waits,
        else idle. A hold a settings file asked for opens no dialog."""
        if any(held.verdict.dialog for held in self._held):
            return "waiting"
        return "busy" if self._running or self._queue else "idle"

    def refresh_status(self) -> None:
        """Rewrite the registry when the status (or what it waits for) changed."""
        status = self.status()
        waiting_for = WAITING_FOR if status == "waiting" else None
        fields = self.registry.fields
        if fields.get("status") != status or fields.get("waitingFor") != waiting_for:
            self.registry.update(status=status, waitingFor=waiting_for)

    # --- inbound ------------------------------------------------------------------------

    def receive(self, frame: Frame) -> None:
        """Judge one well-formed frame: drop, hold, or accept it."""
        tag = _tag(frame)
        if frame.session_id != self.session_id:
            self.note(f"{tag}: dropped: session_id is not this chat's")
            return
        verdict = judge(load_layers(self.opts), self.mode, time_scale=self.opts.time_scale)
        if verdict.action == "hold":
            self._hold(frame, verdict)
        elif verdict.action == "accept" and self._admit(frame):
            if self.opts.lose_frames:
                self.note(f"{tag}: lost (--lose-frames)")
                return
            self._accept(frame)
        # Noted after acting, so whoever reads the note finds the effect already written.
        self.note(f"{tag}: {verdict.action} ({verdict.source})")

    def _admit(self, frame: Frame) -> bool:
        """Loop protection and the queue's cap; a dropped frame leaves a notice."""
        key = f"from:{frame.sender}" if frame.sender != "unknown" else f"pid:{frame.peer_pid}"
        reason = self.admission.admit(key, frame.text)
        if reason is None and self._undelivered() >= QUEUE_CAP:
            reason = "queue-full"
        if reason is None:
            return True
        self.transcript.notice(replies.dropped_notice(frame.sender, reason))
        self.note(f"{_tag(frame)}: dropped: {reason} from {frame.sender}")
        return False

    def _undelivered(self) -> int:
        return len(self._held) + sum(isinstance(i, PeerItem) for i in self._queue)

    def _accept(self, frame: Frame, notice: str | None = None) -> None:
        self.transcript.queue_operation("enqueue", content=frame.text)
        # The frame's uuid survives only on a host-named socket; otherwise the receiver
        # mints the id its queue, prompt entry and attachment use.
        command_uuid = new_id()
        if self.opts.host_socket_path is not None and frame.uuid is not None:
            command_uuid = frame.uuid
        self._queue.append(PeerItem(frame, command_uuid, new_id(), timestamp(), notice=notice))
        self._wake.set()
        self.refresh_status()

    def _hold(self, frame: Frame, verdict: Verdict) -> None:
        held = Held(frame, verdict)
        self._held.append(held)
        if self.opts.held_notice:
            cause = verdict.cause or "explicit-setting"
            count = len(self._held)
            text = replies.held_notice(frame.sender, frame.peer_pid, frame.text, count, cause)
            self.transcript.notice(text)
        if verdict.dialog and verdict.expires_after is not None:
            loop = asyncio.get_running_loop()
            held.timer = loop.call_later(verdict.expires_after, self._expire, held)
        if self._watcher is None or self._watcher.done():
            self._watcher = asyncio.get_running_loop().create_task(self._watch_policy())
        self.refresh_status()

    def _expire(self, held: Held) -> None:
        """The dialog expired: the frame is dropped and nothing is written."""
        if held in self._held:
            self._held.remove(held)
            self.note(f"{_tag(held.frame)}: held frame expired and was dropped")
            self.refresh_status()

    async def _watch_policy(self) -> None:
        """Held frames go on as soon as the settings accept (the real chat watches its
        settings files)."""
        while self._held:
            await asyncio.sleep(POLICY_POLL_SECONDS)
            verdict = judge(load_layers(self.opts), self.mode, time_scale=self.opts.time_scale)
            if verdict.action == "accept" and self._held:
                self._release(list(self._held), "policy")

    def deliver_held(self) -> None:
        """The user chose Deliver in the approval dialog: its frames go on."""
        self._release([held for held in self._held if held.verdict.dialog], "approved")

    def _release(self, items: list[Held], why: str) -> None:
        if not items:
            return
        notice = replies.released_notice(len(items), why)
        for index, item in enumerate(items):
            self._held.remove(item)
            if item.timer is not None:
                item.timer.cancel()
            self.note(f"{_tag(item.frame)}: released ({why})")
            self._accept(item.frame, notice if index == 0 else None)
        self.refresh_status()

    def start_busy_turn(self) -> None:
        """The human typed a prompt that sets off a turn with tool calls."""
        self._queue.append(HumanTurn())
        self._wake.set()
        self.refresh_status()

    def run_command(self, command: str) -> None:
        """The human asked the chat to run a shell command: its Bash tool runs it as a
        child of this process, as Claude Code's does."""
        self._queue.append(CommandTurn(command))
        self._wake.set()
        self.refresh_status()

    def type_clear(self) -> None:
        """The human typed /clear: a new conversation in the same process, with the same
        inbox (tests/real_claude/OBSERVED.md 12). While a turn runs it is queued
        (`enqueue` in the old file), and frames keep joining that turn meanwhile."""
        if not self._running and not self._queue:
            self._clear()
            return
        self.transcript.queue_operation("enqueue", content="/clear")
        self._queue.append(ClearCommand())
        self._wake.set()

    def _clear(self) -> None:
        before = self.session_id
        self.session_id = str(uuid.uuid4())
        self.transcript = self.transcript.cleared(self.session_id)
        self.registry.update(sessionId=self.session_id)
        self.note(f"cleared: conversation {before} is now {self.session_id}")

    # --- turns --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run queued turns one after another, for ever."""
        while True:
            await self._wake.wait()
            await asyncio.sleep(QUEUE_LATENCY_SECONDS)
            self._wake.clear()
            while self._queue:
                self._running = True
                self.refresh_status()
                try:
                    await self._next_turn()
                except Exception as exc:  # a broken turn must not end the chat
                    self.note(f"turn failed: {exc!r}")
                finally:
                    self._running = False
            self.refresh_status()

    async def _next_turn(self) -> None:
        if isinstance(self._queue[0], PeerItem):
            await self._peer_turn(self._take_peers())
            return
        item = self._queue.popleft()
        if isinstance(item, ClearCommand):
            self._dequeue([item])
            self._clear()
        elif isinstance(item, CommandTurn):
            await self._command_turn(item.command)
        else:
            await self._tool_turn()

    def _take_peers(self) -> list[PeerItem]:
        """Every peer message at the head of the queue, and those behind a /clear queued
        among them: they start one turn together, before the /clear runs (as measured)."""
        batch: list[PeerItem] = []
        rest: deque[PeerItem | HumanTurn | CommandTurn | ClearCommand] = deque()
        while self._queue and isinstance(self._queue[0], (PeerItem, ClearCommand)):
            item = self._queue.popleft()
            if isinstance(item, PeerItem):
                batch.append(item)
            else:
                rest.append(item)
        self._queue = rest + self._queue
        return batch

    def _dequeue(self, items: Sequence[PeerItem | ClearCommand]) -> None:
        for item in items:
            if not item.dequeued:
                self.transcript.queue_operation("dequeue")
                item.dequeued = True

    def _position(self, typed: bool) -> dict[str, int]:
        self._turns += 1
        self._typed += typed
        return {"promptIndex": self._typed, "turnIndex": self._turns}

    def _begin(self) -> None:
        self.transcript.prompt_id = new_id()

    def write_history(self) -> None:
        """A first, human-typed turn, as an already-used chat has."""
        started = time.monotonic()
        self._begin()
        self.transcript.typed_prompt(replies.HUMAN_HISTORY_PROMPT, self._position(True))
        self._final(replies.HISTORY_FINAL, started, 2)

    def _origin(self, frame: Frame) -> dict[str, Any]:
        origin: dict[str, Any] = {"kind": "peer", "from": frame.sender}
        if frame.peer_pid is not None:
            origin["verifiedPeerPid"] = frame.peer_pid
        if frame.peer_start is not None:
            origin["verifiedPeerProcStart"] = frame.peer_start
        if frame.msg_id is not None:
            origin["msg_id"] = frame.msg_id
        return origin

    async def _peer_turn(self, batch: list[PeerItem]) -> None:
        started = time.monotonic()
        self._dequeue(batch)
        for item in batch:
            if item.notice:
                self.transcript.notice(item.notice)
        self._begin()
        position = self._position(False)
        for item in batch:
            content = replies.wrap_peer_message(item.frame.text)
            origin = self._origin(item.frame)
            self.transcript.peer_prompt(content, origin, item.command_uuid, dict(position))
            self.note(f"{_tag(item.frame)}: started a turn")
        await self._think()
        text = replies.answer([item.frame.text for item in batch], self.opts.answer)
        self._final(text, started, len(batch) + 1)

    async def _tool_turn(self) -> None:
        started = time.monotonic()
        self._begin()
        self.transcript.typed_prompt(replies.HUMAN_BUSY_PROMPT, self._position(True))
        absorbed: list[str] = []
        calls = after_absorb = 0
        messages = 1
        while calls == 0 or not self._turn_done(started, absorbed, after_absorb):
            command, output = replies.TOOL_SCRIPT[calls % len(replies.TOOL_SCRIPT)]
            tool_id = "toolu_" + uuid.uuid4().hex[:24]
            use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
            use_entry = self.transcript.assistant([use])
            await asyncio.sleep(self.opts.tool_interval)
            # The tool call's boundary: queued peer messages join the turn here.
            newly = self._absorb(tool_id, output, use_entry)
            absorbed += newly
            after_absorb = 0 if newly else after_absorb + 1
            calls += 1
            messages += 2 + len(newly)
        await self._think()
        self._final(replies.busy_final(absorbed, self.opts.answer), started, messages + 1)

    async def _command_turn(self, command: str) -> None:
        started = time.monotonic()
        self._begin()
        self.transcript.typed_prompt(f"Please run: {command}", self._position(True))
        tool_id = "toolu_" + uuid.uuid4().hex[:24]
        use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
        use_entry = self.transcript.assistant([use])
        env = {**os.environ, "CLAUDE_CODE_MESSAGING_SOCKET": str(self.opts.socket_path)}
        child = await asyncio.create_subprocess_shell(
            command,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            cwd=self.opts.cwd,
            env=env,
        )
        output, _ = await child.communicate()
        self.note(f"ran {command!r}: exit {child.returncode}")
        self.transcript.tool_result(tool_id, output.decode("utf-8", "replace"), use_entry)
        await self._think()
        self._final(f"Ran it (exit {child.returncode}).", started, 4)

    async def _think(self) -> None:
        """The model writing a turn's final: --think seconds, and then, with --think-gate,
        until its file exists, so a test can act while a turn is surely still running."""
        await asyncio.sleep(self.opts.think)
        gate = self.opts.think_gate
        while gate is not None and not os.path.exists(gate):
            await asyncio.sleep(THINK_GATE_POLL_SECONDS)

    def _turn_done(self, started: float, absorbed: list[str], after_absorb: int) -> bool:
        # An absorbed message gets a couple more tool calls before the turn can end.
        elapsed = time.monotonic() - started
        gate = self.opts.tool_gate
        if gate is not None and not os.path.exists(gate):
            return False
        return elapsed >= self.opts.busy_seconds and (not absorbed or after_absorb >= 2)

    def _absorb(self, tool_id: str, output: str, use_entry: str) -> list[str]:
        """End a tool call, joining every queued peer message to the running turn:
        `remove` records, the tool's result, then one attachment each. Returns their
        texts."""
        peers = [i for i in self._queue if isinstance(i, PeerItem)]
        self._queue = deque(i for i in self._queue if not isinstance(i, PeerItem))
        for item in peers:
            if item.notice:
                self.transcript.notice(item.notice)
            self.transcript.queue_operation(
                "remove",
                content=item.frame.text,
                reason="absorbed_mid_turn",
                commandUuid=item.command_uuid,
                deliveryId=item.delivery_id,
            )
        self.transcript.tool_result(tool_id, output, use_entry)
        for item in peers:
            self.transcript.absorbed(
                item.frame.text,
                replies.absorbed_rendering(item.frame.text),
                self._origin(item.frame),
                item.command_uuid,
                item.delivery_id,
                item.enqueued_at,
            )
            self.note(f"{_tag(item.frame)}: absorbed mid-turn")
        return [item.frame.text for item in peers]

    def _leaving(self) -> list[PeerItem | ClearCommand]:
        """What the next turn takes from the queue, as the real chat dequeues it before
        the running turn's final: the peer messages (and /clears) at the queue's head, or,
        when a /clear is first, the /clear alone. It runs before what is behind it, so those
        are dequeued into the new conversation's file (OBSERVED.md 12)."""
        if self._queue and isinstance(self._queue[0], ClearCommand):
            return [self._queue[0]]
        leading: list[PeerItem | ClearCommand] = []
        for item in self._queue:
            if not isinstance(item, (PeerItem, ClearCommand)):
                break
            leading.append(item)
        return leading

    def _final(self, text: str, started: float, messages: int) -> None:
        """The turn's final and its turn_duration. What the next turn takes is dequeued
        first: the real chat writes its dequeue before the final."""
        self._dequeue(self._leaving())
        self.transcript.assistant([{"type": "text", "text": text}])
        duration = int((time.monotonic() - started) * 1000)
        self.transcript.system("turn_duration", durationMs=duration, messageCount=messages)
