"""The Host interface: everything Coop does on a Mac, in JSON-able values.

Each operation is declared once, below, by `@operation`: its name and arguments are the
method's, and calling it sends both to `call`. `LocalHost` answers a call in this
process (its `_op_<name>` methods); `SshHost` and `PipeHost` send it to the helper on
another Mac, which answers it with a `LocalHost` there. `OPERATIONS`, which the helper
and the channel check every request against, is the set of names declared here.

A refusal by the native door (`NativeRefusal`) means nothing was written; a `HostError`
means the Mac itself could not be asked. Both are `HostsError`s.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from hosts.mac.errors import HostError, HostsError, NativeRefusal

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    Operation = TypeVar("Operation", bound=Callable[..., Any])

__all__ = ["OPERATIONS", "Host", "HostError", "HostsError", "NativeRefusal", "operation"]

# name -> the operation's argument names, in order
OPERATIONS: dict[str, tuple[str, ...]] = {}


def operation(declared: Operation) -> Operation:
    """Declare a host operation. The method's body is never run: a call binds its
    arguments by name (defaults filled in) and hands them to `self.call`."""
    name = declared.__name__
    code = declared.__code__
    names = code.co_varnames[1 : code.co_argcount]
    given = declared.__defaults__ or ()
    defaults = {names[len(names) - len(given) + i]: value for i, value in enumerate(given)}
    OPERATIONS[name] = names

    def send(self: Host, *args: Any, **kwargs: Any) -> Any:
        values = {**defaults, **{names[i]: value for i, value in enumerate(args)}, **kwargs}
        return self.call(name, **values)

    send.__name__, send.__qualname__, send.__doc__ = name, declared.__qualname__, declared.__doc__
    return send  # type: ignore[return-value]


class Host(ABC):
    """One Mac of the fleet."""

    name: str

    @abstractmethod
    def call(self, op: str, **args: Any) -> Any:
        """Run one operation of OPERATIONS with JSON-able arguments and result."""

    def read_together(self, requests: list[tuple[str, dict[str, Any]]]) -> list[Any]:
        """Several operations that only read, each its result or the HostsError it
        raised, in order. Here one after another; a Mac reached through a helper is
        asked them all in one round trip (hosts/channel.py)."""
        answers: list[Any] = []
        for op, args in requests:
            try:
                answers.append(self.call(op, **args))
            except HostsError as error:
                answers.append(error)
        return answers

    @operation
    def chats(self, with_policy: bool = False, codex: bool = False) -> dict[str, Any]:
        """Registry entries with liveness and socket verdicts, and skipped files; with
        `with_policy`, each live chat's inputs to the inbound prediction; with `codex`,
        this Mac's Codex thread list too (`codex_threads`), in the same answer."""

    @operation
    def target(self, session_id: str) -> dict[str, Any]:
        """The four facts of exactly one live match, or NativeRefusal."""

    @operation
    def send_frame(self, expected: dict[str, Any], session_id: str, line: str) -> dict[str, Any]:
        """Third registry read on this Mac, compared with `expected`, then the write."""

    @operation
    def registry_entry(self, session_id: str) -> dict[str, Any] | None:
        """The live registry entry for the session id, or None."""

    @operation
    def policy_inputs(self, session_id: str) -> dict[str, Any]:
        """What the inbound prediction reads for one live chat (settings, its command
        line, its recorded permission mode)."""

    @operation
    def transcript_position(self, session_id: str) -> dict[str, Any]:
        """The transcript's path, size and inode (size 0 before the first message)."""

    @operation
    def transcript_scan(
        self, session_id: str, offset: int, needles: list[str], inode: int | None = None
    ) -> dict[str, Any]:
        """Complete lines from `offset` that contain any needle, found by a byte scan."""

    @operation
    def transcript_read(
        self, session_id: str, offset: int, max_bytes: int, inode: int | None = None
    ) -> dict[str, Any]:
        """Complete lines from `offset`, at most `max_bytes`."""

    @operation
    def transcript_tail(self, session_id: str, max_bytes: int) -> dict[str, Any]:
        """The last complete lines within `max_bytes` of the end."""

    @operation
    def codex_threads(self) -> dict[str, Any]:
        """This Mac's Codex thread list (hosts/mac/codex.py)."""

    @operation
    def find_session(self, vendor: str, native_id: str) -> dict[str, Any]:
        """Adoption's question to one Mac: how many live chats (Claude) or saved threads
        (Codex) carry this id here."""

    @operation
    def codex_position(self, thread_id: str) -> dict[str, Any]:
        """Where the thread's rollout stands (path, size, inode), whether the thread is
        archived, and whether some process holds it open now (its writer lock)."""

    @operation
    def codex_queue_add(self, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
        """Put one message in Codex's queue for the thread, `client_id` the id its
        receipt will carry (hosts/mac/codex_door.py): the send's transport answer."""

    @operation
    def codex_queue_delete(self, thread_id: str, queued_id: str) -> dict[str, Any]:
        """Take a message back out of Codex's queue: `{"deleted": true}` only while it
        still waited there."""

    @operation
    def codex_queued(self, thread_id: str) -> dict[str, Any]:
        """Which client ids still wait in Codex's queue for the thread (queue row ids by
        client id), and whether the thread is open now."""

    @operation
    def rollout_scan(
        self, thread_id: str, offset: int, needles: list[str], inode: int | None = None
    ) -> dict[str, Any]:
        """Complete lines of the thread's rollout from `offset` that contain any needle."""

    @operation
    def rollout_read(
        self, thread_id: str, offset: int, max_bytes: int, inode: int | None = None
    ) -> dict[str, Any]:
        """Complete lines of the thread's rollout from `offset`, at most `max_bytes`."""

    @operation
    def rollout_tail(self, thread_id: str, max_bytes: int) -> dict[str, Any]:
        """The last complete lines of the thread's rollout within `max_bytes` of its end
        (the inspector's reading, as `transcript_tail` is a Claude chat's)."""

    @operation
    def health(self) -> dict[str, Any]:
        """The Mac's name, clock and chat counts."""

    @operation
    def survey(
        self,
        since: str | None = None,
        envelopes: list[dict[str, Any]] | None = None,
        codex: str | None = None,
        long_poll: str | None = None,
    ) -> dict[str, Any]:
        """Everything a pass needs from this Mac in one answer (hosts/mac/survey.py): the
        registry entries changed since the cursor `since`, each in-flight envelope's
        sightings from its offset, what the next long-poll watches; with `codex` (the
        digest last told, or "" for none yet) this Mac's Codex thread list when it
        changed. `long_poll` names the office's long-poll: the paths it should watch are
        kept in a file of that name, which it watches too, so a survey that changes them
        wakes the long-poll waiting on the old ones."""

    @operation
    def watch(self, paths: list[str], since: str | None, timeout: float) -> dict[str, Any]:
        """The long-poll: answers once the paths' fingerprint differs from `since`, or
        after `timeout` seconds unchanged (hosts/mac/watch.py)."""

    def long_poller(self) -> Host:
        """This Mac on a connection of its own, for the long-poll: a `watch` waiting
        there never holds up this host's other requests."""
        return self

    def close(self) -> None:  # noqa: B027 - a host without connections has nothing to release
        """Release connections; the next call reconnects."""

    def abort(self) -> None:  # noqa: B027 - a host without connections has nothing to cut
        """Cut off, from another thread, a request in flight (a long-poll, at stop)."""
