"""The ledger's tables (DESIGN.md section 3), declared once on a shared base.

Times are Unix seconds (floats) so that the engine's clock can be injected; listings
turn them into ISO-8601; they are DoubleFields, since peewee's FloatField is a 4-byte
REAL on PostgreSQL, which rounds a Unix time to minutes. JSON columns hold evidence
exactly as it was observed.
"""

from __future__ import annotations

import json
from typing import Any

import peewee as pw

database = pw.DatabaseProxy()


class JSONField(pw.TextField):
    """A JSON document stored as text; None stays NULL."""

    def db_value(self, value: Any) -> str | None:
        return None if value is None else json.dumps(value, sort_keys=True)

    def python_value(self, value: str | None) -> Any:
        return None if value is None else json.loads(value)


class BaseModel(pw.Model):
    class Meta:
        database = database
        legacy_table_names = False


class Todo(BaseModel):
    id = pw.AutoField()
    title = pw.TextField()
    body = pw.TextField(default="")
    project = pw.TextField(null=True)
    state = pw.TextField(default="open")  # open, invited, taken, done, cancelled
    created_at = pw.DoubleField()

    class Meta:
        table_name = "engine_todos"


class Session(BaseModel):
    id = pw.AutoField()
    bindings: pw.ModelSelect
    vendor = pw.TextField()  # claude, codex
    host = pw.TextField()
    native_id = pw.TextField()
    mode = pw.TextField()  # managed, observed
    surface = pw.TextField()  # native, compatibility
    enrollment = pw.TextField(default="active")  # active, retired
    generation = pw.IntegerField(default=1)
    # No default on purpose: an unknown chat is "unknown", never "idle".
    status = pw.TextField()  # idle, busy, waiting, shell, unknown, lost, exited
    name = pw.TextField(null=True)
    cwd = pw.TextField(null=True)  # description only, never identity
    # A Claude chat is its process (pid and the start its registry entry records), with
    # its tmux pane as a second key; `native_id` is its current conversation, which
    # changes on /clear and resume, and `conversations` the earlier ones, oldest first:
    # [{id, until, how}] (seed 002: "join on tmux, never on sessionId").
    pid = pw.IntegerField(null=True)
    birth = pw.TextField(null=True)
    tmux = pw.TextField(null=True)
    conversations = JSONField(null=True)
    adoption = JSONField(null=True)  # the latest search: per Mac, what it answered
    last_tried_at = pw.DoubleField(null=True)
    refused_until = pw.DoubleField(null=True)
    created_at = pw.DoubleField()
    updated_at = pw.DoubleField()

    class Meta:
        table_name = "engine_sessions"
        indexes = ((("vendor", "host", "native_id"), True),)

    @property
    def ref(self) -> str:
        return f"{self.vendor}:{self.native_id}"


class Dispatch(BaseModel):
    id = pw.AutoField()
    todo_id: int
    session_id: int | None
    todo = pw.ForeignKeyField(Todo, backref="dispatches")
    session = pw.ForeignKeyField(Session, null=True, backref="dispatches")
    state = pw.TextField()  # invited, accepted, declined, expired, cancelled, done
    nonce = pw.TextField(null=True)
    receipt = JSONField()  # where it came from: invitation, cli-take, adopted
    created_at = pw.DoubleField()
    accepted_at = pw.DoubleField(null=True)
    outcome = pw.TextField(null=True)
    outcome_by = pw.TextField(null=True)
    outcome_at = pw.DoubleField(null=True)

    class Meta:
        table_name = "engine_dispatches"


class Binding(BaseModel):
    id = pw.AutoField()
    todo_id: int
    dispatch_id: int
    session_id: int
    todo = pw.ForeignKeyField(Todo, backref="bindings")
    dispatch = pw.ForeignKeyField(Dispatch, backref="bindings")
    session = pw.ForeignKeyField(Session, backref="bindings")
    generation = pw.IntegerField()
    state = pw.TextField(default="active")  # active, released
    created_at = pw.DoubleField()

    class Meta:
        table_name = "engine_bindings"


class Outbox(BaseModel):
    # Declared for type checkers only: peewee adds foreign-key ids itself.
    dispatch_id: int | None
    session_id: int
    id = pw.TextField(primary_key=True)  # a UUID: the frame's msg_id and uuid
    session = pw.ForeignKeyField(Session, backref="envelopes")
    generation = pw.IntegerField()
    dispatch = pw.ForeignKeyField(Dispatch, null=True, backref="envelopes")
    kind = pw.TextField()  # invitation, work, reply-review
    payload = JSONField()
    state = pw.TextField(default="pending")  # pending, uncertain, delivered, expired, cancelled
    created_at = pw.DoubleField()  # fact 1: stored
    transport_at = pw.DoubleField(null=True)  # fact 2
    transport = JSONField(null=True)
    received_at = pw.DoubleField(null=True)  # fact 3
    receipt = JSONField(null=True)
    accepted_at = pw.DoubleField(null=True)  # fact 4
    acceptance = JSONField(null=True)
    cursor = JSONField(null=True)  # native session, host, transcript path, prediction
    observed_offset = pw.IntegerField(default=0)  # where the next transcript read starts
    # The conversation whose transcript observed_offset is in, once the chat's changed
    # since the send (None: the one the frame was sent to).
    observed_in = pw.TextField(null=True)
    held = JSONField(null=True)  # the receiver's held notice, if one was seen
    expiry = JSONField(null=True)  # evidence of loss, with its reason
    conflict = pw.TextField(null=True)
    last_error = pw.TextField(null=True)
    # Tries in a row that wrote nothing (refused before a byte left: no live match, a
    # socket not private, a connect refused), and when the last was: the next waits
    # longer each time (coop_engine/backoff.py). None once a frame is written.
    refusals = pw.IntegerField(null=True)
    refused_at = pw.DoubleField(null=True)
    resent_as = pw.TextField(null=True, unique=True)
    resent_from = pw.TextField(null=True, unique=True)
    updated_at = pw.DoubleField()

    class Meta:
        table_name = "engine_outbox"
        # created_at, id: the app's window of the newest envelopes is an index scan,
        # not a sort of the whole history (tests/bench/bench_tui.py).
        indexes = ((("state", "session"), False), (("created_at", "id"), False))


