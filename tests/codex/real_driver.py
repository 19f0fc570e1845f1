"""Drive the real Codex CLI 0.171.0 offline; run inside ``unshare -n`` by real_codex.py.

    python real_driver.py --codex BIN --root DIR --repo REPO --result FILE --netns-file F

In the loopback-only namespace it brings ``lo`` up, serves the scripted Responses API
(model_server.py) on 127.0.0.1, writes ``CODEX_HOME/config.toml`` pointing a
``[model_providers.coop]`` at it, then does what a user and the apps would:

1. ``codex exec --skip-git-repo-check --json PROMPT`` four times (threads A, B, C, D;
   D under a ``TZ`` whose local date differs from the UTC date);
2. names A twice through the app-server's ``thread/name/set`` (the CLI has no rename
   subcommand; the TUI's ``/rename`` and the Desktop app go through the app-server);
3. ``codex archive B``;
4. compresses C's rollout with the app-server's experimental ``rollout/compress``
   (feature ``local_thread_store_compression``), after ageing the file;
5. while that app-server still holds the state database open, asks Codex's own
   ``thread/list`` (active and archived, every source kind) and Coop's
   ``hosts.mac.codex.thread_list`` for the same home.

Everything observed is written to ``--result`` as one JSON object. Every process it
starts is stopped before it exits.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

sys.path.insert(0, str(Path(__file__).resolve().parent))
from model_server import ModelServer  # noqa: E402  (a sibling file, not a package)

API_KEY = "sk-coop-offline-test-0000000000000000"
SOURCE_KINDS = [
    "cli",
    "vscode",
    "exec",
    "appServer",
    "subAgent",
    "subAgentReview",
    "subAgentCompact",
    "subAgentThreadSpawn",
    "subAgentOther",
    "unknown",
]
REPLY_TIMEOUT = 20.0
AGED = 40 * 86400  # compression only takes rollouts this old


class AppServer:
    """``codex app-server`` over stdio: JSON-RPC lines, one request at a time."""

    def __init__(self, codex: str, env: dict[str, str], cwd: Path, *extra: str) -> None:
        self.errors = open(cwd.parent / "app-server.err", "a")  # noqa: SIM115
        self.proc = subprocess.Popen(
            [codex, *extra, "app-server"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.errors,
            text=True,
            env=env,
            cwd=cwd,
        )
        self.lines: queue.Queue[str] = queue.Queue()
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()
        self.next_id = 0
        self.request(
            "initialize",
            {
                "clientInfo": {"name": "coop_test", "version": "0.0.0"},
                "capabilities": {"experimentalApi": True},
            },
        )
        self._send({"method": "initialized"})

    def _read(self, stream: TextIO) -> None:
        for line in stream:
            self.lines.put(line)

    def _send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of one request; raises RuntimeError on an error answer."""
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        deadline = time.monotonic() + REPLY_TIMEOUT
        while True:
            line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            message = json.loads(line)
            if message.get("id") != self.next_id or "method" in message:
                continue  # a notification or a request of the server's own
            if "error" in message:
                raise RuntimeError(f"{method}: {message['error']}")
            return message.get("result")

    def list_threads(self, archived: bool) -> list[dict[str, Any]]:
        """Codex's own thread list, every page."""
        threads: list[dict[str, Any]] = []
        cursor = None
        while True:
            params = {"sourceKinds": SOURCE_KINDS, "archived": archived, "cursor": cursor}
            page = self.request("thread/list", params)
            threads += page["data"]
            cursor = page.get("nextCursor")
            if not cursor:
                return threads

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.errors.close()


