"""Fixtures that run the real Claude Code 2.1.328 offline (see harness.py and OBSERVED.md).

- ``claude_binary`` (session): the path of the ``claude`` executable. Skips with a
  one-line reason when the package or a prerequisite (root, tmux, unshare, ip) is
  missing; fails naming it instead under CI's switch (tests/prerequisites.py).
- ``start_chat`` (function): a factory ``start_chat(config=None, *, wait=True, **fields)
  -> Chat``; ``fields`` are ``ChatConfig`` fields when no config is given. Every chat it
  started is stopped at teardown (by pid, tmux server included).
- ``runs`` (session): ``runs.get(scenario, backend)`` runs one of scenarios.SCENARIOS in
  a fresh office, real or simulated, once per session, and hands back its ``Run``; the
  scenario tests judge Coop's outcome and the shape tests compare the two backends.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from prerequisites import missing

from . import fetch, harness
from .harness import Chat, ChatConfig
from .offices import Office, RealOffice, SimOffice
from .scenarios import SCENARIOS, Run


@functools.cache
def _find_binary() -> Path | str:
    """The binary, or why there is none (looked for once per session)."""
    try:
        harness.check_prerequisites()
        return fetch.claude_binary()
    except fetch.Unavailable as exc:
        return str(exc)


def real_claude_binary() -> Path:
    found = _find_binary()
    if isinstance(found, str):
        missing(f"real Claude Code: {found}")
    return found


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    return real_claude_binary()


@pytest.fixture
def start_chat(claude_binary: Path, tmp_path: Path) -> Iterator[Callable[..., Chat]]:
    chats: list[Chat] = []

    def start(config: ChatConfig | None = None, *, wait: bool = True, **fields: Any) -> Chat:
        config = config or ChatConfig(**fields)
        root = tmp_path / f"chat{len(chats)}"
        chat = harness.start_chat(claude_binary, root, config, wait=wait)
        chats.append(chat)
        return chat

    yield start
    for chat in reversed(chats):
        chat.stop()


# What a run may end with instead of a Run: a failure, or pytest's skip and fail.
KEPT = (Exception, pytest.skip.Exception, pytest.fail.Exception)


class Runs:
    """Each scenario's Run per backend, made on first request and kept for the session
    (a failure is kept too, and raised again to every test that asks)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._done: dict[tuple[str, str], Run | BaseException] = {}

    def get(self, scenario: str, backend: str) -> Run:
        key = (scenario, backend)
        if key not in self._done:
            self._done[key] = self._run(scenario, backend)
        done = self._done[key]
        if isinstance(done, BaseException):
            raise done
        return done

    def _run(self, scenario: str, backend: str) -> Run | BaseException:
        # Short paths: the chats' tmux and inbox sockets live under them.
        root = Path(tempfile.mkdtemp(prefix=f"coop-{backend}-", dir=self.root))
        office: Office
        try:
            office = (
                RealOffice(root, real_claude_binary()) if backend == "real" else SimOffice(root)
            )
        except KEPT as exc:  # a skip, or a failure to prepare
            return exc
        try:
            run = SCENARIOS[scenario](office)
            run.backend = backend
            return run
        except KEPT as exc:  # kept for every test that asks for this run
            return exc
        finally:
            office.stop()


@pytest.fixture(scope="session")
def runs() -> Iterator[Runs]:
    root = Path(tempfile.mkdtemp(prefix="coop-runs-", dir="/tmp"))
    yield Runs(root)
    shutil.rmtree(root, ignore_errors=True)
