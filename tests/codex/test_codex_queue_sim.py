"""The simulated Codex queue door: ``hosts/sim/bin/codex`` (``app-server``, ``queue``) and
``python -m hosts.sim codex-holder``, as real processes, against what OBSERVED.md
records of Codex CLI 0.171.0 ("The queue")."""

from __future__ import annotations

import json
import os
import queue
import re
import sqlite3
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from hosts.sim.launch import CODEX_EXECUTABLE, SimHolder, codex_holder

from .conftest import SimCodex

DEADLINE = 30.0  # seconds: generous bounds on waits, never asserted as speeds
UNKNOWN_ID = "01990000-0000-7000-8000-000000000000"
UUID7 = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
INVITATION = (
    "Would you take todo 7?\n"
    "To take it, end your reply with: COOP_ACCEPT n0nce42\n"
    "To pass, end your reply with: COOP_DECLINE n0nce42"
)
# One queue-triggered turn of the real 0.171.0 holder, (type, payload.type).
QUEUE_TURN = [
    ("event_msg", "task_started"),
    ("turn_context", None),
    ("response_item", "message"),
    ("event_msg", "item_completed"),
    ("event_msg", "item_completed"),
    ("response_item", "message"),
    ("token_usage_record", None),
    ("event_msg", "token_count"),
    ("event_msg", "task_complete"),
]


class SimAppServer:
    """``codex app-server`` of the simulator over pipes; answers returned whole."""

    def __init__(self, home: Path, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [str(CODEX_EXECUTABLE), "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env={**os.environ, "CODEX_HOME": str(home), **(env or {})},
        )
        self.lines: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(json.loads(line))

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def call(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """The answer to one request: ``{"id", "result"}`` or ``{"error", "id"}``."""
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(json.dumps(message))
        while True:
            answer = self.lines.get(timeout=DEADLINE)
            if answer.get("id") == self.next_id and "method" not in answer:
                return answer

    def initialize(self, experimental: bool = True) -> dict[str, Any]:
        params: dict[str, Any] = {"clientInfo": {"name": "coop_test", "version": "0.0.0"}}
        if experimental:
            params["capabilities"] = {"experimentalApi": True}
        answer = self.call("initialize", params)
        self.send(json.dumps({"method": "initialized"}))
        return answer

    def add(self, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
        part = {"type": "text", "text": text, "text_elements": []}
        params = {"threadId": thread_id, "clientUserMessageId": client_id, "input": [part]}
        return self.call("thread/queue/add", params)

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=DEADLINE)


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "codex"


@pytest.fixture
def thread(home: Path, sim_codex: SimCodex) -> dict[str, Any]:
    """One saved, active thread with one turn: the simulator's report of it."""
    return sim_codex(home, "--cwd", "/srv/app")


@pytest.fixture
def app(home: Path, thread: dict[str, Any]) -> Iterator[SimAppServer]:
    server = SimAppServer(home)
    assert "result" in server.initialize()
    yield server
    server.close()


def rows(home: Path, thread_id: str) -> list[dict[str, Any]]:
    conn = sqlite3.connect(f"file:{home / 'queue_1.sqlite'}?mode=ro", uri=True)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT * FROM queued_items WHERE thread_id = ? ORDER BY queue_order", (thread_id,)
        )
        return [dict(row) for row in found]
    finally:
        conn.close()


def entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def kind(entry: dict[str, Any]) -> tuple[str, str | None]:
    typed = entry["type"] in ("event_msg", "response_item")
    return entry["type"], entry["payload"].get("type") if typed else None


def wait_for(check: Callable[[], Any], what: str) -> Any:
    return wait_until(check, what, DEADLINE, 0.05)


def completes(path: Path, count: int) -> list[dict[str, Any]]:
    """The rollout's lines once ``count`` queue turns have completed in it."""

    def done() -> list[dict[str, Any]] | None:
        lines = entries(path)
        ended = [e for e in lines if kind(e) == ("event_msg", "task_complete")]
        return lines if len(ended) >= count + 1 else None  # +1: the thread's first turn

    result: list[dict[str, Any]] = wait_for(done, f"{count} queue turns in {path.name}")
    return result


def holder(home: Path, thread_id: str, *args: str) -> SimHolder:
    """A codex-holder polling every 0.2 s, holding the thread once this returns."""
    return codex_holder(home, thread_id, "--poll", "0.2", *args, timeout=DEADLINE)


@pytest.fixture
def holders() -> Iterator[list[SimHolder]]:
    started: list[SimHolder] = []
    yield started
    for one in started:
        if one.process.poll() is None:
            one.kill()


def flock_held_by(path: Path, pid: int) -> bool:
    """Whether /proc/locks shows ``pid`` holding an FLOCK on ``path``'s inode."""
    inode = os.stat(path).st_ino
    for line in Path("/proc/locks").read_text().splitlines():
        fields = line.split()
        if "->" in fields:
            continue  # a waiter, not a holder
        if fields[1:4] == ["FLOCK", "ADVISORY", "WRITE"] and fields[4] == str(pid):
            if fields[5].rsplit(":", 1)[-1] == str(inode):
                return True
    return False


def codex_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(CODEX_EXECUTABLE), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "CODEX_HOME": str(home)},
        timeout=DEADLINE,
    )


