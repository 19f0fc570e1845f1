"""Benchmarks of the Claude door: registry_scan, discovery, transcript_find, cli_list (from
this checkout's venv and from a wheel installed into a fresh one)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hosts.mac import native, transcripts
from hosts.mac.local import LocalHost
from hosts.mac.platforms import LinuxPlatform, MacPlatform
from tests.bench.common import (
    ROOT,
    LiveRegistry,
    alternating_medians,
    median_seconds,
    report,
    run_main,
)

CHATS = 200


class OnePsPerChat(MacPlatform):
    """What the seeds describe: `ps` run once for every registered chat."""

    def births(self, pids):  # type: ignore[no-untyped-def]
        found = {}
        for pid in pids:
            found.update(MacPlatform.births(self, [pid]))
        return found


def registry_scan() -> bool:
    registry = LiveRegistry(CHATS)
    try:
        per_chat = median_seconds(
            lambda: native.scan_registry(registry.config, OnePsPerChat()), repeat=3
        )
        batched_ps = median_seconds(
            lambda: native.scan_registry(registry.config, MacPlatform()), repeat=5
        )
        proc = median_seconds(
            lambda: native.scan_registry(registry.config, LinuxPlatform()), repeat=9
        )
        assert all(e.live for e in native.scan_registry(registry.config, LinuxPlatform()).entries)
        assert all(e.live for e in native.scan_registry(registry.config, MacPlatform()).entries)
    finally:
        registry.close()
    report(
        "registry_scan_mac",
        per_chat / batched_ps,
        minimum=20,
        chats=CHATS,
        per_chat_ms=per_chat * 1000,
        one_ps_ms=batched_ps * 1000,
    )
    return report(
        "registry_scan",
        per_chat / proc,
        minimum=20,
        chats=CHATS,
        per_chat_ms=per_chat * 1000,
        batched_ms=proc * 1000,
    )


def peer_style_discovery(config: Path) -> list[dict[str, Any]]:
    """The live chats as a peer-listing tool finds them: one `ps` for every process's pid
    and start time, then each registry file read and `json.loads`'d, kept when its pid
    is running (seeds 000 and 003 read the registry this way)."""
    listed = subprocess.run(
        ["ps", "-eo", "pid=,lstart="], capture_output=True, text=True, check=True
    ).stdout
    running = {
        int(pid) for pid, _, _ in (line.strip().partition(" ") for line in listed.splitlines())
    }
    live = []
    for path in (config / "sessions").glob("*.json"):
        entry = json.loads(path.read_text())
        if entry.get("pid") in running:
            live.append(entry)
    return live


def discovery() -> bool:
    """Coop's discovery of a Mac's chats (LocalHost.chats: the registry, each chat's live
    process and its birth, its private socket) against the peer-style listing, both at
    CHATS chats in the same run. `with_policy_codex_ms` is what `coop chats` asks of a
    Mac besides (each chat's predicted inbound verdict, the Codex threads), which the
    peer-style listing does not do; `mac_one_ps_ms` is the registry scan with the Mac's
    one `ps` instead of /proc."""
    registry = LiveRegistry(CHATS)
    host = LocalHost("office", config_dir=registry.config)
    try:
        found = host.chats()["chats"]
        assert sum(chat["live"] for chat in found) == CHATS
        assert len(peer_style_discovery(registry.config)) == CHATS
        peer = median_seconds(lambda: peer_style_discovery(registry.config), repeat=9)
        coop = median_seconds(host.chats, repeat=9)
        full = median_seconds(lambda: host.chats(with_policy=True, codex=True), repeat=9)
        mac = median_seconds(lambda: native.scan_registry(registry.config, MacPlatform()), repeat=5)
    finally:
        host.close()
        registry.close()
    return report(
        "discovery",
        coop / peer,
        maximum=0.5,
        chats=CHATS,
        coop_ms=coop * 1000,
        peer_style_ms=peer * 1000,
        with_policy_codex_ms=full * 1000,
        with_policy_codex_ratio=full / peer,
        mac_one_ps_ms=mac * 1000,
    )


def _transcript_lines(count: int) -> list[bytes]:
    """Lines shaped like a working chat's: assistant tool calls with usage, tool results."""
    session = str(uuid.uuid4())
    lines = []
    for index in range(count):
        common = {
            "parentUuid": str(uuid.uuid4()),
            "isSidechain": False,
            "userType": "external",
            "cwd": "/Users/dad/src/coop",
            "sessionId": session,
            "version": "2.1.328",
            "gitBranch": "main",
            "uuid": str(uuid.uuid4()),
            "timestamp": "2026-11-29T20:50:00.000Z",
        }
        if index % 2 == 0:
            entry = {
                **common,
                "type": "assistant",
                "requestId": f"req_{index}",
                "message": {
                    "id": f"msg_{index}",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-opus-4-5",
                    "content": [
                        {
                            "type": "text",
                            "text": "Let me look at the failing test and the importer. " * 4,
                        },
                        {
                            "type": "tool_use",
                            "id": f"toolu_{index}",
                            "name": "Bash",
                            "input": {
                                "command": f"pytest -q tests/test_import_{index}.py",
                                "timeout": 120000,
                            },
                        },
                    ],
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 1200 + index,
                        "cache_creation_input_tokens": 0,
                        "cache_read_input_tokens": 53000,
                        "output_tokens": 240,
                        "service_tier": "standard",
                    },
                },
            }
        else:
            output = "\n".join(
                f"tests/test_import_{index}.py::test_case_{n} PASSED" for n in range(20)
            )
            entry = {
                **common,
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "tool_use_id": f"toolu_{index - 1}",
                            "type": "tool_result",
                            "content": output,
                            "is_error": False,
                        },
                    ],
                },
                "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
            }
        lines.append(json.dumps(entry).encode() + b"\n")
    return lines


