"""Idle means idle: with invitations delivered and awaiting answers and nothing changing,
the coordinator makes no pass; reading the files it watches (its own reads, anyone's)
wakes nothing; a change does, at once. Counted in wakes and passes, not seconds: that
nothing woke it is asserted once the watch has told of a file touched in each watched
folder after the reads, never after a sleep."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from officekit import Office
from servekit import until
from simchats import turn_over
from waiting import wait_until

from coop_engine import queries
from coop_engine.loop.serve import Server
from coop_engine.models import Outbox
from hosts.fleet import Fleet

HOUR = 3600.0


@dataclass
class Watched:
    """What a coordinator over the office Mac did: its passes, and each changed path
    that woke its worker (the paths its watch wanted, in the order watchdog told)."""

    server: Server
    passes: list[str] = field(default_factory=list)
    woke: list[str] = field(default_factory=list)


@contextmanager
def serving(office: Office) -> Iterator[Watched]:
    """A coordinator over the office Mac alone, counting that Mac's passes and wakes."""
    fleet = Fleet("office", {"office": office.hosts["office"]})
    server = Server(office.engine, fleet, office.home, office.log.append, pass_interval=HOUR)
    seen = Watched(server)
    pass_mac = server.coordinator.pass_mac
    wants = server._wants

    def counted(name: str, *args: Any, **kwargs: Any) -> bool:
        seen.passes.append(name)
        return pass_mac(name, *args, **kwargs)

    def wanted(path: str) -> bool:
        if wants(path):
            seen.woke.append(path)
            return True
        return False

    server.coordinator.pass_mac = counted  # type: ignore[method-assign]
    server._wants = wanted  # type: ignore[method-assign]
    thread = server.start_thread()
    try:
        yield seen
    finally:
        server.stop()
        thread.join(15)


def touched(paths: list[Path], seen: Watched) -> None:
    """Change the times of `paths` (one file in each watched folder) until the watch has
    told of each: every event in those folders before it has been told too (watchdog
    tells each folder's events in order, not across folders). Touched again while not
    told: a folder's watch begins after the pass that found it, which may end after the
    state the test waited for."""
    before = len(seen.woke)

    def told() -> bool:
        untold = [path for path in paths if str(path) not in seen.woke[before:]]
        for path in untold:
            os.utime(path)
        return not untold

    wait_until(told, "the watch telling of the touched files", interval=0.1)


def read_everything(config_dir: Path, stop: threading.Event, sweeps: list[int]) -> None:
    """What a reader of the watched files does: list, open, read, close, over and over."""
    while not stop.is_set():
        for folder, _, files in os.walk(config_dir):
            for name in files:
                with open(os.path.join(folder, name), "rb") as handle:
                    handle.read()
        sweeps.append(1)


@pytest.mark.parametrize("envelopes", [5])
def test_an_idle_coordinator_makes_no_pass_and_its_reads_wake_nothing(
    office: Office, envelopes: int
) -> None:
    chats = [office.macs["office"].start("--answer", "silent") for _ in range(envelopes)]
    invited = []
    for chat in chats:
        todo = office.engine.add_todo(f"Idle with {chat.session_id[:8]}")["id"]
        invited.append(office.engine.invite(todo, chat.ref, "office")["outbox"])
    with serving(office) as seen:
        until(
            lambda: all(
                queries.envelope(Outbox.get_by_id(i))["state"] == "delivered" for i in invited
            ),
            "every invitation delivered, awaiting its answer",
        )
        for chat, outbox_id in zip(chats, invited, strict=True):
            turn_over(chat, outbox_id)  # the chats write nothing more
        # One file in each folder the reader reads, all watched: a registry entry, and a
        # transcript in each project folder (one here: the chats share a working folder).
        folders: dict[Path, Path] = {}
        for chat in chats:
            folders.setdefault(chat.transcript.parent, chat.transcript)
        markers = [chats[0].registry, *folders.values()]
        touched_paths = {str(path) for path in markers}
        touched(markers, seen)  # everything before is told
        first = len(seen.woke)
        stop, sweeps = threading.Event(), []
        reader = threading.Thread(
            target=read_everything, args=(office.macs["office"].config_dir, stop, sweeps)
        )
        reader.start()
        try:
            until(lambda: len(sweeps) >= 50, "50 sweeps reading every watched file")
        finally:
            stop.set()
            reader.join()
        # Whatever the reads made watchdog tell, it has told once it told of these.
        touched(markers, seen)
        woken = [path for path in seen.woke[first:] if path not in touched_paths]
        assert woken == [], "reading the watched files woke the worker"
        # A change does wake it: a transcript (not one touched above) written.
        (written, *_) = [
            chat.transcript for chat in chats if str(chat.transcript) not in touched_paths
        ]
        told, quiet = len(seen.woke), len(seen.passes)
        with written.open("a") as transcript:
            transcript.write('{"type":"system","subtype":"note"}\n')
        until(lambda: str(written) in seen.woke[told:], "the transcript's wake")
        until(lambda: len(seen.passes) > quiet, "a pass for the changes")