def test_app_server_adds_lists_and_deletes_a_queued_message(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    tid = thread["thread_id"]
    added = app.add(tid, "coop-1", "hello")["result"]["queuedSubmission"]
    listed = app.call("thread/queue/list", {"threadId": tid})["result"]
    stored = rows(home, tid)
    params = {"threadId": tid, "queuedSubmissionId": added["id"]}
    deleted = app.call("thread/queue/delete", params)["result"]
    again = app.call("thread/queue/delete", params)["result"]

    assert added == {
        "id": added["id"],
        "input": [{"type": "text", "text": "hello", "text_elements": []}],
        "clientUserMessageId": "coop-1",
        "responsesapiClientMetadata": None,
    }
    assert UUID7.fullmatch(added["id"])
    assert listed == {"data": [added], "nextCursor": None}
    assert [(r["id"], r["queue_order"]) for r in stored] == [(added["id"], 0)]
    assert stored[0]["payload_json"] == (
        '{"UserInput":{"content":[{"type":"text","text":"hello","text_elements":[]}],'
        '"client_id":"coop-1"}}'
    )
    assert (deleted, again) == ({"deleted": True}, {"deleted": False})
    assert rows(home, tid) == []


def test_the_queue_database_has_the_real_schema_in_wal_mode(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    app.add(thread["thread_id"], "coop-1", "one")
    conn = sqlite3.connect(f"file:{home / 'queue_1.sqlite'}?mode=ro", uri=True)
    try:
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        columns = [
            (r[1], r[2], r[3], r[5]) for r in conn.execute("PRAGMA table_info(queued_items)")
        ]
        names = {(r[0], r[1]) for r in conn.execute("SELECT type, name FROM sqlite_master")}
        revisions = conn.execute("SELECT revision, thread_id FROM queued_thread_revisions")
        revision = revisions.fetchall()
    finally:
        conn.close()
    assert mode == "wal"
    assert columns == [
        ("id", "TEXT", 1, 1),
        ("thread_id", "TEXT", 1, 0),
        ("payload_json", "TEXT", 1, 0),
        ("queue_order", "INTEGER", 1, 0),
        ("created_at_ms", "INTEGER", 1, 0),
        ("updated_at_ms", "INTEGER", 1, 0),
    ]
    assert {
        ("table", "queued_items"),
        ("index", "queued_items_thread_order_idx"),
        ("table", "queued_thread_revisions"),
        ("trigger", "queued_items_revision_after_insert"),
        ("trigger", "queued_items_revision_after_update"),
        ("trigger", "queued_items_revision_after_delete"),
        ("table", "_sqlx_migrations"),
    } <= names
    assert revision == [(1, thread["thread_id"])]


def test_the_same_client_id_twice_makes_two_rows_in_order(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    tid = thread["thread_id"]
    first = app.add(tid, "coop-dup", "once")["result"]["queuedSubmission"]
    second = app.add(tid, "coop-dup", "twice")["result"]["queuedSubmission"]

    stored = rows(home, tid)

    assert first["id"] != second["id"]
    assert [(r["id"], r["queue_order"]) for r in stored] == [(first["id"], 0), (second["id"], 1)]


def test_thread_ids_are_refused_with_the_real_codes_and_words(
    app: SimAppServer, home: Path, thread: dict[str, Any], sim_codex: SimCodex
) -> None:
    archived = sim_codex(home)["thread_id"]
    sim_codex(home, "--archive", archived)

    def error(thread_id: str) -> tuple[int, str]:
        answer = app.add(thread_id, "coop-x", "x")["error"]
        return answer["code"], answer["message"]

    assert error("not-a-uuid") == (
        -32600,
        "invalid thread id: invalid character: expected an optional prefix of `urn:uuid:`"
        " followed by [0-9a-fA-F-], found `n` at 1",
    )
    assert error("01990000") == (
        -32600,
        "invalid thread id: invalid length: expected length 32 for simple format, found 8",
    )
    assert error(UNKNOWN_ID) == (
        -32603,
        "failed to read thread: invalid thread-store request: no rollout found for thread id "
        + UNKNOWN_ID,
    )
    assert error(archived) == (
        -32600,
        f"session {archived} is archived. Run `codex unarchive {archived}` to unarchive it first.",
    )
    listed = app.call("thread/queue/list", {"threadId": archived})["error"]
    assert listed["code"] == -32600 and "is archived" in listed["message"]
    assert rows(home, archived) == []


def test_requests_need_initialize_and_queue_methods_need_the_experimental_capability(
    home: Path, thread: dict[str, Any]
) -> None:
    server = SimAppServer(home)
    try:
        early = server.call("thread/queue/list", {"threadId": thread["thread_id"]})["error"]
        init = server.initialize(experimental=False)["result"]
        refused = server.add(thread["thread_id"], "coop-1", "x")["error"]
        twice = server.call("initialize", {"clientInfo": {"name": "t", "version": "1"}})
    finally:
        server.close()
    assert early == {"code": -32600, "message": "Not initialized"}
    assert set(init) == {"userAgent", "codexHome", "platformFamily", "platformOs"}
    assert init["codexHome"] == str(home) and init["userAgent"].startswith("coop_test/0.171.0 (")
    assert refused == {
        "code": -32600,
        "message": "thread/queue/add requires experimentalApi capability",
    }
    assert twice["error"] == {"code": -32600, "message": "Already initialized"}


def test_an_unknown_method_is_refused_listing_every_real_method(app: SimAppServer) -> None:
    error = app.call("no/such/method", {})["error"]

    assert error["code"] == -32600
    assert error["message"].startswith(
        "Invalid request: unknown variant `no/such/method`, expected one of `initialize`, "
    )
    assert "`thread/queue/add`" in error["message"]
    assert error["message"].endswith("`fuzzyFileSearch/sessionStop`")


def test_without_the_queue_api_the_queue_methods_are_unknown(
    home: Path, thread: dict[str, Any]
) -> None:
    server = SimAppServer(home, env={"COOP_SIM_CODEX_NO_QUEUE_API": "1"})
    try:
        server.initialize()
        error = server.add(thread["thread_id"], "coop-1", "x")["error"]
    finally:
        server.close()
    assert error["code"] == -32600
    assert error["message"].startswith("Invalid request: unknown variant `thread/queue/add`, ")
    assert "thread/queue/" not in error["message"].split("expected one of")[1]
    assert not (home / "queue_1.sqlite").exists()


def test_lines_that_are_not_requests_get_no_answer(app: SimAppServer) -> None:
    app.send("this is not json")
    app.send("[1, 2]")
    app.send(json.dumps({"method": "no/such/notification"}))

    answer = app.call("thread/queue/list", {"threadId": "nope"})

    assert answer["id"] == app.next_id and app.lines.empty()


def test_codex_queue_prints_the_item_and_queues_it_with_a_client_id_of_its_own(
    home: Path, thread: dict[str, Any]
) -> None:
    tid = thread["thread_id"]
    done = codex_cli(home, "queue", "--thread", tid, "--message", "from the cli")

    stored = rows(home, tid)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"Queued message {stored[0]['id']} for thread {tid}.\n"
    payload = json.loads(stored[0]["payload_json"])["UserInput"]
    assert payload["content"] == [{"type": "text", "text": "from the cli", "text_elements": []}]
    assert UUID7.fullmatch(payload["client_id"]) and payload["client_id"] != stored[0]["id"]


def test_codex_queue_finds_a_thread_by_its_name(home: Path, sim_codex: SimCodex) -> None:
    tid = sim_codex(home, "--name", "coop-named")["thread_id"]

    done = codex_cli(home, "queue", "--thread", "coop-named", "--message", "by name")
    missing = codex_cli(home, "queue", "--thread", "no-such-name", "--message", "x")

    assert done.stdout.endswith(f" for thread {tid}.\n") and len(rows(home, tid)) == 1
    assert missing.returncode == 1
    assert missing.stderr == "Error: No active session found matching 'no-such-name'.\n"


def test_codex_queue_refuses_archived_and_unknown_threads_and_bad_command_lines(
    home: Path, thread: dict[str, Any], sim_codex: SimCodex
) -> None:
    sim_codex(home, "--archive", thread["thread_id"])
    tid = thread["thread_id"]

    archived = codex_cli(home, "queue", "--thread", tid, "--message", "x")
    unknown = codex_cli(home, "queue", "--thread", UNKNOWN_ID, "--message", "x")
    incomplete = codex_cli(home, "queue", "--thread", tid)
    other = codex_cli(home, "exec", "hello")

    assert (archived.returncode, archived.stdout) == (1, "")
    assert archived.stderr == (
        "Error: failed to queue session message: thread/queue/add failed: session"
        f" {tid} is archived. Run `codex unarchive {tid}` to unarchive it first. (code -32600)\n"
    )
    assert unknown.returncode == 1 and unknown.stderr.endswith(
        f"no rollout found for thread id {UNKNOWN_ID} (code -32603)\n"
    )
    assert incomplete.returncode == 2
    assert "the following required arguments were not provided:\n  --message <TEXT>" in (
        incomplete.stderr
    )
    assert other.returncode == 2 and len(other.stderr.splitlines()) == 1


def test_a_holder_runs_each_queued_message_as_one_queue_turn(
    app: SimAppServer, home: Path, thread: dict[str, Any], holders: list[SimHolder]
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    before = entries(rollout)
    app.add(tid, "coop-early", "queued before the holder")
    holders.append(holder(home, tid))
    completes(rollout, 1)
    app.add(tid, "coop-late", "queued while it holds")

    lines = completes(rollout, 2)[len(before) :]

    assert [kind(e) for e in lines] == QUEUE_TURN * 2
    assert [e["ordinal"] for e in lines] == list(range(len(before), len(before) + len(lines)))
    users = [e["payload"]["item"] for e in lines if e["payload"].get("item", {}).get("client_id")]
    assert [(u["client_id"], u["content"][0]["text"]) for u in users] == [
        ("coop-early", "queued before the holder"),
        ("coop-late", "queued while it holds"),
    ]
    started = lines[0]["payload"]
    assert started["turn_attribution"]["turn_trigger"] == "queue"
    turn_ids = {e["payload"].get("turn_id") for e in lines[:9] if e["type"] != "response_item"}
    assert turn_ids == {started["turn_id"], None}  # token_count names no turn
    assert lines[8]["payload"]["last_agent_message"] == "Noted."
    assert rows(home, tid) == []


def test_an_invitation_is_answered_with_its_accept_nonce(
    home: Path, thread: dict[str, Any], holders: list[SimHolder]
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    codex_cli(home, "queue", "--thread", tid, "--message", INVITATION)
    holders.append(holder(home, tid))

    last = completes(rollout, 1)[-1]["payload"]

    assert last["type"] == "task_complete"
    assert last["last_agent_message"].endswith("COOP_ACCEPT n0nce42")


def test_the_holder_deletes_the_row_before_it_writes_the_turn(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    rollout.unlink()
    rollout.mkdir()  # a rollout no line can be written to: the turn fails at its first line
    app.add(tid, "coop-1", "doomed")

    failing = holder(home, tid)
    status = failing.process.wait(timeout=DEADLINE)

    assert status == 1 and failing.process.stderr is not None
    assert "Is a directory" in failing.process.stderr.read()
    assert rows(home, tid) == [] and not failing.lock.exists()


def test_a_hanging_holder_stops_its_turn_at_the_user_message_and_a_kill_leaves_the_lock(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    before = len(entries(rollout))
    app.add(tid, "coop-hang", "never answered")
    hung = holder(home, tid, "--answer", "hang")

    def user_item() -> list[dict[str, Any]] | None:
        lines = entries(rollout)[before:]
        return lines if any(e["payload"].get("item", {}).get("client_id") for e in lines) else None

    lines = wait_for(user_item, "the hung turn's user message")
    hung.kill()

    assert [kind(e) for e in lines] == QUEUE_TURN[:4]
    assert entries(rollout)[before:] == lines
    assert hung.lock.exists() and not flock_held_by(hung.lock, hung.pid)
    assert rows(home, tid) == []


def test_the_holder_holds_an_flock_on_its_lock_file_and_removes_it_on_sigterm(
    app: SimAppServer, home: Path, thread: dict[str, Any], holders: list[SimHolder]
) -> None:
    tid = thread["thread_id"]
    held = holder(home, tid)
    holders.append(held)
    lock = home / "thread-writer-locks" / f"{tid}.lock"

    assert held.lock == lock and held.pid == held.process.pid
    assert flock_held_by(lock, held.pid)
    assert (home / "thread-writer-locks" / ".coordination.lock").exists()
    resumed = app.call("thread/resume", {"threadId": tid})["error"]
    assert resumed == {"code": -32600, "message": f"thread {tid} already has an active writer"}
    started = app.call("turn/start", {"threadId": tid, "input": []})["error"]
    assert started == {"code": -32600, "message": f"thread not found: {tid}"}
    with pytest.raises(RuntimeError, match="already has an active writer"):
        holder(home, tid)

    assert held.stop() == 0
    assert not lock.exists()
    assert app.call("thread/resume", {"threadId": tid})["error"]["message"].startswith(
        "codex-sim runs no turns"
    )


def test_a_hanging_holder_stopped_cleanly_ends_its_turn_as_interrupted(
    app: SimAppServer, home: Path, thread: dict[str, Any]
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    before = len(entries(rollout))
    app.add(tid, "coop-stall", "COOP-STALL: the model never answers this")
    stalled = holder(home, tid)
    wait_for(lambda: len(entries(rollout)) >= before + 4, "the hung turn's user message")

    assert stalled.stop() == 0

    lines = entries(rollout)[before:]
    assert [kind(e) for e in lines] == [*QUEUE_TURN[:4], ("response_item", "message")] + [
        ("event_msg", "turn_aborted")
    ]
    aborted = lines[-1]["payload"]
    assert aborted["turn_id"] == lines[0]["payload"]["turn_id"]
    assert aborted["reason"] == "interrupted"
    assert lines[-2]["payload"]["content"][0]["text"].startswith("<turn_aborted>")
    assert not stalled.lock.exists()


def wakeups(pid: int) -> int:
    """How often ``pid`` has slept and woken: each poll the holder waits out is one."""
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"^voluntary_ctxt_switches:\s*(\d+)", status, re.M)[1])  # type: ignore[index]


def test_a_paused_holder_leaves_the_queue_alone_until_its_pause_file_goes(
    app: SimAppServer, home: Path, thread: dict[str, Any], holders: list[SimHolder], tmp_path: Path
) -> None:
    tid, rollout = thread["thread_id"], Path(thread["rollout_path"])
    pause = tmp_path / "holder-pause"
    pause.touch()
    paused = holder(home, tid, "--pause-file", str(pause))
    holders.append(paused)
    queued = app.add(tid, "coop-paused", "queued while the holder is paused")
    woken = wakeups(paused.process.pid)
    # Three more wakeups: the holder has looked at least twice since the row was added.
    wait_until(lambda: wakeups(paused.process.pid) >= woken + 3, "the paused holder's polls")

    assert [r["id"] for r in rows(home, tid)] == [queued["result"]["queuedSubmission"]["id"]]
    assert paused.process.poll() is None  # paused, not stopped or gone

    pause.unlink()
    completes(rollout, 1)
    assert rows(home, tid) == []
