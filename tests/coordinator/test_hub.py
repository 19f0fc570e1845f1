"""The coordinator's hub: the CLI asks a running coordinator over a private Unix socket in
the Coop home, and gets None (so connects itself) whenever there is no coordinator to ask:
no socket, nobody listening, a socket that is not private, or no reply in time."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from coop_engine.errors import Ambiguous, Conflict
from coop_engine.loop.hub import (
    MAX_SOCKET_PATH,
    Hub,
    HubError,
    Unanswered,
    ask,
    command,
    hub_path,
)
from coop_engine.loop.serve import is_ledger_file
from hosts.mac.errors import HostError

Start = Callable[..., Hub]


def echo(op: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"op": op, "args": args}


@pytest.fixture
def home() -> Iterator[Path]:
    # AF_UNIX paths are short: a pytest tmp_path can already be too long for one.
    path = Path(tempfile.mkdtemp(prefix="h", dir="/tmp"))
    os.chmod(path, 0o700)
    try:
        yield path
    finally:
        os.chmod(path, 0o700)
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def start(home: Path) -> Iterator[Start]:
    """Start a hub (on `home` unless told otherwise); every one is closed at teardown."""
    hubs: list[Hub] = []

    def started(answer: Callable[[str, dict[str, Any]], Any] = echo, at: Path = home) -> Hub:
        hub = Hub(at, answer)
        hubs.append(hub)
        return hub.start()

    try:
        yield started
    finally:
        for hub in hubs:
            hub.close()


def raw(home: Path, data: bytes) -> bytes:
    """Send `data` as it is and return everything the hub sends back."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.settimeout(10)
    try:
        client.connect(str(hub_path(home)))
        client.sendall(data)
        client.shutdown(socket.SHUT_WR)
        received = b""
        while chunk := client.recv(65536):
            received += chunk
        return received
    finally:
        client.close()


def stale_socket(path: Path) -> None:
    """A socket file nobody listens on, as a SIGKILLed coordinator leaves it."""
    dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dead.bind(str(path))
    dead.close()
    os.chmod(path, 0o600)  # private, so only the dead listener can be why ask gives up


def test_a_reply_round_trips(home: Path, start: Start) -> None:
    start()
    assert ask(home, "chats", {"host": None}) == {
        "ok": True,
        "result": {"op": "chats", "args": {"host": None}},
    }


def test_the_socket_is_0600_and_the_users_whatever_the_umask(home: Path, start: Start) -> None:
    old = os.umask(0)
    try:
        start()
    finally:
        os.umask(old)
    info = os.lstat(hub_path(home))
    assert stat.S_ISSOCK(info.st_mode)
    assert stat.S_IMODE(info.st_mode) == 0o600
    assert info.st_uid == os.getuid()
    assert os.listdir(home) == [hub_path(home).name]  # the staging folder is gone


def test_the_socket_is_not_taken_for_a_ledger_write(home: Path) -> None:
    assert not is_ledger_file(str(hub_path(home)))


def test_an_answer_that_raises_is_an_error_reply(home: Path, start: Start) -> None:
    def answer(op: str, args: dict[str, Any]) -> Any:
        raise ValueError("no Mac named 'x'\nand a second line nobody needs")

    start(answer)
    assert ask(home, "chat show", {"host": "x"}) == {
        "ok": False,
        "error": "no Mac named 'x'",
        "kind": "failed",
    }


def test_an_answer_that_is_not_json_is_an_error_reply(home: Path, start: Start) -> None:
    start(lambda op, args: object())
    reply = ask(home, "chats", {})
    assert reply is not None and reply["ok"] is False
    assert reply["error"].startswith("answer is not JSON")


@pytest.mark.parametrize(
    "request_line",
    [
        b"this is not json\n",
        b"\n",
        b'["chats", {}]\n',
        b'{"op": 7, "args": {}}\n',
        b'{"args": {}}\n',
        b'{"op": "chats", "args": []}\n',
        b'{"op": "chats"}\n',
        b"[" * 100_000 + b"\n",
        b'{"op": "chats", "args": {"pad": "' + b"a" * (1 << 20) + b'"}}\n',
        b"a" * (3 << 20),
    ],
    ids=[
        "not-json",
        "empty-line",
        "a-json-list",
        "op-not-a-string",
        "no-op",
        "args-not-a-dict",
        "no-args",
        "nested-too-deep",
        "line-over-1-mib",
        "over-1-mib-without-newline",
    ],
)
def test_a_bad_request_gets_a_bad_request_reply_and_the_hub_answers_on(
    home: Path, start: Start, request_line: bytes
) -> None:
    start()
    reply = raw(home, request_line)
    assert reply.endswith(b"\n") and reply.count(b"\n") == 1
    assert reply.startswith(b'{"ok": false, "error": "bad request')
    assert ask(home, "hosts", {}) == {"ok": True, "result": {"op": "hosts", "args": {}}}


def test_an_over_long_ask_is_a_bad_request(home: Path, start: Start) -> None:
    start()
    reply = ask(home, "chats", {"pad": "a" * (1 << 20)})
    assert reply is not None and reply["ok"] is False
    assert reply["error"].startswith("bad request")
    assert ask(home, "chats", {}) == {"ok": True, "result": {"op": "chats", "args": {}}}


def test_no_socket_file_means_no_coordinator(home: Path) -> None:
    assert ask(home, "chats", {}) is None


