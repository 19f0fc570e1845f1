"""The fleet from the command line: chats on sshd "Macs" listed, shown, invited and sent
their work; `coop hosts` with Macs up, down and silent; the host's third registry read
made on the Mac where the chat lives."""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fleet_macs import Mac
from sshd_harness import SilentServer, free_port
from waiting import wait_until

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox
from hosts.mac.host import Host
from hosts.mac.native import RECEIVER_CHANGED

pytestmark = pytest.mark.ssh

RunCoop = Callable[..., Any]


def write_fleet(home: Path, *tables: str) -> dict[str, str]:
    """fleet.toml with an office and these [[mac]] tables; the environment whose office
    Claude folder is empty, so every chat found is found on a Mac."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleet.toml").write_text('office = "office"\n\n' + "\n".join(tables))
    office = home / "office-claude"
    office.mkdir(exist_ok=True)
    return {"CLAUDE_CONFIG_DIR": str(office)}


def coop_json(run_coop: RunCoop, *args: str, env: dict[str, str]) -> Any:
    done = run_coop(*args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_chat_on_a_remote_mac_is_listed_invited_accepts_and_receives_its_work(
    run_coop: RunCoop, coop_home: Path, laptop: Mac
) -> None:
    chat = laptop.chat("--name", "importer-worker")
    env = write_fleet(coop_home, laptop.fleet_entry())
    (listed,) = coop_json(run_coop, "chats", "--host", "laptop", env=env)
    assert (listed["host"], listed["session_id"], listed["name"]) == (
        "laptop",
        chat.session_id,
        "importer-worker",
    )
    assert (listed["socket"], listed["inbound"]) == ("ok", "accept")
    assert coop_json(run_coop, "chats", env=env) == [listed]
    assert run_coop("todo", "add", "Fix the flaky importer test", env=env).returncode == 0
    invited = run_coop("invite", "1", "--session", chat.ref, "--host", "laptop", env=env)
    assert invited.returncode == 0, invited.stderr

    def both_delivered() -> list[dict[str, Any]] | None:
        assert run_coop("tick", env=env).returncode == 0
        rows = coop_json(run_coop, "outbox", env=env)
        return rows if len(rows) == 2 and all(r["state"] == "delivered" for r in rows) else None

    invitation, work = wait_until(both_delivered, "the invitation and the work delivered")
    assert (invitation["kind"], work["kind"]) == ("invitation", "work")
    assert invitation["host"] == work["host"] == "laptop"
    assert invitation["facts"]["accepted"] and work["facts"]["received"]
    assert [f["msg_id"] for f in chat.frames()] == [invitation["id"], work["id"]]


def test_chat_show_finds_the_chat_on_whichever_mac_it_lives(
    run_coop: RunCoop, coop_home: Path, start_mac: Callable[..., Mac]
) -> None:
    laptop, studio = start_mac("laptop"), start_mac("studio")
    chat = studio.chat("--name", "renderer")
    env = write_fleet(coop_home, laptop.fleet_entry(), studio.fleet_entry())
    shown = run_coop("chat", "show", chat.ref, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "host:       studio\n" in shown.stdout
    assert f"session:    {chat.ref}\n" in shown.stdout and '"name": "renderer"' in shown.stdout
    view = coop_json(run_coop, "chat", "show", chat.session_id, "--host", "studio", env=env)
    assert view["host"] == "studio" and view["chat"]["entry"]["pid"] == chat.pid
    missing = run_coop("chat", "show", str(uuid.uuid4()), "--host", "laptop", env=env)
    assert missing.returncode == 1 and "No chat with session" in missing.stderr


def test_coop_hosts_reports_two_macs_up_and_the_down_and_silent_ones_asked_once(
    run_coop: RunCoop, coop_home: Path, start_mac: Callable[..., Mac]
) -> None:
    laptop, studio = start_mac("laptop"), start_mac("studio")
    laptop.chat()
    silent = SilentServer()
    try:
        down = laptop.fleet_entry().replace('"laptop"', '"down"', 1)
        down = down.replace(f"port = {laptop.port}", f"port = {free_port()}")
        hung = laptop.fleet_entry().replace('"laptop"', '"hung"', 1)
        hung = hung.replace(f"port = {laptop.port}", f"port = {silent.port}") + "timeout = 2\n"
        env = write_fleet(coop_home, laptop.fleet_entry(), studio.fleet_entry(), down, hung)
        rows = {row["name"]: row for row in coop_json(run_coop, "hosts", env=env)}
        # Counted in connections, not seconds: the hung Mac was waited for once. A probe
        # connection after the command: any second connection would be accepted first.
        with socket.create_connection(("127.0.0.1", silent.port), timeout=30):
            wait_until(lambda: len(silent.accepted) >= 2, "the probe connection accepted")
        assert len(silent.accepted) == 2, "the hung Mac was connected to more than once"
    finally:
        silent.close()
    assert list(rows) == ["office", "laptop", "studio", "down", "hung"]
    assert [rows[name]["reachable"] for name in rows] == [True, True, True, False, False]
    assert (rows["laptop"]["chats_live"], rows["laptop"]["chats_registered"]) == (1, 1)
    assert rows["studio"]["chats_live"] == 0 and rows["studio"]["latency_ms"] > 0
    assert rows["laptop"]["reason"] is None
    assert rows["down"]["reason"].startswith("connection refused by 127.0.0.1:")
    assert rows["hung"]["reason"].startswith("timed out after 2s waiting for ssh")
    assert rows["hung"]["latency_ms"] is None and rows["hung"]["checked_at"].endswith("Z")


def test_listing_every_mac_warns_about_an_unreachable_one_and_lists_the_others(
    run_coop: RunCoop, coop_home: Path, laptop: Mac
) -> None:
    chat = laptop.chat()
    down = laptop.fleet_entry().replace('"laptop"', '"down"', 1)
    down = down.replace(f"port = {laptop.port}", f"port = {free_port()}")
    env = write_fleet(coop_home, laptop.fleet_entry(), down)
    done = run_coop("chats", "--json", env=env)
    assert done.returncode == 0
    assert [row["session_id"] for row in json.loads(done.stdout)] == [chat.session_id]
    assert "coop: warning: down: connection refused" in done.stderr
    only = run_coop("chats", "--host", "down", env=env)
    assert only.returncode == 1 and only.stderr.startswith("coop: down: connection refused")


class RewriteBeforeSend(Host):
    """An SshHost whose chat's registry, on the Mac, is rewritten after the engine's two
    readings: only the Mac's own third reading can notice."""

    def __init__(self, inner: Host, rewrite: Callable[[], None]) -> None:
        self.inner, self.name, self.rewrite, self.reads = inner, inner.name, rewrite, 0

    def call(self, op: str, **args: Any) -> Any:
        result = self.inner.call(op, **args)
        if op == "target":
            self.reads += 1
            if self.reads == 2:
                self.rewrite()
        return result


def test_a_registry_rewritten_on_the_mac_between_coops_reads_and_the_send_is_refused(
    laptop: Mac, tmp_path: Path
) -> None:
    chat, other = laptop.chat(), laptop.chat()
    host = RewriteBeforeSend(
        laptop.ssh_host(), lambda: chat.rewrite_entry(messagingSocketPath=str(other.socket))
    )
    engine = Engine(open_ledger(tmp_path / "ledger"))
    todo = engine.add_todo("Refactor the importer")["id"]
    outbox_id = str(engine.invite(todo, chat.ref, "laptop")["outbox"])
    Coordinator(engine, {"laptop": host}, lambda _: None).tick()
    row = queries.envelope(Outbox.get_by_id(outbox_id))
    assert (row["state"], row["last_error"]) == ("pending", RECEIVER_CHANGED)
    assert chat.frames() == [] and other.frames() == []
