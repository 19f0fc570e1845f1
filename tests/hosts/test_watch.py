"""The long-poll's wait (hosts/mac/watch.py): real changes answer it, reads never do.

Every change is made by a thread while the wait is blocked in its backend; no test
bounds how long anything takes, only what the answer is.
"""

from __future__ import annotations

import ast
import ctypes
import errno
import os
import queue
import struct
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hosts.mac import watch

LINUX = sys.platform.startswith("linux")
BACKENDS = [
    pytest.param(
        ("linux", "inotify"),
        id="inotify",
        marks=pytest.mark.skipif(not LINUX, reason="inotify is Linux's"),
    ),
    pytest.param(("plan9", "stat"), id="stat"),
]
LONG = 5.0  # a wait that should end early; its timeout is only a safety net
SHORT = 0.5  # a wait that should run to its timeout


@pytest.fixture(params=BACKENDS)
def watcher(request: pytest.FixtureRequest) -> Iterator[watch.Watcher]:
    platform, backend = request.param
    made = watch.Watcher(platform=platform)
    assert made.backend == backend
    yield made
    made.close()


@contextmanager
def meanwhile(watcher: watch.Watcher, action: Callable[[], None]) -> Iterator[None]:
    """Run `action` in a thread once the watcher is blocked waiting (not before)."""
    blocked = threading.Event()
    original = watcher._backend.block

    def block(timeout: float) -> bool:
        blocked.set()
        return original(timeout)

    watcher._backend.block = block  # type: ignore[method-assign]
    failures: list[BaseException] = []

    def run() -> None:
        try:
            assert blocked.wait(30), "the wait never blocked"
            action()
        except BaseException as error:  # reported by the test, not lost in the thread
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        yield
    finally:
        thread.join(30)
        del watcher._backend.block
    if failures:
        raise failures[0]


def append(path: Path, text: str = '{"type":"user"}\n') -> None:
    with open(path, "a") as handle:
        handle.write(text)


def replace(path: Path, text: str) -> None:
    """Claude Code's way: write a temporary file, then rename it over the entry."""
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    (sessions / "101.json").write_text('{"pid": 101}')
    return sessions


@pytest.fixture
def transcript(tmp_path: Path) -> Path:
    folder = tmp_path / "projects" / "-Users-ann-code"
    folder.mkdir(parents=True)
    path = folder / "abc.jsonl"
    path.write_text('{"type":"summary"}\n')
    return path


# --- both backends ----------------------------------------------------------------------


def test_a_changed_fingerprint_returns_at_once(watcher: watch.Watcher, transcript: Path) -> None:
    def never(timeout: float) -> bool:
        raise AssertionError("blocked although the fingerprint had changed")

    watcher._backend.block = never  # type: ignore[method-assign]
    paths = [str(transcript)]
    for since in ("a digest from before", None):
        answer = watcher.wait(paths, since, timeout=LONG)
        assert answer == {
            "changed": True,
            "digest": watch.fingerprint(paths),
            "backend": watcher.backend,
        }


def test_appending_to_a_watched_transcript_is_seen(
    watcher: watch.Watcher, transcript: Path
) -> None:
    paths = [str(transcript)]
    since = watch.fingerprint(paths)
    with meanwhile(watcher, lambda: append(transcript)):
        answer = watcher.wait(paths, since, timeout=LONG)
    assert answer["changed"] is True
    assert answer["digest"] == watch.fingerprint(paths) != since


@pytest.mark.parametrize("change", ["create", "replace", "delete"])
def test_registry_entries_created_replaced_and_deleted_are_seen(
    watcher: watch.Watcher, registry: Path, change: str
) -> None:
    actions = {
        "create": lambda: replace(registry / "202.json", '{"pid": 202}'),
        "replace": lambda: replace(registry / "101.json", '{"pid": 101, "status": "busy"}'),
        "delete": lambda: (registry / "101.json").unlink(),
    }
    paths = [str(registry)]
    since = watch.fingerprint(paths)
    with meanwhile(watcher, actions[change]):
        answer = watcher.wait(paths, since, timeout=LONG)
    assert answer["changed"] is True
    assert answer["digest"] != since  # the temporary file alone may have answered


