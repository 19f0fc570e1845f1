"""Walk Codex's queue door on the real Codex CLI 0.171.0, or the same steps on the simulator.

    python queue_driver.py --codex BIN --root DIR --repo REPO --result FILE --netns-file F
    python queue_driver.py --sim --codex hosts/sim/bin/codex --root DIR --repo REPO --result FILE

Real: run inside ``unshare -n`` by ``real_codex.run_driver``; it brings ``lo`` up and
serves the scripted model (model_server.py) as real_driver.py does. Threads come from
``codex exec``, the archive from ``codex archive``, and the holder is a second
``codex app-server`` that did ``thread/resume``. ``--sim``: threads and the archive come
from ``python -m hosts.sim codex``, the holder is ``python -m hosts.sim codex-holder``.

The steps, each observation recorded in ``--result`` (thread and item ids replaced by
``<A>``, ``<B>``, ``<unknown>``, ``<item>``):

1. threads A and B; B archived;
2. an app-server initialized without ``experimentalApi`` tries ``thread/queue/add``;
3. one initialized with it adds an item to A, reads ``queue_1.sqlite`` (schema, row),
   lists, deletes twice; adds one client id twice; is refused bad, unknown and
   archived ids and an unknown method;
4. ``codex queue`` queues a message (and is refused an archived and an unknown thread,
   and a missing ``--message``), next to an invitation added with ``thread/queue/add``;
5. a holder takes A: the two queued messages become two turns (their rollout lines are
   recorded); while it holds, the lock file and its FLOCK, and ``thread/resume`` and
   ``turn/start`` from the first app-server; then a message the model never answers
   (``COOP-STALL``): the lines of a hung turn; then the holder stops: the lock file.
"""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import model_server  # noqa: E402  (sibling files, not a package)
from real_driver import (  # noqa: E402
    API_KEY,
    AppServer,
    config_toml,
    driver_arguments,
    enter_namespace,
    exec_thread,
    rollout_of,
    write_result,
)

WAIT = 60.0  # seconds: bounds a wait; the real holder takes a queue at once on resume
UNKNOWN_ID = "01990000-0000-7000-8000-000000000000"
INVITATION = (
    "Would you take todo 7?\n"
    "To take it, end your reply with: COOP_ACCEPT n0nce42\n"
    "To pass, end your reply with: COOP_DECLINE n0nce42"
)
STALL = getattr(model_server, "STALL", None)  # a prompt the scripted model never answers
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Rpc(AppServer):
    """An AppServer that also returns error answers whole, and can initialize without
    the experimental capability."""

    def __init__(self, codex: str, env: dict[str, str], cwd: Path, experimental: bool) -> None:
        self.experimental = experimental
        self.init_result: Any = None
        super().__init__(codex, env, cwd)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        if method == "initialize" and not self.experimental:
            params = {"clientInfo": params["clientInfo"]}
        result = super().request(method, params)
        if method == "initialize":
            self.init_result = result
        return result

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The answer's ``result`` or ``error`` part, as ``{"result": ...}`` or
        ``{"error": ...}``."""
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + WAIT
        while True:
            message = json.loads(self.lines.get(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self.next_id and "method" not in message:
                return {key: message[key] for key in ("result", "error") if key in message}


class Held:
    """A process holding a thread open: its pid and how to stop it cleanly."""

    def __init__(self, pid: int, stop: Callable[[], None]) -> None:
        self.pid, self.stop = pid, stop


class Codex:
    """The real Codex's ways of making threads, archiving and holding."""

    def __init__(self, codex: str, root: Path, env: dict[str, str]) -> None:
        self.codex, self.root, self.env = codex, root, env
        self.home, self.project = Path(env["CODEX_HOME"]), root / "project"

    def thread(self, prompt: str) -> str:
        run = exec_thread(self.codex, self.env, self.project, prompt)
        return str(run["first"]["thread_id"])

    def archive(self, thread_id: str) -> None:
        self.run(self.codex, "archive", thread_id)

    def hold(self, thread_id: str) -> Held:
        holder = Rpc(self.codex, self.env, self.project, experimental=True)
        holder.request("thread/resume", {"threadId": thread_id})
        return Held(holder.proc.pid, holder.close)

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            env=self.env,
            cwd=self.project,
            timeout=WAIT,
        )


