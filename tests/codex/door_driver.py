"""Drive Coop's Codex door against the real Codex CLI 0.171.0 offline; run inside
``unshare -n`` by real_codex.run_driver (``--driver door``).

    python door_driver.py --codex BIN --root DIR --repo REPO --result FILE --netns-file F

In the loopback-only namespace it serves the scripted Responses API, makes threads with
``codex exec``, holds some open the way the Desktop app does (an app-server that did
``thread/resume``), and runs Coop's own CLI (``python -m coop_engine.cli``) against
them, recording what each scenario saw:

- ``held``: an invitation to a held thread is queued, received, answered
  ``COOP_ACCEPT <nonce>``, and the todo is taken; `coop chats` says the thread is open;
- ``unheld``: an invitation to a thread nobody holds stays queued, is withdrawn (Codex
  answers deleted), and Send again works once;
- ``refused``: an archived, an unknown and a malformed thread id are refused and no
  thread is created;
- ``killed_holder``: a holder SIGKILLed mid-turn leaves the invitation received and
  unanswered, never lost;
- ``killed_coop``: `coop tick` SIGKILLed after Codex queued the message and before its
  answer reached Coop reconciles to one delivery, not two.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_server import ModelServer  # noqa: E402  (sibling files, not a package)
from real_driver import (  # noqa: E402
    API_KEY,
    AppServer,
    config_toml,
    driver_arguments,
    enter_namespace,
    exec_thread,
    rollout_files,
    rollout_of,
    write_result,
)

WAIT = 60.0  # seconds: bounds a hang; a held thread polls its queue about every 10 s
# An app-server standing in for `codex`: it passes everything through to the real one,
# except that it withholds the answer to `thread/queue/add` (after Codex carried it out)
# and says so in a file, so the test can SIGKILL Coop in that window.
WITHHOLDER = r"""#!{python}
import json, os, subprocess, sys, threading, time
real, marker = {real!r}, {marker!r}
if sys.argv[1:2] != ["app-server"]:
    os.execv(real, [real] + sys.argv[1:])