def transcript_find() -> bool:
    target = Path(tempfile.mkdtemp(prefix="bench", dir="/tmp")) / "big.jsonl"
    outbox_id = str(uuid.uuid4())
    block = b"".join(_transcript_lines(1000))
    size = 500 << 20
    with open(target, "wb") as out:
        written = 0
        while written < size:
            out.write(block)
            written += len(block)
        out.write(
            json.dumps(
                {
                    "type": "user",
                    "isMeta": True,
                    "origin": {"kind": "peer", "from": "cwkCoop", "msg_id": outbox_id},
                }
            ).encode()
            + b"\n"
        )
    megabytes = target.stat().st_size / (1 << 20)

    def bytes_first() -> None:
        chunk = transcripts.scan_for(target, 0, [outbox_id.encode()])
        assert len(chunk.lines) == 1

    def parse_every_line() -> None:
        found = 0
        with open(target, "rb") as handle:
            for raw in handle:
                entry = json.loads(raw)
                if (entry.get("origin") or {}).get("msg_id") == outbox_id:
                    found += 1
        assert found == 1

    try:
        scan = median_seconds(bytes_first, repeat=3)
        parse = median_seconds(parse_every_line, repeat=1, warmup=0)
    finally:
        target.unlink()
    return report(
        "transcript_find",
        parse / scan,
        minimum=5,
        megabytes=round(megabytes),
        scan_mb_s=megabytes / scan,
        parse_mb_s=megabytes / parse,
    )


def _cli_list(
    name: str, bin_dir: Path, maximum: float | None, turn_bytes: int = 0, floor: bool = True
) -> bool:
    """`coop chats --json` at 200 chats against `python -c pass`, both from `bin_dir`:
    what a person waits for on every call, beside what any Python program waits for.
    Beside them (`floor`), tests/bench/listing_floor.py: the least a Python program pays
    to read and print what the listing reads, with no checks and no modules of its own.
    Its ratio says how near the bound any listing in Python can come on this machine."""
    registry = LiveRegistry(CHATS, turn_bytes=turn_bytes)
    env = {
        **os.environ,
        "CLAUDE_CONFIG_DIR": str(registry.config),
        "COOP_HOME": str(registry.root / "home"),
    }
    # As a user runs it: with every module's bytecode cached (the warm-up run writes any
    # that is stale). With PYTHONDONTWRITEBYTECODE set, as in some shells, a module edited
    # since the last compileall would be compiled again on every timed run, and the line
    # would time the compiler.
    env.pop("PYTHONDONTWRITEBYTECODE", None)

    listed = registry.root / "listed.json"

    def printed(argv: list[str]) -> Callable[[], None]:
        def run() -> None:
            # Into a file, as `coop chats --json > file` would: the time is the
            # command's, not the benchmark's own reading and parsing of what it printed.
            with listed.open("wb") as out:
                subprocess.run(argv, stdout=out, env=env, cwd=ROOT, check=True)

        return run

    listers = [printed([str(bin_dir / "coop"), "chats", "--json"])]
    if floor:
        listers.append(printed([str(bin_dir / "python"), "-m", "tests.bench.listing_floor"]))
    bare = printed([str(bin_dir / "python"), "-c", "pass"])

    try:
        for run in listers:  # the warm-ups, and the proof that each lists every chat
            run()
            assert len(json.loads(listed.read_bytes())) == CHATS
        *times, python = alternating_medians(*listers, bare, repeat=15)
    finally:
        registry.close()
    chats, *least = times
    fields = {}
    if least:
        fields = {"floor_ms": least[0] * 1000, "floor_ratio": round(least[0] / python, 2)}
    return report(
        name,
        chats / python,
        maximum=maximum,
        chats=CHATS,
        coop_chats_ms=chats * 1000,
        python_pass_ms=python * 1000,
        **fields,
    )


