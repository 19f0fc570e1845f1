"""Shared pieces of the benchmarks: timing, the report line, a registry of live chats.

Every benchmark compares two ways of doing one job in the same run and prints
`BENCH name=<name> ratio=<x> ...`; none asserts a wall-clock time.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


# `coop serve` that writes one line per Mac's pass to the file named by argv[1].
COUNTING_SERVE = """
import sys
from coop_engine.cli.main import main
from coop_engine.loop.coordinator import Coordinator

passes, pass_mac = open(sys.argv[1], "a", buffering=1), Coordinator.pass_mac

def counted(self, name, *args, **kwargs):
    passes.write(name + "\\n")
    return pass_mac(self, name, *args, **kwargs)

Coordinator.pass_mac = counted
sys.exit(main(["serve"]))
"""


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system) a live process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def median_seconds(job: Callable[[], Any], repeat: int = 7, warmup: int = 1) -> float:
    for _ in range(warmup):
        job()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        job()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def alternating_medians(*jobs: Callable[[], Any], repeat: int = 15) -> tuple[float, ...]:
    """The median seconds of each job, run in turns after one warm-up of each: a machine
    that grows busier halfway weighs on all of them alike."""
    for job in jobs:
        job()
    times: list[list[float]] = [[] for _ in jobs]
    for _ in range(repeat):
        for taken, run in zip(times, jobs, strict=True):
            start = time.perf_counter()
            run()
            taken.append(time.perf_counter() - start)
    return tuple(statistics.median(taken) for taken in times)


def report(
    name: str,
    ratio: float,
    minimum: float | None = None,
    maximum: float | None = None,
    **fields: Any,
) -> bool:
    """Print the BENCH line; returns whether the ratio meets its bound. A line with
    neither bound is a figure reported beside a bounded one: it prints no `bound=`."""
    parts = [f"BENCH name={name}", f"ratio={ratio:.2f}"]
    parts += [
        f"{key}={value:.4g}" if isinstance(value, float) else f"{key}={value}"
        for key, value in fields.items()
    ]
    if minimum is None and maximum is None:
        print(" ".join(parts), flush=True)
        return True
    ok = (minimum is None or ratio >= minimum) and (maximum is None or ratio <= maximum)
    bound = f">={minimum}" if minimum is not None else f"<={maximum}"
    parts.append(f"bound={bound} {'ok' if ok else 'MISSED'}")
    print(" ".join(parts), flush=True)
    return ok


def turn_lines(session_id: str, size: int) -> str:
    """About `size` bytes of a turn as a transcript records it: tool calls and their
    results, none of which records a permission mode."""
    call = {
        "type": "assistant",
        "sessionId": session_id,
        "message": {"content": [{"type": "tool_use", "name": "Read", "input": {"x": "r" * 600}}]},
    }
    result = {
        "type": "user",
        "sessionId": session_id,
        "message": {"content": [{"type": "tool_result", "content": "line of a file\n" * 180}]},
    }
    pair = json.dumps(call) + "\n" + json.dumps(result) + "\n"
    return pair * (size // len(pair))


class LiveRegistry:
    """N live processes registered as Claude chats in a config dir, each with a private
    inbox socket bound by this process and a transcript: its recorded mode, then
    `turn_bytes` of a turn's tool calls and results (none: a chat between turns)."""

    def __init__(self, count: int, config: Path | None = None, turn_bytes: int = 0) -> None:
        self.turn_bytes = turn_bytes
        self.root = Path(tempfile.mkdtemp(prefix="bench", dir="/tmp"))
        self.config = config or self.root / "claude"
        sockets = self.root / "s"
        sockets.mkdir(mode=0o700)
        self.processes = [subprocess.Popen(["sleep", "3600"]) for _ in range(count)]
        self.servers = []
        self.sockets: list[Path] = []
        for process in self.processes:
            path = sockets / f"{process.pid}.sock"
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(str(path))
            os.chmod(path, 0o600)
            self.servers.append(server)
            self.sockets.append(path)
        self.register(self.config)

    def register(self, config: Path) -> None:
        """Register every process as a chat in `config` (a new session id each): called
        again with another folder, the same live processes are another simulated Mac's
        chats (that Mac's helper reads its own registry; the processes are this machine's)."""
        (config / "sessions").mkdir(parents=True, exist_ok=True)
        project = config / "projects" / "-tmp"
        project.mkdir(parents=True, exist_ok=True)
        for process, path in zip(self.processes, self.sockets, strict=True):
            session_id = str(uuid.uuid4())
            stat = Path(f"/proc/{process.pid}/stat").read_text()
            entry = {
                "pid": process.pid,
                "sessionId": session_id,
                "cwd": "/tmp",
                "startedAt": int(time.time() * 1000),
                "procStart": stat.rpartition(")")[2].split()[19],
                "version": "2.1.328",
                "peerProtocol": 1,
                "kind": "interactive",
                "entrypoint": "cli",
                "name": f"worker-{process.pid}",
                "nameSource": "user",
                "messagingSocketPath": str(path),
                "status": "idle",
                "updatedAt": int(time.time() * 1000),
            }
            (config / "sessions" / f"{process.pid}.json").write_text(json.dumps(entry))
            mode = {"type": "permission-mode", "permissionMode": "auto", "sessionId": session_id}
            (project / f"{session_id}.jsonl").write_text(
                json.dumps(mode) + "\n" + turn_lines(session_id, self.turn_bytes)
            )

    def close(self) -> None:
        for process in self.processes:
            process.kill()
        for process in self.processes:
            process.wait()
        for server in self.servers:
            server.close()


def run_main(benchmarks: list[Callable[[], bool]]) -> None:
    results = [bench() for bench in benchmarks]
    sys.exit(0 if all(results) else 1)