@pytest.mark.parametrize("missing", ["file", "file and folder"])
def test_a_missing_transcript_being_created_is_seen(
    watcher: watch.Watcher, tmp_path: Path, missing: str
) -> None:
    folder = tmp_path / "projects" / "-Users-ann-code"
    if missing == "file":
        folder.mkdir(parents=True)
    path = folder / "abc.jsonl"
    paths = [str(path)]
    since = watch.fingerprint(paths)

    def create() -> None:
        folder.mkdir(parents=True, exist_ok=True)
        append(path)

    with meanwhile(watcher, create):
        answer = watcher.wait(paths, since, timeout=LONG)
    assert answer["changed"] is True
    assert answer["digest"] != since  # the file, created empty, may have answered already


def busy_while_waiting(
    watcher: watch.Watcher, paths: list[str], touch: Callable[[], None]
) -> dict[str, Any]:
    """The wait's answer at a short timeout while `touch` runs over and over meanwhile."""
    stop = threading.Event()
    rounds = []

    def keep_touching() -> None:
        while not stop.is_set():
            touch()
            rounds.append(1)
            stop.wait(0.01)

    try:
        with meanwhile(watcher, keep_touching):
            answer = watcher.wait(paths, watch.fingerprint(paths), timeout=SHORT)
            stop.set()
    finally:
        stop.set()
    assert rounds, "nothing was touched during the wait"
    return answer


def test_reading_opening_and_listing_never_count_as_a_change(
    watcher: watch.Watcher, registry: Path, transcript: Path
) -> None:
    # The regression: a watcher woken by reads (its own fingerprinting among them) spun.
    def read_everything() -> None:
        transcript.read_bytes()
        with open(transcript, "rb"):
            pass  # opened and closed without a read
        os.listdir(registry)
        for entry in os.scandir(registry):
            Path(entry.path).read_bytes()
        os.stat(transcript)
        watch.fingerprint([str(registry), str(transcript)])

    paths = [str(registry), str(transcript)]
    since = watch.fingerprint(paths)
    answer = busy_while_waiting(watcher, paths, read_everything)
    assert answer == {"changed": False, "digest": since, "backend": watcher.backend}
    assert watcher.wakeups == 0  # not even woken: a wait among readers stays idle


def test_opened_for_writing_but_not_written_is_no_change(
    watcher: watch.Watcher, transcript: Path
) -> None:
    # The kernel reports the close (IN_CLOSE_WRITE): the wait may wake, never answer.
    def open_and_close() -> None:
        with open(transcript, "r+b") as handle:
            handle.read(1)

    paths = [str(transcript)]
    since = watch.fingerprint(paths)
    answer = busy_while_waiting(watcher, paths, open_and_close)
    assert answer == {"changed": False, "digest": since, "backend": watcher.backend}


def test_a_deleted_and_recreated_transcript_is_watched_again(
    watcher: watch.Watcher, transcript: Path
) -> None:
    paths = [str(transcript)]
    since = watch.fingerprint(paths)
    with meanwhile(watcher, transcript.unlink):
        answer = watcher.wait(paths, since, timeout=LONG)
    assert answer["changed"] is True

    transcript.write_text('{"type":"summary"}\n')  # a new file: the old watch is stale
    since = watch.fingerprint(paths)
    with meanwhile(watcher, lambda: append(transcript)):
        answer = watcher.wait(paths, since, timeout=LONG)
    assert answer["changed"] is True
    assert answer["digest"] == watch.fingerprint(paths) != since