# The envelopes with a held notice, by state: the app's header counts the held ones on
# every change it sees, through this small index rather than every uncertain row.
Outbox.add_index(
    Outbox.index(Outbox.state, name="engine_outbox_held").where(Outbox.held.is_null(False))
)


class HostQueue(BaseModel):
    id = pw.AutoField()
    host = pw.TextField()
    outbox = pw.ForeignKeyField(Outbox, backref="attempts")
    attempt = pw.IntegerField()
    state = pw.TextField()  # intent, written, refused, failed
    detail = pw.TextField(null=True)
    created_at = pw.DoubleField()
    updated_at = pw.DoubleField()

    class Meta:
        table_name = "engine_host_queue"
        indexes = ((("outbox", "attempt"), True),)


class QueueSighting(BaseModel):
    """What the last survey saw of a Codex envelope in Codex's own queue: an
    observation, never a fact (Codex deletes the row before it writes the receipt)."""

    outbox = pw.ForeignKeyField(Outbox, primary_key=True, backref="queue_sightings")
    queued = pw.BooleanField()  # its client id still waits in queue_1.sqlite
    open = pw.BooleanField()  # the thread is held open (its writer lock), so it polls
    seen_at = pw.DoubleField()

    class Meta:
        table_name = "codex_queue_sightings"


class Obligation(BaseModel):
    id = pw.AutoField()
    dispatch_id: int
    dispatch = pw.ForeignKeyField(Dispatch, backref="obligations")
    kind = pw.TextField(default="outcome")
    legacy = pw.BooleanField(default=False)
    due_at = pw.DoubleField()
    state = pw.TextField(default="open")  # open (due), overdue, reviewed, met, closed
    created_at = pw.DoubleField()
    met_at = pw.DoubleField(null=True)
    decision = pw.TextField(null=True)  # wait (-> reviewed) or release (-> closed)
    decided_by = pw.TextField(null=True)  # dad or chief
    decided_at = pw.DoubleField(null=True)

    class Meta:
        table_name = "engine_obligations"


class Command(BaseModel):
    key = pw.TextField(unique=True)
    name = pw.TextField()
    args_hash = pw.TextField()
    result = JSONField()
    created_at = pw.DoubleField()

    class Meta:
        table_name = "engine_commands"


class Event(BaseModel):
    id = pw.AutoField()
    at = pw.DoubleField(index=True)
    who = pw.TextField()
    command = pw.TextField()
    subject = pw.TextField(index=True)  # "outbox:<id>", "todo:<n>", "session:<n>", ...
    from_state = pw.TextField(null=True)
    to_state = pw.TextField(null=True)
    evidence = JSONField(null=True)

    class Meta:
        table_name = "engine_events"


class Notification(BaseModel):
    id = pw.AutoField()
    at = pw.DoubleField()
    kind = pw.TextField()  # chat enrolled, delivery expired, obligation overdue, ...
    text = pw.TextField()
    subject = pw.TextField(null=True)

    class Meta:
        table_name = "engine_notifications"


class Setting(BaseModel):
    """Small named facts the engine keeps, such as which chat is the chief."""

    name = pw.TextField(primary_key=True)
    value = JSONField()
    updated_at = pw.DoubleField()

    class Meta:
        table_name = "engine_settings"


class Lease(BaseModel):
    """The coordinator's lease on the ledger (coop_engine/lease.py): one row, whose epoch
    rises by one at each takeover; its times are the database's clock, never a Mac's."""

    name = pw.TextField(primary_key=True)
    epoch = pw.IntegerField()
    pid = pw.IntegerField()
    host = pw.TextField()
    by = pw.TextField()
    seconds = pw.DoubleField()  # the lease's length, as its holder renews it
    # The holder holds the ledger's session lock (flock, advisory lock) too: while it
    # does, a lock found free says the holder is gone, before its lease runs out.
    session_lock = pw.BooleanField(default=False)
    started_at = pw.DoubleField()
    renewed_at = pw.DoubleField()
    expires_at = pw.DoubleField()
    # The holder the last takeover fenced out: whatever it still tries to send is refused.
    fenced_pid = pw.IntegerField(null=True)
    fenced_host = pw.TextField(null=True)
    fenced_epoch = pw.IntegerField(null=True)

    class Meta:
        table_name = "engine_lease"


class Standby(BaseModel):
    """A coordinator that waits for the lease (`coop serve --standby`), as it last said."""

    host = pw.TextField()
    pid = pw.IntegerField()
    since = pw.DoubleField()
    seen_at = pw.DoubleField()
    seconds = pw.DoubleField()  # how often it says so: a third of its lease

    class Meta:
        table_name = "engine_standbys"
        primary_key = pw.CompositeKey("host", "pid")


TABLES: list[type[BaseModel]] = [
    Todo,
    Session,
    Dispatch,
    Binding,
    Outbox,
    HostQueue,
    QueueSighting,
    Obligation,
    Command,
    Event,
    Notification,
    Setting,
    Lease,
    Standby,
]