# inotify(7): the events of a read. watchdog asks for opens and closes after reading
# unless told which events it is for.
IN_ACCESS, IN_CLOSE_NOWRITE, IN_OPEN = 0x01, 0x10, 0x20


def inotify_watches() -> list[tuple[int, int]]:
    """(inode, event mask) of every inotify watch this process holds, as the kernel
    keeps them (/proc/self/fdinfo: `inotify wd:1 ino:2c0f sdev:800001 mask:fc6 ...`)."""
    watches = []
    for fd in os.listdir("/proc/self/fdinfo"):
        try:
            text = Path(f"/proc/self/fdinfo/{fd}").read_text()
        except OSError:  # a descriptor closed since the listing
            continue
        for line in text.splitlines():
            if line.startswith("inotify wd:"):
                fields = dict(part.split(":", 1) for part in line.split()[1:] if ":" in part)
                watches.append((int(fields["ino"], 16), int(fields["mask"], 16)))
    return watches


def test_the_watch_asks_the_kernel_for_changes_and_never_for_reads(office: Office) -> None:
    """Each pass reads every registry entry and the transcripts in flight, in the
    folders the coordinator watches. Were the watch to ask inotify for opens and reads,
    each of those reads would come back as events for watchdog's threads to parse,
    under the GIL the next survey waits on (a pass at 200 chats took 119 ms where it
    takes 67: issue 32, local_receipt_latency). Read from the kernel's own record of
    the watches, once the registry folder and the transcript's folder are watched."""
    chat = office.macs["office"].start("--answer", "silent")
    todo = office.engine.add_todo("Watched folders")["id"]
    outbox_id = office.engine.invite(todo, chat.ref, "office")["outbox"]
    with serving(office):
        until(
            lambda: queries.envelope(Outbox.get_by_id(outbox_id))["state"] == "delivered",
            "the invitation delivered, its transcript watched",
        )
        folders = {os.stat(path.parent).st_ino for path in (chat.registry, chat.transcript)}
        until(
            lambda: folders <= {inode for inode, _ in inotify_watches()},
            "watches on the registry folder and the transcript's folder",
        )
        reads = IN_ACCESS | IN_OPEN | IN_CLOSE_NOWRITE
        asked = [(inode, mask) for inode, mask in inotify_watches() if inode in folders]
        assert [mask & reads for _, mask in asked] == [0] * len(asked), (
            f"the watch asks the kernel for reads: {[hex(mask) for _, mask in asked]}"
        )


def test_a_change_on_the_mac_arriving_with_ledger_news_is_not_lost(office: Office) -> None:
    """The ledger's news alone needs a pass only for an envelope to send; a change on the
    Mac always does, even when both wake the worker at the same moment."""
    from coop_engine.loop.macs import MacWorker

    stopping = threading.Event()
    crashes: list[BaseException] = []
    worker = MacWorker(
        "office",
        office.coordinator,
        lambda what, step: (step(), True)[1],
        stopping,
        HOUR,
        office.log.append,
        lambda: None,
        crashes.append,
        long_poll=False,
    ).start()
    try:

        def passes_reach(count: int) -> bool:
            with worker.progress:
                return worker.progress.wait_for(lambda: worker.passes >= count, timeout=15)

        assert passes_reach(1)
        worker.news()  # nothing to send: alone, this would be no reason for a pass
        worker.changed()
        assert passes_reach(2), "the Mac's change was dropped with the ledger's news"
    finally:
        stopping.set()
        worker.stop()
        worker.join(15)
    assert crashes == []