def test_what_happened_before_a_wait_does_not_wake_it(
    watcher: watch.Watcher, registry: Path, transcript: Path
) -> None:
    paths = [str(registry), str(transcript)]
    since = watch.fingerprint(paths)
    with meanwhile(watcher, lambda: append(transcript)):
        assert watcher.wait(paths, since, timeout=LONG)["changed"] is True
    wakeups = watcher.wakeups
    replace(registry / "202.json", "{}")  # between two waits: in the office's next digest
    append(transcript)
    answer = watcher.wait(paths, watch.fingerprint(paths), timeout=SHORT)
    assert answer["changed"] is False
    assert watcher.wakeups == wakeups  # the queued events were dropped, not woken by


def test_a_timeout_answers_unchanged(watcher: watch.Watcher, registry: Path) -> None:
    blocks = []
    original = watcher._backend.block

    def counted(timeout: float) -> bool:
        blocks.append(timeout)
        return original(timeout)

    watcher._backend.block = counted  # type: ignore[method-assign]
    paths = [str(registry)]
    since = watch.fingerprint(paths)
    answer = watcher.wait(paths, since, timeout=SHORT)
    assert answer == {"changed": False, "digest": since, "backend": watcher.backend}
    if watcher.backend != "stat":
        assert len(blocks) <= 2  # slept in the kernel, not in a loop around it


# --- inotify ----------------------------------------------------------------------------


def inotify_fd(watcher: watch.Watcher) -> int:
    backend = watcher._backend
    assert isinstance(backend, watch._Inotify)
    return backend.fd


def inotify_watches(watcher: watch.Watcher) -> list[dict[str, str]]:
    """The watches the kernel holds on the watcher's inotify fd (proc(5), fdinfo)."""
    fdinfo = Path(f"/proc/self/fdinfo/{inotify_fd(watcher)}").read_text()
    return [
        dict(field.split(":", 1) for field in line.split()[1:])
        for line in fdinfo.splitlines()
        if line.startswith("inotify ")
    ]


@pytest.mark.skipif(not LINUX, reason="inotify is Linux's")
def test_inotify_watches_persist_and_follow_the_paths_asked(
    registry: Path, transcript: Path
) -> None:
    watcher = watch.Watcher(platform="linux")
    try:
        missing = registry / "absent.jsonl"
        paths = [str(registry), str(missing)]
        watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
        assert watcher.watched() == [str(registry)]  # the missing file's parent, once
        assert len(inotify_watches(watcher)) == 1

        paths = [str(registry), str(transcript)]
        watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
        watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)  # nothing watched twice
        assert watcher.watched() == sorted(paths)
        kernel = inotify_watches(watcher)
        assert len(kernel) == 2
        assert {int(w["mask"], 16) for w in kernel} == {watch.INOTIFY_MASK}

        paths = [str(transcript)]
        watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
        assert watcher.watched() == paths  # the folder no longer asked for is unwatched
        assert len(inotify_watches(watcher)) == 1
    finally:
        watcher.close()


def test_the_inotify_mask_asks_for_real_changes_only() -> None:
    wanted = (
        watch.IN_MODIFY,
        watch.IN_ATTRIB,
        watch.IN_CLOSE_WRITE,
        watch.IN_MOVED_FROM,
        watch.IN_MOVED_TO,
        watch.IN_CREATE,
        watch.IN_DELETE,
        watch.IN_DELETE_SELF,
        watch.IN_MOVE_SELF,
    )
    assert all(watch.INOTIFY_MASK & bit for bit in wanted)
    assert watch.INOTIFY_MASK & (watch.IN_ACCESS | watch.IN_OPEN | watch.IN_CLOSE_NOWRITE) == 0


def inotify_event(mask: int, name: bytes = b"", wd: int = 1) -> bytes:
    padded = name.ljust(16, b"\0") if name else b""
    return struct.pack("iIII", wd, mask, 0, len(padded)) + padded


