"""The command frame every engine command runs in (DESIGN.md section 4).

`_command` looks up the idempotency key in `engine_commands`, returns the first result
on a replay, refuses the same key with other arguments, and otherwise runs the body and
records key and result in the same transaction. State changes inside bodies are
compare-and-set updates whose row counts are checked, or inserts guarded by a unique
constraint.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import peewee as pw

from coop_engine.db import is_sqlite
from coop_engine.errors import READ_ONLY, KeyReused, NotFound, ReadOnly
from coop_engine.models import Command, Dispatch, Event, Notification, Outbox, Session, Todo

Clock = Callable[[], float]
Body = Callable[[float], dict[str, Any]]


_writes_refused = False  # this process was started with --read-only; never set back


def refuse_writes() -> None:
    """From now on every command this process runs is refused (`ReadOnly`, one line)
    before it opens a transaction: `coop tui --read-only` and each app `coop web
    --read-only` starts. There is no way back for the process."""
    global _writes_refused
    _writes_refused = True


def writes_refused() -> bool:
    """Whether this process was started read-only (see `refuse_writes`)."""
    return _writes_refused


def fresh_key(prefix: str) -> str:
    """A key for a command that is a new decision each time (a press, a new todo)."""
    return f"{prefix}:{uuid.uuid4().hex}"


def _args_hash(name: str, args: dict[str, Any]) -> str:
    text = json.dumps([name, args], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


class CommandBase:
    """Transactions, idempotency, events and notifications shared by all commands."""

    def __init__(
        self,
        db: pw.Database,
        clock: Clock = time.time,
        actor: str = "coop",
        new_id: Callable[[], str] | None = None,
    ) -> None:
        self.db = db
        self.clock = clock
        self.actor = actor
        # Envelope ids become frames' msg_id; tests and snapshots inject a fixed sequence.
        self.new_id = new_id or (lambda: str(uuid.uuid4()))
        # The lease epoch this process sends under (coop_engine/lease.py), set by the
        # coordinator that holds the lease; None in a process that holds none.
        self.epoch: int | None = None

    # --- the command frame -------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        # IMMEDIATE takes SQLite's write lock up front, so two processes never both
        # read a row as pending and then race to write it.
        with self.db.atomic("IMMEDIATE") if is_sqlite(self.db) else self.db.atomic():
            yield

    def _command(self, name: str, key: str, args: dict[str, Any], body: Body) -> dict[str, Any]:
        """Run `body` once for `key` in one transaction (see the module's words); in a
        read-only process nothing runs and nothing is recorded: `ReadOnly`."""
        self._writable()
        digest = _args_hash(name, args)
        try:
            with self._transaction():
                prior = Command.get_or_none(Command.key == key)
                if prior is not None:
                    return self._replay(prior, name, digest)
                now = self.clock()
                result = body(now)
                Command.create(key=key, name=name, args_hash=digest, result=result, created_at=now)
                return result
        except pw.IntegrityError:
            # Another process recorded this key between our read and our insert.
            prior = Command.get_or_none(Command.key == key)
            if prior is None:
                raise
            return self._replay(prior, name, digest)

    @staticmethod
    def _writable() -> None:
        """Refuse, before any write, in a process started with --read-only."""
        if _writes_refused:
            raise ReadOnly(READ_ONLY)

    @staticmethod
    def _replay(prior: Command, name: str, digest: str) -> dict[str, Any]:
        if prior.name != name or prior.args_hash != digest:
            raise KeyReused(f"Command key {prior.key} was already used with other arguments")
        result: dict[str, Any] = prior.result
        return result

    # --- shared pieces of command bodies ----------------------------------------------

    def _event(
        self,
        now: float,
        command: str,
        subject: str,
        from_state: str | None,
        to_state: str | None,
        evidence: dict[str, Any] | None = None,
        who: str | None = None,
    ) -> None:
        Event.create(
            at=now,
            who=who or self.actor,
            command=command,
            subject=subject,
            from_state=from_state,
            to_state=to_state,
            evidence=evidence,
        )

    def _notify(self, now: float, kind: str, text: str, subject: str | None = None) -> None:
        Notification.create(at=now, kind=kind, text=text, subject=subject)

    @staticmethod
    def _todo(todo_id: int) -> Todo:
        return _found(Todo, todo_id, f"No todo #{todo_id}")

    @staticmethod
    def _outbox(outbox_id: str) -> Outbox:
        return _found(Outbox, outbox_id, f"No outbox envelope {outbox_id}")

    @staticmethod
    def _session(session_id: int) -> Session:
        return _found(Session, session_id, f"No session {session_id}")

    @staticmethod
    def _dispatch(dispatch_id: int) -> Dispatch:
        return _found(Dispatch, dispatch_id, f"No dispatch {dispatch_id}")


Row = TypeVar("Row", bound=pw.Model)


def _found(model: type[Row], key: object, missing: str) -> Row:
    """The row of `model` with this id, or NotFound saying `missing`."""
    row = model.get_or_none(id=key)
    if row is None:
        raise NotFound(missing)
    return row
