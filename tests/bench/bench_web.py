"""Benchmarks of `coop web` (issue 30): web_session_rss and web_idle_cpu.

web_session_rss: a real `coop web` on a fresh home with two browser sessions (two
websockets, spoken as the page speaks), each of which is one app process; the larger
app's resident memory (VmRSS) once both show their panes and have run a few seconds,
against the same app as `coop tui` on a terminal (a pty) on the same home, measured
the same way in the same run. A session costs what the terminal app costs: the ratio
stays near 1 (at most 1.5), and the server itself is counted beside it.

web_idle_cpu: the same `coop web` with no session open, its CPU (utime + stime from
/proc) over a window, as a fraction of one core, against the bound the issue sets: 1%
of a core. The ratio is that fraction over 1%: at most 1.
"""

from __future__ import annotations

import asyncio
import os
import pty
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.common import ROOT, cpu_seconds, report, run_main

sys.path.insert(0, str(ROOT / "tests" / "web"))
from webkit import (  # noqa: E402  (tests/web is not a package: its kit by path)
    Web,
    client,
    coop_web,
    read_until,
    session_headers,
    shows_panes,
)

SESSIONS = 2
SETTLE_SECONDS = 5.0  # after the panes show, before memory is read
IDLE_WINDOW = 20.0
IDLE_BOUND = 0.01  # of a core
MOST_RSS_RATIO = 1.5


def rss_bytes(pid: int) -> int:
    """A live process's resident memory, from /proc/PID/status."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmRSS for {pid}")


async def sessions_rss(web: Web) -> list[int]:
    """Open SESSIONS websockets, wait for each app's panes, let them run, and read the
    resident memory of each app process (one per session)."""
    async with client() as session:
        url = f"ws://127.0.0.1:{web.port}/ws?width=160&height=48"
        streams = [
            await session.ws_connect(url, headers=session_headers(web)) for _ in range(SESSIONS)
        ]
        try:
            for stream in streams:
                seen = bytearray()
                await read_until(stream, seen, lambda seen=seen: shows_panes(seen))
            drained = [asyncio.create_task(_drain(stream)) for stream in streams]
            await asyncio.sleep(SETTLE_SECONDS)
            apps = web.apps()
            assert len(apps) == SESSIONS, f"{len(apps)} app processes for {SESSIONS} sessions"
            sizes = [rss_bytes(pid) for pid in apps]
            for task in drained:
                task.cancel()
            return sizes
        finally:
            for stream in streams:
                await stream.close()


async def _drain(stream: object) -> None:
    """Keep reading a session's stream, as a page does, so its app never waits on us."""
    while True:
        await stream.receive()  # type: ignore[attr-defined]


def terminal_rss(home: Path) -> int:
    """The same app as `coop tui --attach` on a pty of 160x48, after the same settling."""
    import fcntl
    import struct
    import termios

    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 48, 160, 0, 0))
    argv = [sys.executable, "-m", "coop_engine.cli", "--home", str(home), "tui", "--attach"]
    process = subprocess.Popen(
        argv,
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=ROOT,
        env={**os.environ, "TERM": "xterm-256color"},
        start_new_session=True,
    )
    os.close(follower)
    try:
        seen = bytearray()
        deadline = time.monotonic() + 30
        while b"Outbox" not in seen and time.monotonic() < deadline:
            try:
                seen.extend(os.read(leader, 65536))
            except OSError:
                break
        end = time.monotonic() + SETTLE_SECONDS
        while time.monotonic() < end:  # keep reading, as a terminal does
            os.set_blocking(leader, False)
            try:
                os.read(leader, 65536)
            except BlockingIOError:
                time.sleep(0.05)
        return rss_bytes(process.pid)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        os.close(leader)


def bench_web_session_rss() -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-web-") as folder:
        home = Path(folder) / "home"
        with coop_web(home, "--max-sessions", str(SESSIONS)) as web:
            sizes = asyncio.run(sessions_rss(web))
            server = rss_bytes(web.process.pid)
        alone = terminal_rss(home)
    mib = 1024 * 1024
    return report(
        "web_session_rss",
        max(sizes) / alone,
        maximum=MOST_RSS_RATIO,
        session_mib=max(sizes) / mib,
        terminal_app_mib=alone / mib,
        server_mib=server / mib,
        sessions=SESSIONS,
    )


def bench_web_idle_cpu() -> bool:
    with tempfile.TemporaryDirectory(prefix="bench-web-") as folder:
        with coop_web(Path(folder) / "home") as web:
            time.sleep(1.0)  # past start-up
            before, started = cpu_seconds(web.process.pid), time.monotonic()
            time.sleep(IDLE_WINDOW)
            used = cpu_seconds(web.process.pid) - before
            share = used / (time.monotonic() - started)
    return report(
        "web_idle_cpu",
        share / IDLE_BOUND,
        maximum=1.0,
        core_share=share,
        window_s=IDLE_WINDOW,
    )


if __name__ == "__main__":
    run_main([bench_web_session_rss, bench_web_idle_cpu])