child = subprocess.Popen([real] + sys.argv[1:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
adds = set()
def upstream():
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if message.get("method") == "thread/queue/add":
            adds.add(message["id"])
        child.stdin.write(line); child.stdin.flush()
threading.Thread(target=upstream, daemon=True).start()
for line in child.stdout:
    if json.loads(line).get("id") in adds:
        open(marker, "w").write("added")
        time.sleep(3600)
    sys.stdout.buffer.write(line); sys.stdout.buffer.flush()
"""


class World:
    """One Codex home, one Coop home, the scripted model, and Coop's CLI."""

    def __init__(self, codex: str, root: Path, repo: Path) -> None:
        self.codex, self.root, self.repo = codex, root, repo
        self.home, self.project = root / "codex-home", root / "project"
        self.coop_home = root / "coop-home"
        for folder in (self.home, self.project, root / "home", self.coop_home):
            folder.mkdir(parents=True, exist_ok=True)
        self.server = ModelServer(root / "model.log")
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        (self.home / "config.toml").write_text(config_toml(self.server.server_address[1]))
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(root / "home"),
            "CODEX_HOME": str(self.home),
            "OPENAI_API_KEY": API_KEY,
            "LANG": "C.UTF-8",
        }
        self.use_codex(codex)

    def use_codex(self, executable: str) -> None:
        (self.coop_home / "fleet.toml").write_text(f'office = "office"\ncodex = "{executable}"\n')

    def thread(self, prompt: str) -> str:
        run = exec_thread(self.codex, self.env, self.project, prompt)
        thread_id = (run["first"] or {}).get("thread_id")
        if not isinstance(thread_id, str):
            raise RuntimeError(f"codex exec printed no thread id: {run}")
        return thread_id

    def holder(self, thread_id: str) -> AppServer:
        """An app-server holding the thread open, as the Desktop app would."""
        app = AppServer(self.codex, self.env, self.project)
        app.request("thread/resume", {"threadId": thread_id})
        return app

    def coop(self, *args: str) -> dict[str, Any]:
        env = {**self.env, "COOP_HOME": str(self.coop_home), "PYTHONPATH": str(self.repo)}
        done = subprocess.run(
            [sys.executable, "-m", "coop_engine.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.repo,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        return {"rc": done.returncode, "out": done.stdout.strip(), "err": done.stderr.strip()}

    def coop_popen(self, *args: str) -> subprocess.Popen[str]:
        """`coop ARGS` running on; what it says goes to `<root>/<command>.log`."""
        env = {**self.env, "COOP_HOME": str(self.coop_home), "PYTHONPATH": str(self.repo)}
        log = (self.root / f"{args[0]}.log").open("a")
        return subprocess.Popen(
            [sys.executable, "-m", "coop_engine.cli", *args],
            env=env,
            cwd=self.repo,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )

    def envelope(self, outbox_id: str) -> dict[str, Any]:
        rows = json.loads(self.coop("outbox", "--json")["out"])
        return next(row for row in rows if row["id"] == outbox_id)

    def todo(self, title: str, body: str = "") -> int:
        return int(
            json.loads(self.coop("todo", "add", title, "--body", body, "--json")["out"])["id"]
        )

    def invite(self, todo: int, thread_id: str) -> str:
        done = self.coop("invite", str(todo), "--session", f"codex:{thread_id}")
        if done["rc"] != 0:
            raise RuntimeError(f"invite failed: {done}")
        return done["out"]

    def tick_until(self, outbox_id: str, done: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + WAIT
        while True:
            self.coop("tick")
            row = self.envelope(outbox_id)
            if done(row) or time.monotonic() > deadline:
                return row
            time.sleep(0.5)

    def work_of(self, todo: int) -> str:
        """The work envelope an accepted invitation to `todo` made."""
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            rows = json.loads(self.coop("outbox", "--json")["out"])
            work = [r["id"] for r in rows if r["todo"] == todo and r["kind"] == "work"]
            if work:
                return str(work[0])
            time.sleep(0.2)
        raise RuntimeError(f"no work envelope for todo {todo}")

    def tick_until_seen(self, outbox_id: str) -> dict[str, Any]:
        """The envelope once the running `coop serve` recorded its receipt."""
        deadline = time.monotonic() + WAIT
        while True:
            row = self.envelope(outbox_id)
            if row["facts"]["received"] is not None or time.monotonic() > deadline:
                return row
            time.sleep(0.2)

    def queue_rows(self, client_id: str) -> int:
        conn = sqlite3.connect(f"file:{self.home}/queue_1.sqlite?mode=ro", uri=True)
        try:
            rows = conn.execute("SELECT payload_json FROM queued_items").fetchall()
        finally:
            conn.close()
        ids = [json.loads(payload)["UserInput"].get("client_id") for (payload,) in rows]
        return ids.count(client_id)

    def receipts(self, thread_id: str, client_id: str) -> int:
        lines = rollout_of(self.home, thread_id).read_text().splitlines()
        return sum(1 for line in lines if f'"client_id":"{client_id}"' in line.replace(" ", ""))

    def rollouts(self) -> int:
        return len(rollout_files(self.home))

    def todo_state(self, todo: int) -> str:
        todos = json.loads(self.coop("todo", "list", "--json")["out"])
        return str(next(t["state"] for t in todos if t["id"] == todo))


def held(world: World) -> dict[str, Any]:
    thread_id = world.thread("Coop door: held")
    holder = world.holder(thread_id)
    try:
        chats = json.loads(world.coop("chats", "--json")["out"])
        todo = world.todo("Held thread todo")
        outbox_id = world.invite(todo, thread_id)
        first = world.tick_until(outbox_id, lambda row: row["facts"]["transport"] is not None)
        row = world.tick_until(outbox_id, lambda row: row["facts"]["accepted"] is not None)
        return {
            "thread": thread_id,
            "chats": [c for c in chats if c["session_id"] == thread_id],
            "after_add": first,
            "row": row,
            "todo_state": world.todo_state(todo),
            "receipts": world.receipts(thread_id, outbox_id),
        }
    finally:
        holder.close()


def unheld(world: World) -> dict[str, Any]:
    thread_id = world.thread("Coop door: unheld")
    chats = json.loads(world.coop("chats", "--json")["out"])
    todo = world.todo("Unheld thread todo")
    outbox_id = world.invite(todo, thread_id)
    queued = world.tick_until(outbox_id, lambda row: row["queued"] is not None)
    withdrawn = world.coop("withdraw", outbox_id, "--by", "dad")
    after = world.envelope(outbox_id)
    again = world.coop("resend", outbox_id, "--by", "dad")
    twice = world.coop("resend", outbox_id, "--by", "dad")
    new_id = again["out"].split()[-1] if again["rc"] == 0 else ""
    resent = world.tick_until(new_id, lambda row: row["queued"] is not None) if new_id else {}
    return {
        "thread": thread_id,
        "chats": [c for c in chats if c["session_id"] == thread_id],
        "queued": queued,
        "withdraw": withdrawn,
        "after": after,
        "resend": again,
        "resend_twice": twice,
        "resent": resent,
        "queue_rows_old": world.queue_rows(outbox_id),
        "queue_rows_new": world.queue_rows(new_id) if new_id else None,
    }


def refused(world: World) -> dict[str, Any]:
    archived = world.thread("Coop door: archived")
    argv = [world.codex, "archive", archived]
    subprocess.run(argv, env=world.env, cwd=world.project, capture_output=True, timeout=60)
    todo = world.todo("Refused todo")
    before = world.rollouts()
    unknown = "01990000-0000-7000-8000-000000000000"
    out = {
        "archived": world.coop("invite", str(todo), "--session", f"codex:{archived}"),
        "unknown": world.coop("invite", str(todo), "--session", f"codex:{unknown}"),
        "malformed": world.coop("invite", str(todo), "--session", "codex:not-a-thread"),
    }
    out["rollouts_before"], out["rollouts_after"] = before, world.rollouts()
    out["outbox"] = json.loads(world.coop("outbox", "--json")["out"])
    out["todo"] = todo
    return out


def killed_holder(world: World) -> dict[str, Any]:
    thread_id = world.thread("Coop door: killed holder")
    holder = world.holder(thread_id)
    todo = world.todo("Stalled todo", "COOP-STALL: the model never answers this one")
    outbox_id = world.invite(todo, thread_id)
    received = world.tick_until(outbox_id, lambda row: row["facts"]["received"] is not None)
    holder.proc.kill()
    holder.proc.wait()
    holder.errors.close()
    for _ in range(3):
        world.coop("tick")
    later = world.envelope(outbox_id)
    return {
        "thread": thread_id,
        "received": received,
        "later": later,
        "todo_state": world.todo_state(todo),
    }


def killed_coop(world: World) -> dict[str, Any]:
    thread_id = world.thread("Coop door: killed coop")
    marker = world.root / "withheld"
    wrapper = world.root / "codex-withholding"
    wrapper.write_text(
        WITHHOLDER.format(python=sys.executable, real=world.codex, marker=str(marker))
    )
    wrapper.chmod(0o755)
    todo = world.todo("Killed Coop todo")
    outbox_id = world.invite(todo, thread_id)
    world.use_codex(str(wrapper))
    tick = world.coop_popen("tick")
    deadline = time.monotonic() + WAIT
    while not marker.exists() and time.monotonic() < deadline and tick.poll() is None:
        time.sleep(0.05)
    withheld = marker.exists()
    os.killpg(tick.pid, signal.SIGKILL)  # Coop and the app-server it started
    tick.wait()
    world.use_codex(world.codex)
    killed = world.envelope(outbox_id)
    reconciled = world.tick_until(outbox_id, lambda row: row["facts"]["transport"] is not None)
    rows_after_reconcile = world.queue_rows(outbox_id)
    holder = world.holder(thread_id)
    try:
        row = world.tick_until(outbox_id, lambda row: row["facts"]["received"] is not None)
        world.coop("tick")
    finally:
        holder.close()
    return {
        "withheld": withheld,
        "killed": killed,
        "reconciled": reconciled,
        "queue_rows_after_reconcile": rows_after_reconcile,
        "row": row,
        "receipts": world.receipts(thread_id, outbox_id),
    }


def seconds(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def receipt_bench(world: World, samples: int = 3) -> dict[str, Any]:
    """`make bench`'s codex_receipt: on a held thread, the holder's own poll interval
    (a message added straight after its last pickup waits one whole poll), and Coop's
    time from its add (fact 2) to the receipt (fact 3) with `coop serve` watching."""
    thread_id = world.thread("Coop bench: held")
    holder = world.holder(thread_id)
    adder = AppServer(world.codex, world.env, world.project)
    rollout = rollout_of(world.home, thread_id)
    polls: list[float] = []
    try:
        for index in range(samples + 1):
            size = rollout.stat().st_size
            client_id = f"bench-poll-{index}"
            params = {"threadId": thread_id, "clientUserMessageId": client_id,
                      "input": [{"type": "text", "text": f"poll {index}"}]}  # fmt: skip
            added = time.monotonic()
            adder.request("thread/queue/add", params)
            deadline = added + WAIT
            while client_id not in rollout.read_bytes()[size:].decode(errors="replace"):
                if time.monotonic() > deadline:
                    raise RuntimeError("the holder never picked the message up")
                time.sleep(0.02)
            if index:  # the first waits for a poll at an unknown phase
                polls.append(time.monotonic() - added)
            while b"task_complete" not in rollout.read_bytes()[size:]:
                time.sleep(0.02)
        serve = world.coop_popen("serve", "--interval", "30")
        coop: list[float] = []
        try:
            for index in range(samples):
                todo = world.todo(f"Bench todo {index}")
                outbox_id = world.invite(todo, thread_id)
                row = world.tick_until_seen(outbox_id)
                coop.append(seconds(row["facts"]["received"]) - seconds(row["facts"]["transport"]))
                # Its work envelope follows into the same queue: let it through first, so
                # the next sample does not wait behind it.
                world.tick_until_seen(world.work_of(todo))
        finally:
            os.killpg(serve.pid, signal.SIGTERM)
            serve.wait(30)
    finally:
        adder.close()
        holder.close()
    return {"poll_intervals": polls, "add_to_receipt": coop}


SCENARIOS = {
    "held": held,
    "unheld": unheld,
    "refused": refused,
    "killed_holder": killed_holder,
    "killed_coop": killed_coop,
}


def main() -> int:
    parser = driver_arguments(__doc__)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args()
    enter_namespace(args.netns_file)
    world = World(args.codex, args.root, args.repo)
    result: dict[str, Any] = {}
    chosen = {**SCENARIOS, "receipt_bench": receipt_bench}
    for name in args.scenarios.split(","):
        try:
            result[name] = chosen[name](world)
        except Exception as error:  # noqa: BLE001 - recorded, the test names it
            result[name] = {"error": f"{type(error).__name__}: {error}"}
    world.server.shutdown()
    write_result(args.result, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