def test_an_inotify_overflow_calls_for_a_new_look_and_reads_do_not() -> None:
    reads = watch.IN_ACCESS | watch.IN_OPEN | watch.IN_CLOSE_NOWRITE
    assert watch.inotify_wakes(inotify_event(watch.IN_Q_OVERFLOW, wd=-1)) is True
    assert watch.inotify_wakes(inotify_event(reads, b"1.json")) is False
    assert watch.inotify_wakes(inotify_event(watch.IN_IGNORED)) is False
    assert watch.inotify_wakes(b"") is False
    # Names are skipped by their length: the event after one is still read.
    events = inotify_event(watch.IN_OPEN, b"1.json") + inotify_event(watch.IN_MODIFY, b"1.json")
    assert watch.inotify_wakes(events) is True


def test_no_inotify_in_the_c_library_falls_back_to_the_stat_loop(
    monkeypatch: pytest.MonkeyPatch, transcript: Path
) -> None:
    monkeypatch.setattr(watch, "_libc", lambda: None)
    watcher = watch.Watcher(platform="linux")
    try:
        assert watcher.backend == "stat"
        paths = [str(transcript)]
        since = watch.fingerprint(paths)
        with meanwhile(watcher, lambda: append(transcript)):
            answer = watcher.wait(paths, since, timeout=LONG)
        assert answer["changed"] is True
        assert answer["backend"] == "stat"
    finally:
        watcher.close()


class RefusingLibc:
    """The C library's inotify calls, refusing with `errno` where told to."""

    def __init__(self, real: Any, init: int = 0, add: int = 0) -> None:
        self.real = real
        self.init = init
        self.add = add

    def inotify_init1(self, flags: int) -> int:
        if self.init:
            ctypes.set_errno(self.init)
            return -1
        return int(self.real.inotify_init1(flags))

    def inotify_add_watch(self, fd: int, path: bytes, mask: int) -> int:
        if self.add:
            ctypes.set_errno(self.add)
            return -1
        return int(self.real.inotify_add_watch(fd, path, mask))

    def inotify_rm_watch(self, fd: int, wd: int) -> int:
        return int(self.real.inotify_rm_watch(fd, wd))


def test_too_many_inotify_instances_fall_back_to_the_stat_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch, "_libc", lambda: RefusingLibc(None, init=errno.EMFILE))
    watcher = watch.Watcher(platform="linux")
    assert watcher.backend == "stat"
    watcher.close()


@pytest.mark.skipif(not LINUX, reason="inotify is Linux's")
def test_a_watch_limit_falls_back_to_the_stat_loop_and_still_answers(
    monkeypatch: pytest.MonkeyPatch, transcript: Path
) -> None:
    real = watch._libc()
    monkeypatch.setattr(watch, "_libc", lambda: RefusingLibc(real, add=errno.ENOSPC))
    watcher = watch.Watcher(platform="linux")
    try:
        assert watcher.backend == "inotify"
        held = inotify_fd(watcher)
        paths = [str(transcript)]
        since = watch.fingerprint(paths)
        answer = watcher.wait(paths, since, timeout=0.1)
        assert answer == {"changed": False, "digest": since, "backend": "stat"}
        with pytest.raises(OSError) as closed:
            os.fstat(held)  # the inotify fd went with the backend
        assert closed.value.errno == errno.EBADF
        with meanwhile(watcher, lambda: append(transcript)):
            answer = watcher.wait(paths, since, timeout=LONG)
        assert answer["changed"] is True
        assert answer["backend"] == "stat"
    finally:
        watcher.close()


# --- kqueue, through a fake select module -------------------------------------------------


class FakeKevent:
    def __init__(
        self, ident: int, filter: int = 0, flags: int = 0, fflags: int = 0, **_: Any
    ) -> None:
        self.ident = ident
        self.filter = filter
        self.flags = flags
        self.fflags = fflags


