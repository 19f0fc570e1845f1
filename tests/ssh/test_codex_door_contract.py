"""The Codex door's half on a Mac, asked the three ways (in-process, the helper over
pipes, the helper over real OpenSSH): the helper drives that Mac's own `codex
app-server` (the simulated one fleet.toml names), and its survey reports each Codex
envelope's queue and rollout sightings. Every Host answers the same."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from typing import Any

import pytest
from fleet_macs import Mac
from waiting import wait_until

from hosts.mac.host import Host, NativeRefusal
from hosts.sim.launch import ROOT, codex_holder

pytestmark = pytest.mark.ssh


def saved_thread(mac: Mac, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(mac.codex_home), *args],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    thread_id: str = json.loads(done.stdout)["thread_id"]
    return thread_id


def reading(thread_id: str, outbox_id: str, offset: int) -> dict[str, Any]:
    """A Codex envelope's reading, as the door asks the survey for it."""
    return {
        "id": outbox_id,
        "session_id": thread_id,
        "offset": offset,
        "inode": None,
        "needles": [outbox_id],
        "vendor": "codex",
        "queue": True,
    }


def test_a_message_added_to_codexs_queue_is_seen_queued_then_received(
    host_on: Host, laptop: Mac
) -> None:
    thread_id, outbox_id = saved_thread(laptop), str(uuid.uuid4())
    position = host_on.codex_position(thread_id)
    assert (position["exists"], position["archived"], position["open"]) == (True, False, False)
    added = host_on.codex_queue_add(thread_id, outbox_id, "Please port the importer")
    assert (added["ok"], added["written"], added["via"]) == (True, True, "app-server")
    queued = host_on.codex_queued(thread_id)
    assert queued == {"queued": {outbox_id: [added["queued_id"]]}, "open": False}
    surveyed = host_on.survey(None, [reading(thread_id, outbox_id, position["size"])])
    assert surveyed["queue"] == {outbox_id: {"queued": [added["queued_id"]], "open": False}}
    assert surveyed["sightings"][outbox_id]["lines"] == []
    assert position["path"] in surveyed["watch"]["paths"]  # the rollout is watched

    holder = codex_holder(laptop.codex_home, thread_id, "--poll", "0.2")
    try:
        seen = wait_until(
            lambda: host_on.rollout_scan(thread_id, position["size"], [outbox_id])["lines"],
            "the receipt in the rollout",
        )
        receipt = json.loads(seen[0][1])["payload"]
        assert (receipt["type"], receipt["item"]["client_id"]) == ("item_completed", outbox_id)
        surveyed = host_on.survey(None, [reading(thread_id, outbox_id, position["size"])])
        assert surveyed["queue"] == {outbox_id: {"queued": [], "open": True}}
        assert [line[0] for line in surveyed["sightings"][outbox_id]["lines"]] == [seen[0][0]]
        assert host_on.codex_position(thread_id)["open"] is True
        read = host_on.rollout_read(thread_id, seen[0][0], 1 << 20)
        assert any('"task_complete"' in text for _, text in read["lines"])
    finally:
        holder.stop()


def test_a_queued_message_is_withdrawn_once_and_only_while_it_waits(
    host_on: Host, laptop: Mac
) -> None:
    thread_id, outbox_id = saved_thread(laptop), str(uuid.uuid4())
    added = host_on.codex_queue_add(thread_id, outbox_id, "Never mind")
    assert host_on.codex_queue_delete(thread_id, added["queued_id"]) == {"deleted": True}
    assert host_on.codex_queue_delete(thread_id, added["queued_id"]) == {"deleted": False}
    assert host_on.codex_queued(thread_id)["queued"] == {}


def test_codex_refuses_an_archived_thread_and_no_malformed_id_is_sent(
    host_on: Host, laptop: Mac
) -> None:
    archived = saved_thread(laptop)
    saved_thread(laptop, "--archive", archived)
    assert host_on.codex_position(archived)["archived"] is True
    refused = host_on.codex_queue_add(archived, str(uuid.uuid4()), "x")
    assert (refused["ok"], refused["written"]) == (False, False)
    assert "is archived" in refused["error"]
    with pytest.raises(NativeRefusal, match="not a Codex thread id"):
        host_on.codex_queue_add("$(touch /tmp/pwned)", str(uuid.uuid4()), "x")