def test_a_file_that_is_not_a_socket_means_no_coordinator(home: Path) -> None:
    hub_path(home).write_text("")
    os.chmod(hub_path(home), 0o600)
    assert ask(home, "chats", {}) is None


def test_a_stale_socket_means_no_coordinator_and_a_new_hub_replaces_it(
    home: Path, start: Start
) -> None:
    stale_socket(hub_path(home))
    assert ask(home, "chats", {}) is None
    start()
    assert ask(home, "chats", {}) == {"ok": True, "result": {"op": "chats", "args": {}}}


def test_a_second_hub_is_refused_while_the_first_listens(home: Path, start: Start) -> None:
    start()
    with pytest.raises(HubError, match="another coordinator's hub is listening at"):
        start(lambda op, args: "second")
    assert ask(home, "chats", {}) == {"ok": True, "result": {"op": "chats", "args": {}}}


def test_a_hub_refuses_a_name_held_by_a_file_that_is_not_a_socket(home: Path, start: Start) -> None:
    hub_path(home).write_text("keep me")
    with pytest.raises(HubError, match="not a socket"):
        start()
    assert hub_path(home).read_text() == "keep me"


def test_a_socket_with_group_or_other_bits_is_not_asked(home: Path, start: Start) -> None:
    start()
    os.chmod(hub_path(home), 0o666)
    assert ask(home, "chats", {}) is None


def test_a_socket_in_an_open_folder_is_not_asked(home: Path, start: Start) -> None:
    start()
    os.chmod(home, 0o777)
    assert ask(home, "chats", {}) is None


def test_a_hub_that_hangs_is_given_up_on(home: Path, start: Start) -> None:
    release = threading.Event()

    def answer(op: str, args: dict[str, Any]) -> Any:
        release.wait()
        return "too late"

    start(answer)
    try:
        assert ask(home, "chats", {}, timeout=0.5) is None
    finally:
        release.set()


def test_a_command_sent_and_not_answered_is_unanswered_never_none(home: Path, start: Start) -> None:
    release = threading.Event()

    def answer(op: str, args: dict[str, Any]) -> Any:
        release.wait()
        return "too late"

    start(answer)
    try:
        # None would tell the CLI to do it itself, with another fleet: it may be done here.
        with pytest.raises(Unanswered, match="did not answer .*nothing was done here"):
            command(home, "withdraw", {}, timeout=0.5)
    finally:
        release.set()


def test_a_command_with_nobody_listening_is_none(home: Path) -> None:
    assert command(home, "tick", {}) is None
    stale_socket(hub_path(home))
    assert command(home, "tick", {}) is None


@pytest.mark.parametrize(
    ("raised", "kind"),
    [
        (Ambiguous("'doc' names several chats"), "bad-input"),
        (Conflict("the receiver still refuses"), "refused"),
        (HostError("laptop", "timed out"), "refused"),
        (KeyError("outbox"), "failed"),
    ],
    ids=["bad-input", "a-rule", "a-mac", "a-bug"],
)
def test_a_refusal_says_its_kind_so_the_cli_exits_as_it_would(
    home: Path, start: Start, raised: Exception, kind: str
) -> None:
    def answer(op: str, args: dict[str, Any]) -> Any:
        raise raised

    start(answer)
    reply = command(home, "invite", {})
    assert reply is not None and (reply["ok"], reply["kind"]) == (False, kind)


def test_close_removes_its_own_socket_and_is_idempotent(home: Path, start: Start) -> None:
    hub = start()
    hub.close()
    assert not os.path.lexists(hub_path(home))
    assert ask(home, "chats", {}) is None
    hub.close()


def test_close_leaves_a_socket_that_replaced_its_own(home: Path, start: Start) -> None:
    first = start(lambda op, args: "first")
    os.unlink(hub_path(home))
    start(lambda op, args: "second")
    first.close()
    assert stat.S_ISSOCK(os.lstat(hub_path(home)).st_mode)
    assert ask(home, "chats", {}) == {"ok": True, "result": "second"}


def test_a_home_path_too_long_for_af_unix_is_refused(home: Path, start: Start) -> None:
    deep = home / ("d" * (MAX_SOCKET_PATH - len(str(home))))
    deep.mkdir(mode=0o700)
    with pytest.raises(HubError, match=f"longer than the {MAX_SOCKET_PATH} AF_UNIX allows"):
        start(at=deep)
    assert os.listdir(deep) == []
    assert ask(deep, "chats", {}) is None


def test_a_home_path_at_the_limit_is_served(home: Path, start: Start) -> None:
    room = MAX_SOCKET_PATH - len(str(home)) - len(f"//{hub_path(home).name}")
    deep = home / ("d" * room)
    deep.mkdir(mode=0o700)
    assert len(os.fsencode(str(hub_path(deep)))) == MAX_SOCKET_PATH
    start(at=deep)
    assert ask(deep, "chats", {}) == {"ok": True, "result": {"op": "chats", "args": {}}}


def test_two_concurrent_asks_are_both_answered(home: Path, start: Start) -> None:
    def answer(op: str, args: dict[str, Any]) -> Any:
        time.sleep(0.2)
        return args["n"]

    start(answer)
    replies: dict[int, dict[str, Any] | None] = {}
    gate = threading.Barrier(2)

    def asking(n: int) -> None:
        gate.wait()
        replies[n] = ask(home, "chats", {"n": n})

    threads = [threading.Thread(target=asking, args=(n,)) for n in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert replies == {1: {"ok": True, "result": 1}, 2: {"ok": True, "result": 2}}
