"""Refusals before I/O: the envelope stays pending with last_error, no byte is written,
nothing is uncertain."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from doorkit import Door
from prerequisites import missing

from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.mac.native import RECEIVER_CHANGED, SOCKET_NOT_PRIVATE


def _assert_refused(door: Door, outbox_id: str, error: str, *chats: Any) -> None:
    row = door.row(outbox_id)
    assert row["state"] == "pending"
    assert row["last_error"] is not None and row["last_error"].startswith(error), row["last_error"]
    assert row["facts"]["transport"] is None
    for chat in chats:
        assert chat.frames() == []


def test_socket_with_group_or_other_bits_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    os.chmod(chat.socket, 0o660)
    door.tick()
    _assert_refused(door, outbox_id, SOCKET_NOT_PRIVATE, chat)


def test_socket_parent_directory_with_group_or_other_bits_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    os.chmod(chat.socket.parent, 0o755)
    door.tick()
    _assert_refused(door, outbox_id, SOCKET_NOT_PRIVATE, chat)


def test_symlink_in_place_of_the_socket_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    elsewhere = Path(tempfile.mkdtemp(dir="/tmp")) / "real.sock"
    shutil.move(str(chat.socket), elsewhere)
    chat.socket.symlink_to(elsewhere)
    door.tick()
    _assert_refused(door, outbox_id, SOCKET_NOT_PRIVATE, chat)


def test_then_restored_socket_is_sent_and_last_error_cleared(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    os.chmod(chat.socket, 0o666)
    door.tick()
    os.chmod(chat.socket, 0o600)
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] in ("uncertain", "delivered")
    assert row["last_error"] is None


def test_reused_pid_with_another_start_time_is_not_a_live_match(door: Door) -> None:
    chat = door.chat()
    entry = chat.entry()
    chat.kill()  # the entry lingers, as Claude Code's do after a crash
    stranger = subprocess.Popen(["sleep", "30"])
    try:
        # The stranger now holds a pid the registry names, with a different birth.
        moved = chat.registry.with_name(f"{stranger.pid}.json")
        entry["pid"] = stranger.pid
        moved.write_text(json.dumps(entry))
        chat.registry.unlink()
        outbox_id = door.invite(chat)
        door.tick()
        row = door.row(outbox_id)
        assert row["state"] == "pending"
        assert row["last_error"] == f"No live chat with session {chat.session_id}"
        listing = door.host.chats()
        (seen,) = [c for c in listing["chats"] if c["pid"] == stranger.pid]
        assert seen["live"] is False and seen["socket"].startswith("not live")
    finally:
        stranger.kill()
        stranger.wait()


def test_exited_chat_lingering_entry_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    chat.kill()
    assert chat.registry.exists()
    door.tick()
    assert door.row(outbox_id)["last_error"] == f"No live chat with session {chat.session_id}"


class RewritingHost(Host):
    """Passes calls to a LocalHost, and rewrites the registry after the N-th target read:
    the chat's entry is pointed at another chat's (also private) socket."""

    def __init__(self, inner: LocalHost, after_reads: int, rewrite: Any) -> None:
        self.inner = inner
        self.name = inner.name
        self.reads = 0
        self.after_reads = after_reads
        self.rewrite = rewrite

    def call(self, op: str, **args: Any) -> Any:
        result = self.inner.call(op, **args)
        if op == "target":
            self.reads += 1
            if self.reads == self.after_reads:
                self.rewrite()
        return result


def test_registry_rewritten_between_the_two_readings_is_refused(door: Door) -> None:
    chat, other = door.chat(), door.chat()
    outbox_id = door.invite(chat)
    door.use_host(
        RewritingHost(
            door.host, 1, lambda: chat.rewrite_entry(messagingSocketPath=str(other.socket))
        )
    )
    door.tick()
    _assert_refused(door, outbox_id, RECEIVER_CHANGED, chat, other)


def test_registry_rewritten_before_the_hosts_third_reading_is_refused(door: Door) -> None:
    chat, other = door.chat(), door.chat()
    outbox_id = door.invite(chat)
    door.use_host(
        RewritingHost(
            door.host, 2, lambda: chat.rewrite_entry(messagingSocketPath=str(other.socket))
        )
    )
    door.tick()
    row = door.row(outbox_id)
    # The intent was recorded (uncertain), then the host's own reading refused before
    # connecting: back to pending, with the host queue saying refused.
    assert row["state"] == "pending"
    assert row["last_error"] == RECEIVER_CHANGED
    assert chat.frames() == [] and other.frames() == []
    from coop_engine.models import HostQueue

    (attempt,) = HostQueue.select().where(HostQueue.outbox == outbox_id)
    assert attempt.state == "refused"


def test_several_live_entries_for_one_session_id_are_refused(door: Door) -> None:
    chat = door.chat()
    twin = door.chat("--session-id", chat.session_id)
    outbox_id = door.invite(chat)
    door.tick()
    row = door.row(outbox_id)
    assert row["state"] == "pending"
    assert row["last_error"].startswith(f"Several live chats claim session {chat.session_id}")
    assert chat.frames() == [] and twin.frames() == []


def test_socket_owned_by_another_user_is_refused(door: Door, tmp_path: Path) -> None:
    if os.getuid() != 0:
        missing("changing a socket's owner needs root; CI runs as root")
    chat = door.chat()
    outbox_id = door.invite(chat)
    os.chown(chat.socket, 65534, 65534)
    door.tick()
    _assert_refused(door, outbox_id, SOCKET_NOT_PRIVATE, chat)


def test_regular_file_parked_at_the_socket_path_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    chat.socket.unlink()
    chat.socket.write_text("not a socket")
    os.chmod(chat.socket, 0o600)
    door.tick()
    _assert_refused(door, outbox_id, SOCKET_NOT_PRIVATE)