class FakeKqueue:
    def __init__(self, module: FakeSelect) -> None:
        self.module = module
        self.closed = False

    def control(
        self, changes: list[FakeKevent] | None, max_events: int, timeout: float | None = None
    ) -> list[FakeKevent]:
        self.module.registered.extend(changes or [])
        if not max_events:
            return []
        if timeout == 0:  # a look at what is queued, without waiting
            taken = []
            while not self.module.events.empty():
                taken.append(self.module.events.get())
            return taken
        self.module.waits += 1
        self.module.blocked.set()
        try:
            return [self.module.events.get(timeout=timeout)]
        except queue.Empty:
            return []

    def close(self) -> None:
        self.closed = True


class FakeSelect:
    """What the kqueue backend uses of macOS's `select`, recording what it is given."""

    KQ_FILTER_VNODE = -4
    KQ_EV_ADD = 0x0001
    KQ_EV_CLEAR = 0x0020
    KQ_NOTE_DELETE = 0x0001
    KQ_NOTE_WRITE = 0x0002
    KQ_NOTE_EXTEND = 0x0004
    KQ_NOTE_ATTRIB = 0x0008
    KQ_NOTE_LINK = 0x0010
    KQ_NOTE_RENAME = 0x0020
    KQ_NOTE_REVOKE = 0x0040

    def __init__(self) -> None:
        self.registered: list[FakeKevent] = []
        self.events: queue.Queue[FakeKevent] = queue.Queue()
        self.blocked = threading.Event()
        self.kqueues: list[FakeKqueue] = []
        self.waits = 0

    def kqueue(self) -> FakeKqueue:
        self.kqueues.append(FakeKqueue(self))
        return self.kqueues[-1]

    def kevent(self, ident: int, **fields: Any) -> FakeKevent:
        return FakeKevent(ident, **fields)

    def fd_of(self, path: Path) -> int:
        """The fd last registered for `path`."""
        for event in reversed(self.registered):
            try:
                if os.path.samestat(os.fstat(event.ident), path.stat()):
                    return event.ident
            except OSError:
                continue  # an fd closed since
        raise AssertionError(f"{path} never registered")


@pytest.fixture
def fake_select() -> FakeSelect:
    return FakeSelect()


@pytest.fixture
def kqueue_watcher(fake_select: FakeSelect) -> Iterator[watch.Watcher]:
    made = watch.Watcher(platform="freebsd", select_module=fake_select)
    yield made
    made.close()


def kqueue_event_after(fake: FakeSelect, action: Callable[[], FakeKevent]) -> threading.Thread:
    """Once the wait blocks in kevent, run `action` and deliver the event it returns."""

    def run() -> None:
        assert fake.blocked.wait(30)
        fake.events.put(action())

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_kqueue_registers_vnode_changes_and_a_timeout_answers_unchanged(
    kqueue_watcher: watch.Watcher, fake_select: FakeSelect, registry: Path, transcript: Path
) -> None:
    assert kqueue_watcher.backend == "kqueue"
    paths = [str(registry), str(transcript)]
    since = watch.fingerprint(paths)
    answer = kqueue_watcher.wait(paths, since, timeout=SHORT)
    assert answer == {"changed": False, "digest": since, "backend": "kqueue"}
    assert fake_select.waits == 1  # slept in the kernel once: no loop around it

    fake = FakeSelect
    assert len(fake_select.registered) == 2
    for event in fake_select.registered:
        assert event.filter == fake.KQ_FILTER_VNODE
        assert (
            event.flags & (fake.KQ_EV_ADD | fake.KQ_EV_CLEAR) == fake.KQ_EV_ADD | fake.KQ_EV_CLEAR
        )
        for note in (
            fake.KQ_NOTE_WRITE,
            fake.KQ_NOTE_EXTEND,
            fake.KQ_NOTE_DELETE,
            fake.KQ_NOTE_RENAME,
            fake.KQ_NOTE_ATTRIB,
            fake.KQ_NOTE_LINK,
            fake.KQ_NOTE_REVOKE,
        ):
            assert event.fflags & note
    assert kqueue_watcher.watched() == sorted(paths)

    kqueue_watcher.wait(paths, since, timeout=0.1)
    assert len(fake_select.registered) == 2  # the same paths are not registered again


