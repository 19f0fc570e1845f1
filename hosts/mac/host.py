"""The Host interface: everything Coop does on a Mac, in JSON-able values.

`LocalHost` answers in-process; `SshHost` sends the same operations to `helper.py`
running on another Mac, which answers them with a `LocalHost` there. A refusal by the
native door (`NativeRefusal`) means nothing was written; a `HostError` means the Mac
itself could not be asked.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

TYPE_CHECKING = False  # typing costs milliseconds at start-up; `coop chats` starts often
if TYPE_CHECKING:
    from typing import Any

OPERATIONS = (
    "chats",
    "target",
    "send_frame",
    "registry_entry",
    "policy_inputs",
    "transcript_position",
    "transcript_scan",
    "transcript_read",
    "transcript_tail",
    "codex_threads",
    "find_session",
    "health",
)


class HostError(Exception):
    """A Mac could not be asked: refused, timed out, auth failed, host key, helper crashed."""

    def __init__(self, host: str, cause: str) -> None:
        super().__init__(f"{host}: {cause}")
        self.host = host
        self.cause = cause


class Host(ABC):
    """One Mac of the fleet."""

    name: str

    @abstractmethod
    def call(self, op: str, **args: Any) -> Any:
        """Run one operation of OPERATIONS with JSON-able arguments and result."""

    # Named wrappers, so callers read as what they do.

    def chats(self, with_policy: bool = False) -> dict[str, Any]:
        """Registry entries with liveness and socket verdicts, and skipped files."""
        result: dict[str, Any] = self.call("chats", with_policy=with_policy)
        return result

    def target(self, session_id: str) -> dict[str, Any]:
        """The four facts of exactly one live match, or NativeRefusal."""
        result: dict[str, Any] = self.call("target", session_id=session_id)
        return result

    def send_frame(self, expected: dict[str, Any], session_id: str, line: str) -> dict[str, Any]:
        """Third registry read on this Mac, compared with `expected`, then the write."""
        result: dict[str, Any] = self.call(
            "send_frame", expected=expected, session_id=session_id, line=line
        )
        return result

    def registry_entry(self, session_id: str) -> dict[str, Any] | None:
        """The live registry entry for the session id, or None."""
        result: dict[str, Any] | None = self.call("registry_entry", session_id=session_id)
        return result

    def policy_inputs(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("policy_inputs", session_id=session_id)
        return result

    def transcript_position(self, session_id: str) -> dict[str, Any]:
        result: dict[str, Any] = self.call("transcript_position", session_id=session_id)
        return result

    def transcript_scan(
        self, session_id: str, offset: int, needles: list[str], inode: int | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "transcript_scan", session_id=session_id, offset=offset, needles=needles, inode=inode
        )
        return result

    def transcript_read(
        self, session_id: str, offset: int, max_bytes: int, inode: int | None = None
    ) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "transcript_read",
            session_id=session_id,
            offset=offset,
            max_bytes=max_bytes,
            inode=inode,
        )
        return result

    def transcript_tail(self, session_id: str, max_bytes: int) -> dict[str, Any]:
        result: dict[str, Any] = self.call(
            "transcript_tail", session_id=session_id, max_bytes=max_bytes
        )
        return result

    def codex_threads(self) -> dict[str, Any]:
        """This Mac's Codex thread list (hosts/mac/codex.py)."""
        result: dict[str, Any] = self.call("codex_threads")
        return result

    def find_session(self, vendor: str, native_id: str) -> dict[str, Any]:
        """Adoption's question to one Mac: how many live chats (Claude) or saved threads
        (Codex) carry this id here."""
        result: dict[str, Any] = self.call("find_session", vendor=vendor, native_id=native_id)
        return result

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self.call("health")
        return result

    def close(self) -> None:  # noqa: B027 - a host without connections has nothing to release
        """Release connections; the next call reconnects."""
