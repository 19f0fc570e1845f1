"""private_socket's parent test is the socket's own (seed 000): the folder must be owned
by Coop's user, carry no group or other bits, and be a folder, not a link to one,
because whoever controls the folder controls what its names point at."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from doorkit import Door
from prerequisites import missing

from hosts.mac.native import SOCKET_NOT_PRIVATE

NOBODY = 65534


def _refused_before_any_byte(door: Door, outbox_id: str, chat: object) -> None:
    row = door.row(outbox_id)
    assert row["state"] == "pending"
    assert str(row["last_error"]).startswith(SOCKET_NOT_PRIVATE), row["last_error"]
    assert row["facts"]["transport"] is None
    assert chat.frames() == []  # type: ignore[attr-defined]


def test_a_socket_in_a_folder_owned_by_another_user_is_refused(door: Door) -> None:
    if os.getuid() != 0:
        missing("changing a folder's owner needs root; CI runs as root")
    chat = door.chat()
    outbox_id = door.invite(chat)
    folder = chat.socket.parent
    assert os.stat(folder).st_mode & 0o077 == 0  # private by its mode: only its owner is wrong
    os.chown(folder, NOBODY, NOBODY)
    try:
        door.tick()
        _refused_before_any_byte(door, outbox_id, chat)
    finally:
        os.chown(folder, os.getuid(), os.getgid())


def test_a_socket_whose_folder_is_a_symlink_is_refused(door: Door) -> None:
    chat = door.chat()
    outbox_id = door.invite(chat)
    # A private folder of Coop's holding a link to the chat's (private) socket folder.
    links = Path(tempfile.mkdtemp(prefix="cl", dir="/tmp"))
    link = links / "inbox"
    link.symlink_to(chat.socket.parent, target_is_directory=True)
    chat.rewrite_entry(messagingSocketPath=str(link / chat.socket.name))
    try:
        door.tick()
        _refused_before_any_byte(door, outbox_id, chat)
    finally:
        link.unlink()
        links.rmdir()
