"""Folders watched for changes, never for reads.

Unless told which events a watch is for, watchdog asks inotify for opens and for closes
after reading too. The coordinator's own survey reads every registry entry and each
transcript in flight, in the folders it watches: each read came back as two events for
watchdog's threads to parse, under the GIL the next survey waited on (a pass at 200
chats took 119 ms where it takes 67; issue 32's local_receipt_latency). A watch made
here asks the kernel only for what CHANGES names. (macOS's FSEvents reports no reads.)
A handler is also told when the kernel lost events (TOLD).
"""

from __future__ import annotations

from watchdog.events import (
    DirAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirModifiedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch

# watchdog's events that mean a file changed ("closed" is a close after a write): what a
# watch asks the kernel for, and, by their names, what its handler acts on.
CHANGE_EVENTS = [
    FileCreatedEvent,
    DirCreatedEvent,
    FileModifiedEvent,
    DirModifiedEvent,
    FileAttribEvent,
    DirAttribEvent,
    FileMovedEvent,
    DirMovedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
    FileClosedEvent,
]
CHANGES = frozenset(event.event_type for event in CHANGE_EVENTS)
# What a watch is told: the changes, and that the kernel dropped some (its queue for the
# watch overflowed while the process was stopped or starved), which watchdog tells a
# handler's on_events_lost. A handler told of a loss looks again, as if everything it
# watches had changed: without it, a receipt written in the overflow waited for the
# next timed pass.
TOLD = [*CHANGE_EVENTS, EventsLostEvent]


def watch_changes(
    observer: BaseObserver, handler: FileSystemEventHandler, folder: str
) -> ObservedWatch:
    """`handler` told of the changes to `folder`'s own entries (not its subfolders'), and
    of any the kernel lost."""
    return observer.schedule(handler, folder, recursive=False, event_filter=TOLD)