class SimCodex(Codex):
    """The simulator's ways: ``python -m hosts.sim codex`` and ``codex-holder``."""

    def __init__(self, codex: str, root: Path, env: dict[str, str], repo: Path) -> None:
        super().__init__(codex, root, env)
        self.repo = repo

    def sim(self, *args: str) -> dict[str, Any]:
        argv = [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(self.home)]
        done = subprocess.run(
            [*argv, *args], capture_output=True, text=True, cwd=self.repo, timeout=WAIT, check=True
        )
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    def thread(self, prompt: str) -> str:
        return str(self.sim("--cwd", str(self.project))["thread_id"])

    def archive(self, thread_id: str) -> None:
        self.sim("--archive", thread_id)

    def hold(self, thread_id: str) -> Held:
        ready = self.root / f"holder-{thread_id}.ready"
        argv = [sys.executable, "-m", "hosts.sim", "codex-holder", "--codex-home", str(self.home)]
        argv += ["--thread", thread_id, "--poll", "0.2", "--ready-file", str(ready)]
        process = subprocess.Popen(argv, cwd=self.repo)
        wait_until(lambda: ready.exists() or process.poll() is not None, "the holder")

        def stop() -> None:
            process.send_signal(signal.SIGTERM)
            process.wait(timeout=WAIT)

        return Held(process.pid, stop)


def wait_until(check: Callable[[], Any], what: str) -> Any:
    deadline = time.monotonic() + WAIT
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.05)
    raise RuntimeError(f"gave up waiting for {what}")


class Names:
    """Replaces the run's ids by stable names, so two runs compare."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {UNKNOWN_ID: "<unknown>"}

    def name(self, value: str, as_name: str) -> None:
        self.names[value] = as_name

    def __call__(self, value: Any) -> Any:
        if isinstance(value, str):
            return UUID.sub(lambda m: self.names.get(m.group(0), "<uuid>"), value)
        if isinstance(value, list):
            return [self(item) for item in value]
        if isinstance(value, dict):
            return {key: self(item) for key, item in value.items()}
        return value


def queue_db(home: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{home / 'queue_1.sqlite'}?mode=ro", uri=True)


def rows(home: Path, thread_id: str) -> list[dict[str, Any]]:
    conn = queue_db(home)
    conn.row_factory = sqlite3.Row
    try:
        found = conn.execute(
            "SELECT * FROM queued_items WHERE thread_id = ? ORDER BY queue_order", (thread_id,)
        )
        return [dict(row) for row in found]
    finally:
        conn.close()


def schema(home: Path) -> dict[str, Any]:
    conn = queue_db(home)
    try:
        master = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
        columns = conn.execute("PRAGMA table_info(queued_items)").fetchall()
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        conn.close()
    return {"master": sorted(master, key=str), "columns": columns, "journal_mode": mode}


def add(app: Rpc, thread_id: str, client_id: str, text: str) -> dict[str, Any]:
    part = {"type": "text", "text": text, "text_elements": []}
    params = {"threadId": thread_id, "clientUserMessageId": client_id, "input": [part]}
    return app.call("thread/queue/add", params)


def lock_state(home: Path, pid: int | None) -> dict[str, Any]:
    """The lock folder's files, and whether ``pid`` holds an FLOCK on each."""
    folder = home / "thread-writer-locks"
    files = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    locks = Path("/proc/locks").read_text().splitlines()
    held = []
    for name in files:
        inode = os.stat(folder / name).st_ino
        for line in locks:
            fields = line.split()
            if "->" not in fields and fields[1] == "FLOCK" and fields[3] == "WRITE":
                if fields[4] == str(pid) and fields[5].endswith(f":{inode}"):
                    held.append(name)
    return {"files": files, "flock_held": held}


def cli(codex: Codex, *args: str) -> dict[str, Any]:
    """A ``codex`` command's status and output (the environment's warnings left out)."""
    done = codex.run(codex.codex, *args)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("WARNING:")]
    return {"returncode": done.returncode, "stdout": done.stdout, "stderr": errors}


def steps_1_to_3(codex: Codex, names: Names, out: dict[str, Any]) -> tuple[str, str, Rpc]:
    a, b = codex.thread("Coop queue thread A"), codex.thread("Coop queue thread B")
    names.name(a, "<A>")
    names.name(b, "<B>")
    codex.archive(b)
    bare = Rpc(codex.codex, codex.env, codex.project, experimental=False)
    out["init"] = bare.init_result
    out["no_capability"] = add(bare, a, "coop-bare", "x")
    bare.close()
    app = Rpc(codex.codex, codex.env, codex.project, experimental=True)
    first = add(app, a, "coop-queue-1", "first")
    item = first["result"]["queuedSubmission"]["id"]
    names.name(item, "<item>")
    out["add"], out["schema"], out["row"] = first, schema(codex.home), rows(codex.home, a)
    out["list"] = app.call("thread/queue/list", {"threadId": a})
    params = {"threadId": a, "queuedSubmissionId": item}
    out["delete"] = [app.call("thread/queue/delete", params) for _ in range(2)]
    dups = [add(app, a, "coop-dup", f"dup {n}")["result"]["queuedSubmission"] for n in (1, 2)]
    out["duplicate_rows"] = [row["queue_order"] for row in rows(codex.home, a)]
    for dup in dups:
        app.call("thread/queue/delete", {"threadId": a, "queuedSubmissionId": dup["id"]})
    out["errors"] = {
        "invalid": add(app, "not-a-uuid", "coop-x", "x"),
        "short": add(app, "01990000", "coop-x", "x"),
        "unknown": add(app, UNKNOWN_ID, "coop-x", "x"),
        "archived": add(app, b, "coop-x", "x"),
        "list_archived": app.call("thread/queue/list", {"threadId": b}),
        "unknown_method": app.call("no/such/method", {}),
        "empty_input": app.call(
            "thread/queue/add", {"threadId": a, "clientUserMessageId": "coop-x", "input": []}
        ),
    }
    return a, b, app