def test_a_kqueue_event_wakes_the_wait(
    kqueue_watcher: watch.Watcher, fake_select: FakeSelect, transcript: Path
) -> None:
    paths = [str(transcript)]
    since = watch.fingerprint(paths)

    def write() -> FakeKevent:
        append(transcript)
        return FakeKevent(fake_select.fd_of(transcript), fflags=FakeSelect.KQ_NOTE_EXTEND)

    thread = kqueue_event_after(fake_select, write)
    answer = kqueue_watcher.wait(paths, since, timeout=LONG)
    thread.join(30)
    assert answer["changed"] is True
    assert answer["digest"] == watch.fingerprint(paths) != since
    assert kqueue_watcher.wakeups == 1


def test_a_kqueue_event_that_changed_nothing_keeps_waiting(
    kqueue_watcher: watch.Watcher, fake_select: FakeSelect, transcript: Path
) -> None:
    paths = [str(transcript)]
    since = watch.fingerprint(paths)

    def touch_nothing() -> FakeKevent:
        return FakeKevent(fake_select.fd_of(transcript), fflags=FakeSelect.KQ_NOTE_ATTRIB)

    thread = kqueue_event_after(fake_select, touch_nothing)
    answer = kqueue_watcher.wait(paths, since, timeout=SHORT)
    thread.join(30)
    assert answer == {"changed": False, "digest": since, "backend": "kqueue"}
    assert kqueue_watcher.wakeups == 1


def test_a_renamed_kqueue_watch_is_armed_again(
    kqueue_watcher: watch.Watcher, fake_select: FakeSelect, transcript: Path
) -> None:
    paths = [str(transcript)]
    since = watch.fingerprint(paths)
    moved = transcript.with_name("moved.jsonl")

    def away_and_back() -> FakeKevent:
        old = fake_select.fd_of(transcript)
        transcript.rename(moved)
        moved.rename(transcript)  # the same file again: the fingerprint does not change
        return FakeKevent(old, fflags=FakeSelect.KQ_NOTE_RENAME)

    thread = kqueue_event_after(fake_select, away_and_back)
    answer = kqueue_watcher.wait(paths, since, timeout=SHORT)
    thread.join(30)
    assert answer["changed"] is False
    first, second = fake_select.registered
    assert first.ident != second.ident  # the stale fd was replaced...
    with pytest.raises(OSError) as closed:
        os.fstat(first.ident)  # ...and closed
    assert closed.value.errno == errno.EBADF


def test_a_replaced_kqueue_file_is_armed_again(
    kqueue_watcher: watch.Watcher, fake_select: FakeSelect, transcript: Path
) -> None:
    paths = [str(transcript)]
    kqueue_watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
    transcript.unlink()
    transcript.write_text("{}\n")  # another inode under the same name
    kqueue_watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
    assert len(fake_select.registered) == 2
    assert fake_select.fd_of(transcript) == fake_select.registered[-1].ident


def test_kqueue_close_closes_every_fd(
    fake_select: FakeSelect, registry: Path, transcript: Path
) -> None:
    watcher = watch.Watcher(platform="freebsd", select_module=fake_select)
    paths = [str(registry), str(transcript), str(registry / "absent.json")]
    watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
    fds = [event.ident for event in fake_select.registered]
    assert len(fds) == 2  # the missing file is watched through the registry folder
    watcher.close()
    assert fake_select.kqueues[0].closed
    for fd in fds:
        with pytest.raises(OSError) as closed:
            os.fstat(fd)
        assert closed.value.errno == errno.EBADF


