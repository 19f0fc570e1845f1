"""The chat itself: inbound judgement, held frames, duplicates, and the turns it runs.

One asyncio loop drives everything, so the registry and transcript are only ever
written from one place at a time. A turn is either a peer message to an idle chat
(shape 1: a new turn) or a human-started turn with tool calls, which absorbs peer
messages at its tool-call boundaries (shape 2: a queued_command attachment).
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hosts.sim import replies
from hosts.sim.inbox import Frame
from hosts.sim.options import ChatOptions
from hosts.sim.registry import Registry
from hosts.sim.settings import Verdict, judge, load_layers
from hosts.sim.transcript import Transcript, new_id

DUPLICATE_SECONDS = 30.0
QUEUE_CAP = 50
WAITING_FOR = "permission prompt"


@dataclass
class PeerItem:
    """An accepted peer message waiting for a turn: its recorded content and queue id."""

    frame: Frame
    content: str
    command_uuid: str


class HumanTurn:
    """A prompt the human typed that sets off a turn with tool calls."""


@dataclass
class CommandTurn:
    """A prompt asking the chat to run one shell command through its Bash tool."""

    command: str


@dataclass
class Held:
    """A frame parked behind the approval dialog (or for review)."""

    frame: Frame
    verdict: Verdict
    timer: asyncio.TimerHandle | None = None


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
        self._queue: deque[PeerItem | HumanTurn | CommandTurn] = deque()
        self._held: list[Held] = []
        self._seen: dict[tuple[str, str], float] = {}
        self._running = False
        self._wake = asyncio.Event()

    # --- status -------------------------------------------------------------------------

    def status(self) -> str:
        """waiting while a frame is held, busy while a turn runs or waits, else idle."""
        if self._held:
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
        tag = f"frame {frame.msg_id}"
        if frame.session_id != self.opts.session_id:
            self.note(f"{tag}: dropped: session_id is not this chat's")
            return
        if self._duplicate(frame):
            self.note(f"{tag}: dropped: duplicate body from {frame.sender}")
            return
        if len(self._held) + sum(isinstance(i, PeerItem) for i in self._queue) >= QUEUE_CAP:
            self.note(f"{tag}: dropped: inbox queue full")
            return
        verdict = judge(load_layers(self.opts), self.mode, time_scale=self.opts.time_scale)
        if verdict.action == "hold":
            self._hold(frame, verdict)
        elif verdict.action == "accept":
            self._accept(frame)
        # Noted after acting, so whoever reads the note finds the effect already written.
        self.note(f"{tag}: {verdict.action} ({verdict.source})")

    def _duplicate(self, frame: Frame) -> bool:
        """True when the same sender sent the same body within the duplicate window."""
        now = time.monotonic()
        window = DUPLICATE_SECONDS * self.opts.time_scale
        self._seen = {k: t for k, t in self._seen.items() if now - t < window}
        key = (frame.sender, frame.text)
        if key in self._seen:
            return True
        self._seen[key] = now
        return False

    def _accept(self, frame: Frame) -> None:
        if self.opts.lose_frames:
            self.note(f"frame {frame.msg_id}: lost (--lose-frames)")
            return
        content = replies.wrap_peer_message(frame.sender, frame.text)
        # The frame's uuid survives only on a host-named socket; otherwise the receiver
        # mints the id its queue, prompt entry and attachment use.
        command_uuid = new_id()
        if self.opts.host_socket_path is not None and frame.uuid is not None:
            command_uuid = frame.uuid
        self.transcript.queue_operation("enqueue", content=content, commandUuid=command_uuid)
        self._queue.append(PeerItem(frame, content, command_uuid))
        self._wake.set()
        self.refresh_status()

    def _hold(self, frame: Frame, verdict: Verdict) -> None:
        if self.opts.held_notice:
            notice = replies.held_notice(frame.sender, frame.text, verdict.expires_after)
            self.transcript.system("informational", level="warning", content=notice)
        held = Held(frame, verdict)
        if verdict.expires_after is not None:
            loop = asyncio.get_running_loop()
            held.timer = loop.call_later(verdict.expires_after, self._expire, held)
        self._held.append(held)
        self.refresh_status()

    def _expire(self, held: Held) -> None:
        if held in self._held:
            self._held.remove(held)
            self.note(f"frame {held.frame.msg_id}: held frame expired and was dropped")
            self.refresh_status()

    def deliver_held(self) -> None:
        """The user chose Deliver: every held frame goes on as if it had been accepted."""
        held, self._held = self._held, []
        for item in held:
            if item.timer is not None:
                item.timer.cancel()
            self.note(f"frame {item.frame.msg_id}: delivered by the user")
            self._accept(item.frame)
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

    # --- turns --------------------------------------------------------------------------

    async def run(self) -> None:
        """Run queued turns one after another, for ever."""
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._queue:
                item = self._queue.popleft()
                self._running = True
                self.refresh_status()
                try:
                    if isinstance(item, HumanTurn):
                        await self._tool_turn()
                    elif isinstance(item, CommandTurn):
                        await self._command_turn(item.command)
                    else:
                        await self._peer_turn(item)
                except Exception as exc:  # a broken turn must not end the chat
                    self.note(f"turn failed: {exc!r}")
                finally:
                    self._running = False
            self.refresh_status()

    def write_history(self) -> None:
        """A first, human-typed turn, as an already-used chat has."""
        started = time.monotonic()
        self.transcript.typed_prompt(replies.HUMAN_HISTORY_PROMPT)
        self.transcript.assistant([{"type": "text", "text": replies.HISTORY_FINAL}])
        self._turn_duration(started, 2)

    def _origin(self, frame: Frame) -> dict[str, Any]:
        origin: dict[str, Any] = {"kind": "peer", "from": frame.sender}
        if frame.peer_pid is not None:
            origin["verifiedPeerPid"] = frame.peer_pid
        if frame.peer_start is not None:
            origin["verifiedPeerProcStart"] = frame.peer_start
        origin["msg_id"] = frame.msg_id
        return origin

    async def _peer_turn(self, item: PeerItem) -> None:
        started = time.monotonic()
        self.transcript.queue_operation("dequeue", commandUuid=item.command_uuid)
        self.transcript.peer_prompt(item.content, self._origin(item.frame), item.command_uuid)
        self.note(f"frame {item.frame.msg_id}: started a turn")
        await asyncio.sleep(self.opts.think)
        text = replies.answer([item.frame.text], self.opts.answer)
        self.transcript.assistant([{"type": "text", "text": text}])
        self._turn_duration(started, 2)

    async def _tool_turn(self) -> None:
        started = time.monotonic()
        self.transcript.typed_prompt(replies.HUMAN_BUSY_PROMPT)
        absorbed: list[str] = []
        calls = after_absorb = 0
        messages = 1
        while calls == 0 or not self._turn_done(started, absorbed, after_absorb):
            command, output = replies.TOOL_SCRIPT[calls % len(replies.TOOL_SCRIPT)]
            tool_id = "toolu_" + uuid.uuid4().hex[:24]
            use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
            self.transcript.assistant([use])
            await asyncio.sleep(self.opts.tool_interval)
            # The tool call's boundary: queued peer messages join the turn here.
            newly = self._absorb()
            absorbed += newly
            after_absorb = 0 if newly else after_absorb + 1
            self.transcript.tool_result(tool_id, output)
            calls += 1
            messages += 2 + len(newly)
        await asyncio.sleep(self.opts.think)
        final = replies.busy_final(absorbed, self.opts.answer)
        self.transcript.assistant([{"type": "text", "text": final}])
        self._turn_duration(started, messages + 1)

    async def _command_turn(self, command: str) -> None:
        started = time.monotonic()
        self.transcript.typed_prompt(f"Please run: {command}")
        tool_id = "toolu_" + uuid.uuid4().hex[:24]
        use = {"type": "tool_use", "id": tool_id, "name": "Bash", "input": {"command": command}}
        self.transcript.assistant([use])
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
        self.transcript.tool_result(tool_id, output.decode("utf-8", "replace"))
        await asyncio.sleep(self.opts.think)
        self.transcript.assistant([{"type": "text", "text": f"Ran it (exit {child.returncode})."}])
        self._turn_duration(started, 4)

    def _turn_done(self, started: float, absorbed: list[str], after_absorb: int) -> bool:
        # An absorbed message gets a couple more tool calls before the turn can end.
        elapsed = time.monotonic() - started
        return elapsed >= self.opts.busy_seconds and (not absorbed or after_absorb >= 2)

    def _absorb(self) -> list[str]:
        """Join every queued peer message to the running turn; returns their texts."""
        peers = [i for i in self._queue if isinstance(i, PeerItem)]
        self._queue = deque(i for i in self._queue if not isinstance(i, PeerItem))
        for item in peers:
            self.transcript.queue_operation(
                "remove", reason="absorbed_mid_turn", commandUuid=item.command_uuid
            )
            self.transcript.absorbed(item.content, self._origin(item.frame), item.command_uuid)
            self.note(f"frame {item.frame.msg_id}: absorbed mid-turn")
        return [item.frame.text for item in peers]

    def _turn_duration(self, started: float, messages: int) -> None:
        duration = int((time.monotonic() - started) * 1000)
        self.transcript.system("turn_duration", durationMs=duration, messageCount=messages)