def step_4(codex: Codex, a: str, b: str, app: Rpc, out: dict[str, Any]) -> None:
    out["invitation"] = add(app, a, "coop-queue-2", INVITATION)
    out["cli"] = cli(codex, "queue", "--thread", a, "--message", "via the cli")
    last = rows(codex.home, a)[-1]
    client = json.loads(last["payload_json"])["UserInput"]["client_id"]
    out["cli_row"] = {
        "client_is_uuid": bool(UUID.fullmatch(client)),
        "client_is_row_id": client == last["id"],
        "printed_row_id": f"Queued message {last['id']} " in out["cli"]["stdout"],
    }
    out["cli_client_id"] = client
    out["cli_archived"] = cli(codex, "queue", "--thread", b, "--message", "x")
    out["cli_unknown"] = cli(codex, "queue", "--thread", UNKNOWN_ID, "--message", "x")
    out["cli_no_message"] = cli(codex, "queue", "--thread", a)


def new_lines(path: Path, start: int) -> list[dict[str, Any]]:
    with path.open("rb") as f:
        f.seek(start)
        data = f.read()
    complete = data[: data.rfind(b"\n") + 1]
    return [json.loads(line) for line in complete.splitlines()]


def step_5(codex: Codex, a: str, app: Rpc, out: dict[str, Any]) -> None:
    rollout = rollout_of(codex.home, a)
    start = rollout.stat().st_size
    out["locks_before"] = lock_state(codex.home, None)
    held = codex.hold(a)

    def ended(count: int) -> list[dict[str, Any]] | None:
        lines = new_lines(rollout, start)
        done = [e for e in lines if e["payload"].get("type") == "task_complete"]
        return lines if len(done) >= count else None

    out["turns"] = wait_until(lambda: ended(2), "two queue turns")
    out["rows_after"] = rows(codex.home, a)
    out["locks_held"] = lock_state(codex.home, held.pid)
    out["resume_held"] = app.call("thread/resume", {"threadId": a})
    out["turn_start_held"] = app.call(
        "turn/start", {"threadId": a, "input": [{"type": "text", "text": "x"}]}
    )
    if STALL is not None:
        middle = rollout.stat().st_size
        add(app, a, "coop-stall", f"{STALL}: never answered")

        def user_item() -> list[dict[str, Any]] | None:
            lines = new_lines(rollout, middle)
            return (
                lines if any("client_id" in e["payload"].get("item", {}) for e in lines) else None
            )

        wait_until(user_item, "the stalled turn's user message")
        time.sleep(1.0)  # anything more the holder writes while the model is silent
        out["hung_turn"] = new_lines(rollout, middle)
    before_stop = rollout.stat().st_size
    held.stop()
    out["after_stop"] = new_lines(rollout, before_stop)
    out["locks_after"] = lock_state(codex.home, None)


def drive(codex: Codex) -> dict[str, Any]:
    names = Names()
    out: dict[str, Any] = {}
    a, b, app = steps_1_to_3(codex, names, out)
    try:
        step_4(codex, a, b, app, out)
        names.name(out["cli_client_id"], "<cli-client>")
        step_5(codex, a, app, out)
    finally:
        app.close()
    result: dict[str, Any] = names(out)
    return result


def environment(root: Path, sim: bool) -> dict[str, str]:
    home = root / "codex-home"
    for folder in (home, root / "project", root / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "CODEX_HOME": str(home),
        "LANG": "C.UTF-8",
    }
    if not sim:
        server = model_server.ModelServer(root / "model.log")
        threading.Thread(target=server.serve_forever, daemon=True).start()
        (home / "config.toml").write_text(config_toml(server.server_address[1]))
        env["OPENAI_API_KEY"] = API_KEY
    return env


def main() -> int:
    parser = driver_arguments(__doc__, netns_required=False)
    parser.add_argument("--sim", action="store_true", help="drive the simulator instead")
    args = parser.parse_args()
    if not args.sim:
        enter_namespace(args.netns_file)
    args.codex = str(Path(args.codex).absolute())
    env = environment(args.root, args.sim)
    if args.sim:
        codex: Codex = SimCodex(args.codex, args.root, env, args.repo)
    else:
        codex = Codex(args.codex, args.root, env)
    write_result(args.result, drive(codex))
    return 0


if __name__ == "__main__":
    sys.exit(main())
