"""The demo's simulated chats each show a TMUX pane of their own, never the pane the app
(or this test) runs in: started inside tmux, every chat would otherwise ask tmux for the
pane it inherited and report the app's."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from coop_engine.loop.demo import Demo
from hosts.sim.process import TMUX_ENV

pytestmark = pytest.mark.tui

APP_PANE = "coop:@7.%42"  # where the app runs, as this test's fake tmux answers


def fake_tmux(folder: Path) -> Path:
    """A `tmux` that answers every `display` with the app's own pane."""
    folder.mkdir()
    tmux = folder / "tmux"
    tmux.write_text(f"#!/bin/sh\necho '{APP_PANE}'\n")
    tmux.chmod(tmux.stat().st_mode | stat.S_IXUSR)
    return folder


def test_the_demos_chats_get_tmux_panes_of_their_own(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = fake_tmux(workdir / "bin")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("TMUX", "/tmp/tmux-4242/default,4242,0")
    monkeypatch.setenv("TMUX_PANE", "%42")
    monkeypatch.delenv(TMUX_ENV, raising=False)
    with Demo(None, say=lambda line: None) as demo:
        assert demo.office is not None
        panes: dict[str, str | None] = {}
        for mac, host in demo.office.fleet.hosts.items():
            for chat in host.chats()["chats"]:
                if chat["live"]:
                    panes[f"{mac}/{chat['name']}"] = chat["tmux"]
    expected = {"importer", "builder", "reviewer", "locked", "flaky", "docs"}
    assert expected <= {name.split("/", 1)[1] for name in panes}, panes
    assert all(pane for pane in panes.values()), panes
    assert APP_PANE not in panes.values(), panes
    assert len(set(panes.values())) == len(panes), panes