@pytest.mark.parametrize(("platform", "evtonly"), [("darwin", 0x8000), ("freebsd", 0)])
def test_kqueue_opens_for_events_only_on_macos(
    monkeypatch: pytest.MonkeyPatch,
    fake_select: FakeSelect,
    transcript: Path,
    platform: str,
    evtonly: int,
) -> None:
    monkeypatch.delattr(os, "O_EVTONLY", raising=False)
    real_open = os.open
    flags_seen: list[int] = []

    def recording_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        flags_seen.append(flags)
        return real_open(path, flags & ~0x8000, *args, **kwargs)  # O_EVTONLY is macOS's

    monkeypatch.setattr(os, "open", recording_open)
    watcher = watch.Watcher(platform=platform, select_module=fake_select)
    try:
        paths = [str(transcript)]
        watcher.wait(paths, watch.fingerprint(paths), timeout=0.1)
    finally:
        watcher.close()
    assert flags_seen == [os.O_RDONLY | evtonly]


def test_a_select_module_without_kqueue_falls_back_to_the_stat_loop() -> None:
    watcher = watch.Watcher(platform="darwin", select_module=object())
    assert watcher.backend == "stat"
    watcher.close()


# --- the fingerprint ----------------------------------------------------------------------


def test_the_fingerprint_tells_missing_from_empty_and_never_raises(tmp_path: Path) -> None:
    missing = tmp_path / "absent.jsonl"
    empty = tmp_path / "empty.jsonl"
    empty.touch()
    under_a_file = empty / "child.jsonl"  # ENOTDIR: an error, but not "missing"
    prints = {
        name: watch.fingerprint([str(path)])
        for name, path in [("missing", missing), ("empty", empty), ("under", under_a_file)]
    }
    assert len(set(prints.values())) == 3
    assert watch.fingerprint([str(missing)]) == prints["missing"]  # stable


def test_the_fingerprint_reads_an_unreadable_folder_as_an_error(
    monkeypatch: pytest.MonkeyPatch, registry: Path
) -> None:
    readable = watch.fingerprint([str(registry)])
    locked = registry.parent / "locked"
    locked.mkdir()
    (locked / "1.json").write_text("{}")
    locked.chmod(0)
    try:
        # Whoever runs this (root reads anyway), nothing raises.
        watch.fingerprint([str(locked), str(locked / "1.json")])
    finally:
        locked.chmod(0o700)

    def refuse(path: Any) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", str(path))

    monkeypatch.setattr(os, "scandir", refuse)
    unlisted = watch.fingerprint([str(registry)])
    monkeypatch.setattr(os, "stat", refuse)
    unstatted = watch.fingerprint([str(registry)])
    monkeypatch.undo()
    assert len({readable, unlisted, unstatted, watch.fingerprint([str(registry / "gone")])}) == 4


def test_the_fingerprint_of_a_folder_follows_its_entries(registry: Path) -> None:
    paths = [str(registry)]
    seen = [watch.fingerprint(paths)]
    (registry / "101.json").read_text()
    assert watch.fingerprint(paths) == seen[-1]  # reading is not a change
    for change in (
        lambda: replace(registry / "101.json", '{"pid": 101}'),  # same bytes, new inode
        lambda: append(registry / "101.json", " "),
        lambda: (registry / "202.json").write_text("{}"),
        lambda: (registry / "202.json").unlink(),
    ):
        change()
        seen.append(watch.fingerprint(paths))
    assert len(set(seen[:4])) == 4  # replaced, appended to, created: each a change
    assert seen[4] == seen[2]  # and deleting what was created is the state before it


# --- what ships to a Mac ------------------------------------------------------------------


def test_the_module_imports_only_the_standard_library_and_parses_as_python_3_9() -> None:
    source = Path(watch.__file__).read_text()
    tree = ast.parse(source, feature_version=(3, 9))  # macOS's stock python3
    imported = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            imported.append(node.module or "")
    assert "ctypes" in imported  # the walk sees imports inside functions too
    foreign = [
        name
        for name in imported
        if name.split(".")[0] not in sys.stdlib_module_names | {"hosts", "__future__"}
    ]
    assert foreign == []