def exec_thread(codex: str, env: dict[str, str], cwd: Path, prompt: str) -> dict[str, Any]:
    """One ``codex exec --json`` run: its exit status and its first output line."""
    done = subprocess.run(
        [codex, "exec", "--skip-git-repo-check", "--json", prompt],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {
        "returncode": done.returncode,
        "first": lines[0] if lines else None,
        "types": [line.get("type") for line in lines],
        "stderr": done.stderr[-2000:],
    }


def config_toml(port: int) -> str:
    # analytics off: its exporter's DNS lookup would stall each exit by ~5 s offline.
    return (
        'model = "coop-test-model"\n'
        'model_provider = "coop"\n'
        "check_for_update_on_startup = false\n"
        "\n[analytics]\nenabled = false\n"
        "\n[model_providers.coop]\n"
        'name = "Coop offline test"\n'
        f'base_url = "http://127.0.0.1:{port}/v1"\n'
        'env_key = "OPENAI_API_KEY"\n'
        'wire_api = "responses"\n'
    )


def local_offset_hours() -> int:
    """A UTC offset whose local date differs from today's UTC date right now."""
    return 14 if datetime.now(UTC).hour >= 10 else -12


def rollout_files(home: Path, pattern: str = "rollout-*.jsonl*") -> list[Path]:
    """The rollouts under CODEX_HOME named by `pattern`, sought only where Codex keeps
    them: the rest of its home (`.tmp/.staging/...`) comes and goes under a walk."""
    folders = (home / "sessions", home / "archived_sessions")
    return sorted(path for folder in folders for path in folder.glob(f"**/{pattern}"))


def rollout_of(home: Path, thread_id: str) -> Path:
    found = rollout_files(home, f"rollout-*-{thread_id}.jsonl*")
    if not found:
        raise RuntimeError(f"no rollout for {thread_id}")
    return found[0]


def drive(codex: str, root: Path, repo: Path) -> dict[str, Any]:
    """Steps 1 to 5 of the module's docstring; returns what was observed."""
    home, project = root / "codex-home", root / "project"
    for folder in (home, project, root / "home"):
        folder.mkdir(parents=True, exist_ok=True)
    server = ModelServer(root / "model.log")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    (home / "config.toml").write_text(config_toml(server.server_address[1]))
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(root / "home"),
        "CODEX_HOME": str(home),
        "OPENAI_API_KEY": API_KEY,
        "LANG": "C.UTF-8",
    }
    out: dict[str, Any] = {"codex_home": str(home), "project": str(project)}
    runs = {}
    for key in "ABC":
        runs[key] = exec_thread(codex, env, project, f"Coop test thread {key}")
    hours = local_offset_hours()
    # POSIX TZ strings count west as positive: "<+14>-14" is UTC+14.
    tz = f"<{hours:+03d}>{-hours:+d}"
    runs["D"] = exec_thread(codex, {**env, "TZ": tz}, project, "Coop test thread D")
    out.update(runs=runs, tz=tz, tz_offset_hours=hours)
    ids: dict[str, str] = {}
    for key, run in runs.items():
        if not isinstance((run["first"] or {}).get("thread_id"), str):
            raise RuntimeError(f"codex exec {key} printed no thread id: {run}")
        ids[key] = run["first"]["thread_id"]
    out["ids"] = ids

    app = AppServer(codex, env, project)
    try:
        app.request("thread/name/set", {"threadId": ids["A"], "name": "first name"})
        app.request("thread/name/set", {"threadId": ids["A"], "name": "coop-named"})
    finally:
        app.close()

    done = subprocess.run(
        [codex, "archive", ids["B"]],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=env,
        cwd=project,
        timeout=60,
    )
    out["archive"] = {"returncode": done.returncode, "stdout": done.stdout.strip()}

    aged = rollout_of(home, ids["C"])
    old = time.time() - AGED
    os.utime(aged, (old, old))
    app = AppServer(codex, env, project, "--enable", "local_thread_store_compression")
    try:
        app.request("rollout/compress", {})
        deadline = time.monotonic() + 15
        while not rollout_of(home, ids["C"]).name.endswith(".zst"):
            if time.monotonic() > deadline:
                break
            time.sleep(0.1)
        out["compressed_path"] = str(rollout_of(home, ids["C"]))
        out["codex_active"] = app.list_threads(archived=False)
        out["codex_archived"] = app.list_threads(archived=True)
        # Coop's reading while Codex holds the WAL database open and may write to it.
        sys.path.insert(0, str(repo))
        from hosts.mac.codex import find_thread, thread_list

        out["coop_while_open"] = thread_list(home)
        out["find_while_open"] = {key: find_thread(home, tid) for key, tid in ids.items()}
        out["wal_while_open"] = (home / "state_5.sqlite-wal").exists()
    finally:
        app.close()
    server.shutdown()
    out["model_requests"] = sum(1 for _ in (root / "model.log").open())
    return out


def driver_arguments(doc: str | None, netns_required: bool = True) -> argparse.ArgumentParser:
    """The arguments every driver takes (real_codex.run_driver passes them); a driver
    adds its own before parsing."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument("--codex", required=True)
    parser.add_argument("--root", required=True, type=Path)
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--result", required=True, type=Path)
    parser.add_argument("--netns-file", required=netns_required, type=Path)
    return parser


def enter_namespace(netns_file: Path | None) -> None:
    """Bring `lo` up; name the namespace so the harness can kill, by pid, whatever is
    left in it when the driver is done."""
    if netns_file is not None:
        netns_file.write_text(os.readlink("/proc/self/ns/net"))
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def write_result(path: Path, result: dict[str, Any]) -> None:
    """The driver's findings, written whole or not at all."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(result))
    tmp.replace(path)


def main() -> int:
    args = driver_arguments(__doc__).parse_args()
    enter_namespace(args.netns_file)
    write_result(args.result, drive(args.codex, args.root, args.repo))
    return 0


if __name__ == "__main__":
    sys.exit(main())
