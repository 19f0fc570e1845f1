"""Benchmarks of the fleet engine (issues 13 and 32): local_receipt_latency,
fleet_receipt_latency, fleet_pass_cost, idle_cost, remote_list and fleet_scale.

Macs are real sshd processes on 127.0.0.1, each behind a delaying TCP proxy of our own
(tests/netdelay.py: this kernel has no netem), with simulated chats living there: one
real receiver (a simulated Claude Code chat) and the rest live processes registered as
chats. `coop serve` and `coop chats` run as real processes. fleet_scale's 50 Macs are
helpers over pipes (PipeHost), and local_receipt_latency's chats live on this Mac. Each
benchmark prints its figures and a ratio against a baseline measured in the same run.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer

from coop_engine import queries
from coop_engine.db import open_ledger
from coop_engine.engine import Engine
from coop_engine.loop.coordinator import Coordinator
from coop_engine.models import Outbox
from hosts.channel import HelperClient
from hosts.mac.local import LocalHost
from hosts.pipe import PipeHost
from hosts.sim.launch import SimChat, SimFleet
from tests.bench.common import (
    COUNTING_SERVE,
    LiveRegistry,
    cpu_seconds,
    report,
    run_main,
)
from tests.netdelay import DelayProxy
from tests.serving import started_serve
from tests.ssh.sshd_harness import SSHD, ClientKeys, Sshd, short_tmp
from tests.waiting import wait_until

COOP = str(Path(sys.executable).with_name("coop"))
FAST = ("--think", "0.05", "--tool-interval", "0.1", "--busy-seconds", "0.6", "--answer", "silent")
DEADLINE = 3.0


class Mac:
    """One fleet Mac: an sshd, a proxy in front of it, one receiver and `fillers` more
    live chats."""

    def __init__(self, name: str, root: Path, client: ClientKeys, fillers: int, delay: float):
        self.name = name
        self.config = root / "claude"
        self.config.mkdir(parents=True)
        self.sshd = Sshd(root / "sshd", client, self.config).start()
        self.proxy = DelayProxy(self.sshd.port, delay).start()
        with client.known_hosts.open("a") as known:
            known.write(f"[127.0.0.1]:{self.proxy.port} {self.sshd.host_public}\n")
        self.fillers = LiveRegistry(fillers, config=self.config)
        self.chats = SimFleet(self.config)
        self.receiver = self.chats.start(*FAST)

    def table(self, client: ClientKeys) -> str:
        return (
            f'[[mac]]\nname = "{self.name}"\nhost = "127.0.0.1"\nport = {self.proxy.port}\n'
            f'user = "root"\nidentity_file = "{client.identity}"\n'
            f'known_hosts = "{client.known_hosts}"\ndeadline = {DEADLINE}\n'
        )

    def stop(self) -> None:
        self.chats.stop_all()
        self.fillers.close()
        self.proxy.stop()
        self.sshd.stop()


class Rig:
    """An office with one receiver of its own, and `count` Macs at `delay` each way."""

    def __init__(self, count: int, chats: int, delay: float) -> None:
        self.root = short_tmp("fb")
        self.client = ClientKeys(self.root / "client")
        self.home = self.root / "home"
        self.home.mkdir(mode=0o700)
        (self.root / "user" / ".ssh").mkdir(parents=True)
        self.office_config = self.root / "office" / "claude"
        self.office_config.mkdir(parents=True)
        self.office_chats = SimFleet(self.office_config)
        self.office_receiver = self.office_chats.start(*FAST)
        self.macs = [
            Mac(f"mac{i}", self.root / f"mac{i}", self.client, chats - 1, delay)
            for i in range(count)
        ]
        for mac in self.macs:
            self.client.trust(mac.sshd)
        fleet = 'office = "office"\n\n' + "\n".join(mac.table(self.client) for mac in self.macs)
        (self.home / "fleet.toml").write_text(fleet)
        self.engine = Engine(open_ledger(self.home))

    def env(self, home: Path | None = None) -> dict[str, str]:
        return {
            **os.environ,
            "COOP_HOME": str(home or self.home),
            "CLAUDE_CONFIG_DIR": str(self.office_config),
            "HOME": str(self.root / "user"),  # no ~/.ssh/config, no agent
            "SSH_AUTH_SOCK": "",
        }

    @contextmanager
    def serving(self, argv: list[str] | None = None) -> Iterator[subprocess.Popen[bytes]]:
        process = started_serve(argv or [COOP, "serve"], self.root / "serve.log", self.env())
        try:
            yield process
        finally:
            process.terminate()
            process.wait(30)

    def invite(self, chat: SimChat, host: str) -> str:
        """`coop invite` as Dad runs it; the outbox id it printed."""
        todo = self.engine.add_todo(f"Bench for {host}")["id"]
        done = subprocess.run(
            [COOP, "invite", str(todo), "--session", chat.ref, "--host", host],
            capture_output=True,
            text=True,
            env=self.env(),
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def stop(self) -> None:
        for mac in self.macs:
            mac.stop()
        self.office_chats.stop_all()
        shutil.rmtree(self.root, ignore_errors=True)


def received_at(outbox_id: str) -> float | None:
    """Now, when `coop outbox` would show fact 3 for the envelope; else None."""
    row = queries.envelope(Outbox.get_by_id(outbox_id))
    return time.monotonic() if row["facts"]["received"] is not None else None


def latencies(rig: Rig, targets: list[tuple[str, SimChat]], timeout: float = 60.0) -> list[float]:
    """Invite each target at once (one `coop invite` each, in parallel); for each, the
    seconds from its `coop invite` returning to fact 3 in the ledger."""
    returned: dict[str, tuple[str, float]] = {}

    def invite(host: str, chat: SimChat) -> None:
        outbox_id = rig.invite(chat, host)
        returned[host] = (outbox_id, time.monotonic())

    threads = [threading.Thread(target=invite, args=target) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found: dict[str, float] = {}
    deadline = time.monotonic() + timeout
    while len(found) < len(returned) and time.monotonic() < deadline:
        for host, (outbox_id, at) in returned.items():
            if host not in found and (seen := received_at(outbox_id)) is not None:
                found[host] = seen - at
        time.sleep(0.01)
    return [found.get(host, float("inf")) for host in returned]


FLEET_RECEIPT_WORST = 0.25  # seconds, at 40 ms round trip, with one Mac hung as well


def fleet_receipt_latency() -> bool:
    """A receipt on another Mac: 4 Macs at 40 ms round trip, each receiver invited at once
    (`coop invite`), then again with one Mac hung (its proxy SIGSTOPped): the seconds
    from `coop invite` returning to fact 3 in the ledger. The baseline is the same on
    the office's own Mac, plus one round trip.

    Where the time goes. Traced per request before issue 32 (two Macs, two busy cores):
    the news of the invitation reached the Mac's worker 20 to 30 ms after `coop invite`
    returned, then four round trips, each 45 to 55 ms with the helper's own work, and 5
    to 12 ms of the office's own work between them (the intent's commit, fsynced). Two
    of those costs are gone, and the count is tested (tests/door/test_twice_read.py
    counts the writes to a helper on the way to a frame):
    - The news: the ledger's file event comes before its commit is visible
      (loop/news.py), so the loop's reader looks again after it, at 5, 15, 35 ms ...,
      now in the pause between the loop's rounds too (MIN_PASS_GAP, 50 ms, which it
      waited out before), and tells the workers before the round's chores.
    - The round trips are three: the pass's survey, with the send's two readings of the
      receiver, its policy inputs and its transcript's end in the same write (the
      pass's first send's readings ride with its survey: loop/surveyed.py); the send,
      after the intent is recorded; and the observe step's read of the transcript,
      which finds the peer entry the chat wrote 30 ms after the frame arrived.
    Measured on two cores shared with other work (load 2 to 2.5), the worst with every
    Mac up or one hung: 0.24 to 0.26 s with four round trips and the news after the
    round; 0.21 to 0.27 s with three; 0.16 to 0.23 s with both changes (0.15 to 0.19 s
    at load 0.5 to 1.2). A chat slower to write than that read is found by the survey
    that follows the pass, one round trip later. A hung Mac costs the others nothing:
    each Mac has its own worker; the loop's hub and debounce are not on this path, and
    the worker does not wait.
    """
    rig = Rig(count=4, chats=25, delay=0.02)
    try:
        with rig.serving():
            # Warm: the helpers started, every Mac's first survey taken.
            latencies(rig, [(mac.name, mac.receiver) for mac in rig.macs])
            alone = statistics.median(
                latencies(rig, [("office", rig.office_receiver)])[0] for _ in range(5)
            )
            baseline = alone + 2 * 0.02  # this Mac alone, plus one round trip
            up = latencies(rig, [(mac.name, mac.receiver) for mac in rig.macs])
            rig.macs[0].proxy.hang()
            hung = latencies(rig, [(mac.name, mac.receiver) for mac in rig.macs[1:]])
            rig.macs[0].proxy.resume()
    finally:
        rig.stop()
    worst_up, worst_hung = max(up), max(hung)
    goal = worst_up <= FLEET_RECEIPT_WORST and worst_hung <= FLEET_RECEIPT_WORST
    return (
        report(
            "fleet_receipt_latency",
            max(worst_up, worst_hung) / baseline,
            maximum=round(FLEET_RECEIPT_WORST / baseline, 2),  # the goal as a ratio
            worst_s=worst_up,
            median_s=statistics.median(up),
            hung_worst_s=worst_hung,
            hung_median_s=statistics.median(hung),
            baseline_s=baseline,
            goal=f"worst<={FLEET_RECEIPT_WORST}s " + ("ok" if goal else "MISSED"),
        )
        and goal
    )


# --- a receipt on the office's own Mac ----------------------------------------------------

LOCAL_CHATS = 200
LOCAL_RECEIVERS = 40


class Writes(FileSystemEventHandler):
    """When inotify told a watcher of this process of each write under a folder: the
    floor a receipt on this Mac can approach, measured on the same writes."""

    def __init__(self, folder: Path) -> None:
        self.seen: list[tuple[str, float]] = []
        self.observer = Observer()
        self.observer.schedule(self, str(folder), recursive=True)
        self.observer.start()

    def on_modified(self, event: FileSystemEvent) -> None:
        self.seen.append((os.fsdecode(event.src_path), time.time()))

    def first_after(self, path: Path, at: float) -> float | None:
        """When the first write to `path` at or after `at` was told (the peer entry's
        timestamp is cut to the millisecond, hence the millisecond's grace)."""
        times = [t for p, t in list(self.seen) if p == str(path) and t >= at - 0.001]
        return min(times, default=None)

    def close(self) -> None:
        self.observer.stop()
        self.observer.join(5)


def peer_entry_written_at(chat: SimChat, outbox_id: str) -> float:
    """When the chat wrote the peer entry of this envelope (its own timestamp)."""
    for entry in chat.transcript_entries():
        if (entry.get("origin") or {}).get("msg_id") == outbox_id and "timestamp" in entry:
            stamp = entry["timestamp"].replace("Z", "+00:00")
            return datetime.fromisoformat(stamp).timestamp()
    raise AssertionError(f"no peer entry for {outbox_id} in {chat.transcript}")


def local_receipt_latency() -> bool:
    """A receipt on the office's own Mac: 200 live chats (40 simulated receivers, the rest
    registered live processes), one `coop serve`, and each receiver invited in turn
    (`coop invite`, as Dad does), so each receipt is measured alone. A receipt's latency
    is the time from the chat writing its peer entry (the entry's own timestamp) to
    `coop serve` recording fact 3 (the envelope's `received_at`, the ledger's clock).
    The baseline is the floor: when a watchdog observer of this process was told of the
    same write.

    Where the time goes (measured on two cores shared with other work, 200 chats, 40
    envelopes in flight): inotify and watchdog tell of the write in 1.5 to 2 ms (the
    baseline). Nothing on this path waits on purpose: the office's own Mac has no
    debounce (watchdog's handler only signals its worker), the ledger loop's
    MIN_PASS_GAP is not on it, and the hub is not involved. The rest is passes. The
    chat writes its `enqueue` line 30 ms before its peer entry; that line wakes a pass
    which surveys before the peer entry exists, and the peer entry's own wake then waits
    for that pass to end, and for the whole of the next pass, whose survey sees it and
    whose observe step records it. The pass that sent the frame goes on after the send
    (the rest of its steps, then the survey that adds the transcript to the watch), 0.2 s
    and more when the cores are busy, and a peer entry written meanwhile waits for it:
    that is the worst case. So a receipt costs
    about one pass at the median and two at worst; a pass here took 29 ms at the median
    (17 ms after each survey's live entries are read into processes once, not once per
    enrolled chat: 40 x 200 readings a pass before), of which the survey of 200 registry
    entries and 40 transcripts is 10 to 13 ms.

    On a slower day of the same machine this missed (median 0.080 to 0.097 s in four
    runs, on this code and on the code before the chores change alike): a pass took
    119 ms at the median and its registry listing 49 ms, where `coop chats` lists the
    same 200 entries in 12. The watch was asking inotify for opens and closes after
    reading, so each survey's own reads came back as some 400 events for watchdog's
    threads to parse, under the GIL the survey waited on. Asking for changes only
    (coop_engine/loop/watching.py): a pass 67 ms, its listing 15 ms, a receipt 0.040 s
    at the median.
    """
    rig = Rig(count=0, chats=0, delay=0.0)
    (rig.home / "fleet.toml").unlink()  # this Mac alone
    fillers = LiveRegistry(LOCAL_CHATS - LOCAL_RECEIVERS, config=rig.office_config)
    receivers = [rig.office_receiver]
    receivers += [rig.office_chats.start(*FAST) for _ in range(LOCAL_RECEIVERS - 1)]
    writes = Writes(rig.office_config / "projects")
    latencies, floors = [], []
    try:
        with rig.serving():
            for chat in receivers:
                outbox_id = rig.invite(chat, "office")
                received = wait_until(
                    lambda: Outbox.get_by_id(outbox_id).received_at,  # noqa: B023
                    f"the receipt of {outbox_id}",
                    timeout=60,
                    interval=0.01,
                )
                written = peer_entry_written_at(chat, outbox_id)
                latencies.append(received - written)
                told = writes.first_after(chat.transcript, written)
                if told is not None:
                    floors.append(told - written)
    finally:
        writes.close()
        fillers.close()
        rig.stop()
    median, worst = statistics.median(latencies), max(latencies)
    floor = max(statistics.median(floors), 0.001)
    goal = median <= 0.05 and worst <= 0.2
    return (
        report(
            "local_receipt_latency",
            median / floor,
            maximum=round(0.05 / floor, 2),  # the goal, 0.05 s at the median, as a ratio
            chats=LOCAL_CHATS,
            receipts=len(latencies),
            median_s=median,
            worst_s=worst,
            baseline_inotify_s=floor,
            goal="median<=0.05s,worst<=0.2s " + ("ok" if goal else "MISSED"),
        )
        and goal
    )


# --- what a pass costs a Mac: requests and bytes of the helper protocol -----------------


class Meter:
    """Every helper request, counted by Mac and operation, with its bytes both ways; and
    the round trips (reads asked together are one)."""

    def __init__(self) -> None:
        self.requests: Counter[tuple[str, str]] = Counter()
        self.bytes: Counter[str] = Counter()
        self.round_trips: Counter[str] = Counter()
        self.waiting: Counter[str] = Counter()  # requests in flight now, by Mac
        self._original = HelperClient._exchange
        meter = self

        def counted(client: HelperClient, requests: list[tuple[str, dict[str, Any]]]) -> Any:
            for op, args in requests:
                meter.requests[(client.name, op)] += 1
                meter.bytes[client.name] += len(json.dumps({"op": op, "args": args}))
            meter.round_trips[client.name] += 1
            meter.waiting[client.name] += 1
            try:
                answers = meter._original(client, requests)
            finally:
                meter.waiting[client.name] -= 1
            for answer in answers:
                meter.bytes[client.name] += len(json.dumps(answer, default=str))
            return answers

        HelperClient._exchange = counted  # type: ignore[method-assign]

    def take(self) -> tuple[Counter[tuple[str, str]], Counter[str]]:
        requests, sent = self.requests, self.bytes
        self.requests, self.bytes, self.round_trips = Counter(), Counter(), Counter()
        return requests, sent

    def close(self) -> None:
        HelperClient._exchange = self._original  # type: ignore[method-assign]


def _deliver(engine: Engine, outbox_id: str, chat_path: str | None) -> None:
    """Record an envelope sent and received as a pass would (no frame sent): it is then
    in flight, an invitation awaiting its answer."""
    row = Outbox.get_by_id(outbox_id)
    cursor = {
        "native_session": row.session.native_id,
        "transcript": chat_path,
        "offset": 0,
        "inode": None,
        "inbound": {"verdict": "accept"},
        "sent_at": engine.clock(),
    }
    attempt = engine.mark_uncertain(outbox_id, cursor)["attempt"]
    engine.record_transport(outbox_id, attempt, {"ok": True, "written": True, "stage": "done"})
    engine.record_receipt(outbox_id, {"offset": 0, "shape": "bench", "host": row.session.host})


def fleet_pass_cost() -> bool:
    rig = Rig(count=4, chats=25, delay=0.02)
    meter = Meter()
    try:
        from coop_engine.loop.serve import Server
        from hosts.fleet import load_fleet

        os.environ.update({"HOME": str(rig.root / "user"), "SSH_AUTH_SOCK": ""})
        fleet = load_fleet(rig.home)
        fleet.hosts["office"] = LocalHost("office", config_dir=rig.office_config)
        figures: dict[str, Any] = {}
        for in_flight in (0, 10):
            for mac in rig.macs:
                for _ in range(in_flight - len(mac_envelopes(mac.name))):
                    todo = rig.engine.add_todo("In flight")["id"]
                    outbox = rig.engine.invite(todo, mac.receiver.ref, mac.name)["outbox"]
                    _deliver(rig.engine, outbox, str(mac.receiver.transcript))
            server = Server(rig.engine, fleet, rig.home, lambda line: None)
            thread = server.start_thread()
            time.sleep(5)  # the first passes and their follow-ups
            meter.take()
            window = 60.0  # more than two long-poll cycles (25 s each)
            time.sleep(window)
            requests, sent = meter.take()
            outstanding = sum(meter.waiting[mac.name] for mac in rig.macs) / len(rig.macs)
            figures[f"idle{in_flight}_outstanding_per_mac"] = outstanding
            server.stop()
            thread.join(30)
            names = [mac.name for mac in rig.macs]
            others = sum(n for (host, op), n in requests.items() if host in names and op != "watch")
            figures[f"idle{in_flight}_other_requests_per_mac"] = others / len(names)
            figures[f"idle{in_flight}_long_polls_per_mac_min"] = (
                sum(n for (h, op), n in requests.items() if h in names and op == "watch")
                / len(names)
                * 60
                / window
            )
            figures[f"idle{in_flight}_bytes_per_mac_min"] = (
                sum(sent[name] for name in names) / len(names) * 60 / window
            )
        # One pass over a Mac with its 10 envelopes in flight: the survey, against the
        # same readings asked one operation at a time (the wave-1 pass).
        coordinator = Coordinator(rig.engine, fleet.hosts, lambda line: None)
        mac = rig.macs[0]
        coordinator.pass_mac(mac.name, rig.engine.clock())  # warm
        meter.take()
        coordinator.pass_mac(mac.name, rig.engine.clock())
        survey_requests, survey_bytes = meter.take()
        host = fleet.hosts[mac.name]
        host.chats()
        for row in mac_envelopes(mac.name):
            host.transcript_scan(row.session.native_id, row.observed_offset, [row.id])
            host.registry_entry(row.session.native_id)
        old_requests, old_bytes = meter.take()
        fleet.close()
    finally:
        meter.close()
        rig.stop()
    ours = sum(survey_requests.values())
    theirs = sum(old_requests.values())
    goal = (
        figures["idle0_other_requests_per_mac"] == 0
        and figures["idle10_other_requests_per_mac"] == 0
    )
    return (
        report(
            "fleet_pass_cost",
            theirs / max(ours, 1),
            minimum=5.0,
            pass_requests=ours,
            pass_bytes=sum(survey_bytes.values()),
            one_at_a_time_requests=theirs,
            one_at_a_time_bytes=sum(old_bytes.values()),
            **figures,
            goal="idle_only_long_polls " + ("ok" if goal else "MISSED"),
        )
        and goal
    )


def mac_envelopes(name: str) -> list[Outbox]:
    from coop_engine.models import Session

    return list(
        Outbox.select(Outbox, Session)
        .join(Session)
        .where((Session.host == name) & (Outbox.state == "delivered"))
    )


# --- idle: `coop serve` with nothing changing ------------------------------------------


def _idle_serve(rig: Rig, seconds: float) -> tuple[float, float]:
    """`coop serve`'s CPU (fraction of one core) and passes per minute over `seconds`."""
    counted = rig.root / "passes.txt"
    counted.write_text("")
    with rig.serving([sys.executable, "-c", COUNTING_SERVE, str(counted)]) as serve:
        time.sleep(8)  # settle: reconcile, first passes
        before_cpu, before_passes = cpu_seconds(serve.pid), len(counted.read_text().split())
        time.sleep(seconds)
        cpu = cpu_seconds(serve.pid) - before_cpu
        passes = len(counted.read_text().split()) - before_passes
    return cpu / seconds, passes * 60 / seconds


def idle_cost() -> bool:
    rig = Rig(count=0, chats=0, delay=0.0)
    (rig.home / "fleet.toml").unlink()  # this Mac alone
    fillers = LiveRegistry(180, config=rig.office_config)
    receivers = [rig.office_chats.start(*FAST) for _ in range(19)] + [rig.office_receiver]
    try:
        idle_none, passes_none = _idle_serve(rig, 30.0)
        for chat in receivers:
            rig.invite(chat, "office")
        with rig.serving():
            deadline = time.monotonic() + 60
            while (
                Outbox.select().where(Outbox.state == "delivered").count() < len(receivers)
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
        idle_twenty, passes_twenty = _idle_serve(rig, 30.0)
    finally:
        fillers.close()
        rig.stop()
    goal = idle_twenty <= 0.03
    return (
        report(
            "idle_cost",
            idle_twenty / max(idle_none, 0.001),
            maximum=10.0,
            cpu_core_fraction=idle_twenty,
            passes_per_min=passes_twenty,
            baseline_cpu_no_envelopes=idle_none,
            baseline_passes_per_min=passes_none,
            goal="cpu<=3% " + ("ok" if goal else "MISSED"),
        )
        and goal
    )


# --- `coop chats` across the fleet ----------------------------------------------------------


def _chats_seconds(rig: Rig, home: Path | None = None) -> tuple[float, str]:
    """`coop chats --json`'s median time over 11 runs, after one to warm the caches; and
    how it was answered."""
    times, via = [], ""
    for _ in range(12):
        started = time.perf_counter()
        done = subprocess.run(
            [COOP, "chats", "--json"], capture_output=True, text=True, env=rig.env(home)
        )
        times.append(time.perf_counter() - started)
        assert done.returncode == 0, done.stderr
        via = json.loads(done.stdout)[0]["via"]
    return statistics.median(times[1:]), via


def _session_start(rig: Rig) -> float:
    """What one ssh session running nothing (`true`) costs on these Macs: sshd's own
    start of a session and the login shell's start-up files, which every cold `coop
    chats` pays once per Mac before Coop's helper runs."""
    from hosts.ssh import SshHost

    mac = rig.macs[0]
    host = SshHost(
        mac.name,
        "127.0.0.1",
        port=mac.proxy.port,
        user="root",
        identity_file=str(rig.client.identity),
        known_hosts=str(rig.client.known_hosts),
        ssh_config=str(rig.root / "no-ssh-config"),
    )

    def once() -> None:
        channel = host.exec_channel("true")
        channel.recv_exit_status()
        channel.close()

    try:
        return statistics.median(_timed(once) for _ in range(5))
    finally:
        host.close()


def _timed(job: Any) -> float:
    started = time.perf_counter()
    job()
    return time.perf_counter() - started


def remote_list() -> bool:
    """`coop chats` over 4 Macs at 40 ms round trip: direct (no serve running: the CLI
    connects, authenticates and starts a helper on every Mac at once), and through a
    running serve, whose hub asks every Mac afresh, in parallel, over the connections
    and helpers it keeps. The served listing's baseline is its floor: this Mac's own
    listing (a home with no fleet.toml) plus the one round trip every Mac's answer
    costs. (It was this Mac's listing alone until the CLI's start-up fell from about
    70 ms to under 30: the ratio then measured the start-up, not the fleet.)

    Where the direct time goes (traced per Mac, two quiet cores; total 0.61 s): 0.10 s
    importing paramiko; 0.2 s connecting and authenticating the four Macs at once (three
    round trips and the key exchange's arithmetic); 0.09 s until the four exec requests
    are answered; then 0.15 s until the four answers: each helper's Python starting on
    the two cores that also play all four Macs, and the answer's round trip. Each Mac's
    sessions start in a home of its own, as a Mac's zsh reads none of the user's start-up
    files but ~/.zshenv (tests/ssh/sshd_harness.py): under the account that runs the
    tests, whose `.bashrc` runs `pyenv init` and whose `python3` is a pyenv shim, the same
    listing took 1.13 s. `ssh_session_start_s` is one session running `true`."""
    rig = Rig(count=4, chats=25, delay=0.02)
    alone_home = rig.root / "alone"
    alone_home.mkdir(mode=0o700)
    try:
        alone, _ = _chats_seconds(rig, alone_home)
        session = _session_start(rig)
        direct, via_direct = _chats_seconds(rig)
        with rig.serving():
            time.sleep(3)
            served, via_served = _chats_seconds(rig)
    finally:
        rig.stop()
    assert (via_direct, via_served) == ("direct", "serve"), (via_direct, via_served)
    floor = alone + 2 * 0.02  # this Mac's listing, plus one round trip
    goal = direct <= 1.0 and served <= 2 * floor
    return (
        report(
            "remote_list",
            served / floor,
            maximum=2.0,
            direct_s=direct,
            through_serve_s=served,
            this_mac_alone_s=alone,
            baseline_s=floor,
            ssh_session_start_s=session,
            goal="direct<=1.0s " + ("ok" if direct <= 1.0 else "MISSED"),
        )
        and goal
    )


# --- sized for more: 50 Macs x 200 chats, 1,000 envelopes in flight ---------------------

SCALE_MACS = 50
SCALE_CHATS = 200
SCALE_IN_FLIGHT = 20  # per Mac
SCALE_WINDOW = 30.0  # seconds of nothing changing, measured
SCALE_SURVEYS = 900  # back to back: half an hour of passes at one every two seconds
SCALE_WATCHES = 600  # back to back, each ended at once: more than four hours of long-polls


def _serve_quietly(server: Any, seconds: float, helpers: list[int]) -> tuple[float, list[int]]:
    """The office's CPU (fraction of one core: this process, which runs the coordinator)
    over `seconds` with nothing changing, and each helper's RSS growth (kB) meanwhile."""
    before = [_rss_kb(pid) for pid in helpers]
    cpu = time.process_time()
    time.sleep(seconds)
    cpu = time.process_time() - cpu
    return cpu / seconds, [_rss_kb(pid) - kb for pid, kb in zip(helpers, before, strict=True)]


def fleet_scale() -> bool:
    """50 simulated Macs x 200 chats, 20 envelopes in flight on each (1,000), served as
    `coop serve` serves them (loop/serve.py's Server: a worker and a long-poll per Mac),
    each Mac a helper over pipes (PipeHost) with its own registry; the 200 live
    processes are registered on every Mac (one machine plays all 50).

    Measured: the office's CPU over SCALE_WINDOW seconds with nothing changing, against
    the same Server with the office alone (same ledger, same window); the requests each
    Mac is asked in one pass of every Mac (`coop tick`'s pass_now), besides its
    long-poll; every helper's RSS over that window; and one helper's RSS over
    SCALE_SURVEYS surveys and SCALE_WATCHES long-polls run back to back (more passes
    and long-polls than an hour between changes asks), each growth extrapolated
    linearly to an hour.
    """
    root = short_tmp("fs")
    shared = LiveRegistry(SCALE_CHATS, config=root / "mac0" / "claude")
    macs = [f"mac{i}" for i in range(SCALE_MACS)]
    for name in macs[1:]:
        shared.register(root / name / "claude")
    office = LocalHost("office", config_dir=root / "office")
    hosts: dict[str, Any] = {"office": office}
    for name in macs:
        hosts[name] = PipeHost(name, env={"CLAUDE_CONFIG_DIR": str(root / name / "claude")})
    engine = Engine(open_ledger(root / "home"))
    meter = Meter()
    from coop_engine.loop.serve import Server
    from hosts.fleet import Fleet

    try:
        for name in macs:
            for chat in hosts[name].chats()["chats"][:SCALE_IN_FLIGHT]:
                todo = engine.add_todo("At scale")["id"]
                outbox = engine.invite(todo, f"claude:{chat['session_id']}", name)["outbox"]
                _deliver(engine, outbox, None)
        alone = Server(engine, Fleet("office", {"office": office}), root / "home", lambda _: None)
        thread = alone.start_thread()
        time.sleep(5)  # its first passes
        baseline, _ = _serve_quietly(alone, SCALE_WINDOW, [])
        alone.stop()
        thread.join(30)
        server = Server(engine, Fleet("office", hosts), root / "home", lambda line: None)
        thread = server.start_thread()
        time.sleep(15)  # every Mac's first pass, its long-poll outstanding
        meter.take()
        pass_cpu = time.process_time()
        passed = server.pass_now()
        pass_cpu = time.process_time() - pass_cpu
        trips = dict(meter.round_trips)
        requests, sent = meter.take()
        assert all(mac["passed"] and mac["reason"] is None for mac in passed["macs"]), passed
        helpers = [hosts[name].client.hello["pid"] for name in macs]
        time.sleep(2)
        cpu, grown = _serve_quietly(server, SCALE_WINDOW, helpers)
        quiet_requests, _ = meter.take()
        server.stop()
        thread.join(30)
        surveys_kb, watches_kb = _one_helper_over_time(server.coordinator, hosts["mac0"])
    finally:
        meter.close()
        for host in hosts.values():
            host.close()
        shared.close()
        shutil.rmtree(root, ignore_errors=True)
    per_pass = [
        sum(n for (h, op), n in requests.items() if h == name and op != "watch") for name in macs
    ]
    quiet = sum(n for (_, op), n in quiet_requests.items() if op != "watch")
    hour = 3600.0 / SCALE_WINDOW
    worst_kb_hour = max(grown) * hour
    cpu_ok = cpu < 0.05
    one_request = max(per_pass) == 1
    ok = report(
        "fleet_scale",
        cpu / max(baseline, 0.001),
        maximum=round(0.05 / max(baseline, 0.001), 2),  # the goal, 5% of a core, as a ratio
        macs=SCALE_MACS,
        chats_per_mac=SCALE_CHATS,
        in_flight=SCALE_MACS * SCALE_IN_FLIGHT,
        office_core_fraction=cpu,
        baseline_office_alone=baseline,
        window_s=SCALE_WINDOW,
        requests_between_changes=quiet,
        requests_per_mac_per_pass_max=max(per_pass),
        requests_per_mac_per_pass_min=min(per_pass),
        round_trips_per_mac_per_pass_max=max(trips.get(name, 0) for name in macs),
        bytes_per_mac_per_pass=sum(sent[m] for m in macs) / len(macs),
        office_cpu_s_one_pass_every_mac=pass_cpu,
        goal=f"cpu<5%,one_request {'ok' if cpu_ok and one_request else 'MISSED'}",
    )
    # The worst of: one helper after its surveys, one after its long-polls, and the
    # helper that grew most in the window, grown for an hour at that pace.
    grown_ratio = max(
        surveys_kb[-1] / surveys_kb[0],
        watches_kb[-1] / watches_kb[0],
        1 + max(0.0, worst_kb_hour) / surveys_kb[0],
    )
    memory = report(
        "fleet_scale_memory",
        grown_ratio,
        maximum=1.1,
        helper_rss_kb=surveys_kb[0],
        after_surveys_kb=surveys_kb[-1],
        long_poll_helper_rss_kb=watches_kb[0],
        after_watches_kb=watches_kb[-1],
        surveys=SCALE_SURVEYS,
        watches=SCALE_WATCHES,
        window_growth_kb_max=max(grown),
        window_growth_kb_hour_max=worst_kb_hour,
    )
    return ok and cpu_ok and one_request and memory


def _one_helper_over_time(coordinator: Coordinator, host: Any) -> tuple[list[int], list[int]]:
    """One Mac's helper RSS (kB) before and after SCALE_SURVEYS surveys of its envelopes,
    then after SCALE_WATCHES long-polls on a helper of their own (their RSS likewise)."""
    view = coordinator.views["mac0"]
    readings = [
        {"id": r.id, "session_id": r.session.native_id, "offset": r.observed_offset,
         "inode": None, "needles": [r.id]}
        for r in mac_envelopes("mac0")
    ]  # fmt: skip
    for _ in range(5):
        view.take(readings)  # warm: what every survey keeps is kept
    pid = host.client.hello["pid"]
    surveys = [_rss_kb(pid)]
    for _ in range(SCALE_SURVEYS):
        view.take(readings)
    surveys.append(_rss_kb(pid))
    poller = host.long_poller()
    watch = view.watching
    assert watch is not None
    for _ in range(5):
        poller.watch(watch["paths"], None, 0.0)
    watcher = poller.client.hello["pid"]
    watches = [_rss_kb(watcher)]
    for _ in range(SCALE_WATCHES):
        poller.watch(watch["paths"], None, 0.0)
    watches.append(_rss_kb(watcher))
    poller.close()
    return surveys, watches


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def main() -> None:
    if os.geteuid() != 0 or not os.path.exists(SSHD):
        print("BENCH name=fleet_* skipped: needs root and /usr/sbin/sshd", flush=True)
        sys.exit(1)
    run_main(
        [
            local_receipt_latency,
            fleet_receipt_latency,
            fleet_pass_cost,
            idle_cost,
            remote_list,
            fleet_scale,
        ]
    )


if __name__ == "__main__":
    main()