def cli_list() -> bool:
    """From this checkout's venv, an editable install, as `make demo` leaves it: its
    finder (about 12 ms, pathlib and re with it) runs in both. Bound: 1.6x."""
    return _cli_list("cli_list", Path(sys.executable).parent, maximum=1.6)


def cli_list_working() -> bool:
    """As cli_list, with every chat in the middle of a turn: 300 KB of tool calls and
    results since its transcript last recorded a mode (a prompt records it; a turn's tool
    output does not). Each listing looks back through them to the mode, in windows that
    grow fourfold (hosts/mac/transcripts.py newest_line): 300 KB of each of 200
    transcripts. (Reading the last 256 KB whole and splitting it into lines once cost
    48 ms, three times the rest of the listing; and stopping at 256 KB missed the mode.)
    Reported: the ratio beside cli_list's says what a working fleet adds. No floor here:
    through 300 KB, the growing windows, each searched while it is in the CPU's cache,
    beat the floor's one read of the whole tail, which is then no floor."""
    return _cli_list(
        "cli_list_working",
        Path(sys.executable).parent,
        maximum=None,
        turn_bytes=300 << 10,
        floor=False,
    )


def cli_list_installed() -> bool:
    """As `pipx install` would leave Coop: a wheel built from this checkout, installed
    (not editable) with its dependencies into a fresh venv. The wheel is built from a
    copy of the sources (setuptools would leave build/ in the checkout, and a stale
    file there would ship); each dependency is built into a wheel first, from the index
    or pip's cache, and the venv installs from those wheels alone.

    Reported, not bounded: this venv's `python -c pass` loads no editable finder (about
    10 ms, where the editable venv's takes 22), so what the finder would have loaded
    (pathlib, re, fnmatch, urllib.parse) counts on Coop's side, and 1.6x would leave
    Coop 6 ms for its imports and 200 chats: about what the system calls alone take
    (each chat's entry, /proc stat and cmdline, socket and transcript). The line gives
    the ratio and both times; the bound is on the editable line, whose start-up both of
    its commands share."""
    with tempfile.TemporaryDirectory(prefix="bench-installed") as scratch_dir:
        scratch = Path(scratch_dir)
        source, wheels, venv = scratch / "source", scratch / "wheels", scratch / "venv"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy(ROOT / name, source / name)
        for package in ("coop_engine", "coop_tui", "hosts"):
            ignored = shutil.ignore_patterns("__pycache__")
            shutil.copytree(ROOT / package, source / package, ignore=ignored)
        _quietly([sys.executable, "-m", "pip", "wheel", "-q", "-w", wheels, source], scratch)
        _quietly([sys.executable, "-m", "venv", venv], scratch)
        python = str(venv / "bin" / "python")
        pip = [python, "-m", "pip", "install", "-q", "--no-index", "--find-links", wheels]
        _quietly([*pip, "coop"], scratch)
        where = _quietly([python, "-c", "import coop_engine; print(coop_engine.__file__)"], scratch)
        assert where.startswith(str(venv)), f"coop_engine came from {where.strip()}"
        return _cli_list("cli_list_installed", venv / "bin", maximum=None)


def _quietly(argv: list[str | Path], cwd: Path) -> str:
    """Run a setup step; its stdout, or what it said on stderr if it failed."""
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:4]} failed: {done.stderr[-2000:]}")
    return done.stdout


if __name__ == "__main__":
    os.chdir(ROOT)
    run_main(
        [registry_scan, discovery, transcript_find, cli_list, cli_list_working, cli_list_installed]
    )
