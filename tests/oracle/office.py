"""The oracle's mixed office: one Coop home served by a real `coop serve`, the office's
own simulated chats and Codex threads, and a laptop reached over real sshd on 127.0.0.1
through a delaying proxy that can hang (SIGSTOP). Every receiver keeps its own records
(transcripts, its log of what it did with each frame, its inbox's log; rollouts), which
are all the checker reads.

Coop is driven as Dad drives it: `coop todo add`, `coop invite`, `coop resend`, `coop
tick --at` and `coop outbox --json`, run as processes against the home.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from netdelay import DelayProxy
from serving import started_serve
from ssh.sshd_harness import ClientKeys, Sshd
from waiting import wait_until

from hosts.sim.launch import CODEX_EXECUTABLE, ROOT, SimChat, SimFleet, SimHolder, codex_holder

from .checker import ClaudeReceiver, CodexReceiver, Receiver

COOP = str(Path(sys.executable).with_name("coop"))
# The simulator's quick pace (tests/ssh/fleet_macs.py's).
FAST = ("--think", "0.05", "--tool-interval", "0.1", "--busy-seconds", "0.6")
# Seconds the laptop may take to connect and to answer one request: a hang is seen soon.
LAPTOP_SECONDS = 2
WAIT = 60.0  # bounds a hang only


def code_under_test() -> dict[str, str]:
    """The test's own import path, when it has one: `coop` runs the code under test."""
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


class Mac:
    """One simulated Mac's Claude folder, Codex home and chats."""

    def __init__(self, name: str, root: Path) -> None:
        self.name = name
        self.config_dir = root / f"{name}-claude"
        self.codex_home = root / f"{name}-codex"
        self.codex_home.mkdir(parents=True)
        self.fleet = SimFleet(self.config_dir)


class MixedOffice:
    """The office, its laptop, `coop serve`, and the receivers by name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.home = root / "coop-home"
        self.home.mkdir()
        (root / "ssh-home").mkdir()
        self.office = Mac("office", root)
        self.laptop = Mac("laptop", root)
        self.client = ClientKeys(root / "client")
        self.chats: dict[str, tuple[Mac, SimChat]] = {}
        self.threads: dict[str, tuple[Mac, str]] = {}
        self.holders: list[SimHolder] = []
        self.serve_log = root / "serve.log"
        self.server: subprocess.Popen[bytes] | None = None
        self.sshd: Sshd | None = None
        self.proxy: DelayProxy | None = None

    def start(self) -> MixedOffice:
        """The laptop's sshd and the proxy before it, and the home's fleet.toml."""
        laptop = self.laptop
        self.sshd = Sshd(self.root / "sshd", self.client, laptop.config_dir, laptop.codex_home)
        self.sshd.start()
        self.proxy = DelayProxy(self.sshd.port, 0.005).start()
        self.client.trust_key(self.proxy.port, self.sshd.host_public)
        self._write_fleet()
        return self

    def _write_fleet(self) -> None:
        laptop = [
            "[[mac]]",
            'name = "laptop"',
            'host = "127.0.0.1"',
            f"port = {self.hang_point().port}",
            'user = "root"',
            f'identity_file = "{self.client.identity}"',
            f'known_hosts = "{self.client.known_hosts}"',
            f"timeout = {LAPTOP_SECONDS}",
            f"deadline = {LAPTOP_SECONDS}",
            f'codex = "{CODEX_EXECUTABLE}"',
        ]
        head = ['office = "office"', f'codex = "{CODEX_EXECUTABLE}"']
        quiet = ["[notify]", "quiet = true"]  # no desktop notifications from a test
        text = "\n".join([*head, "", *laptop, "", *quiet, ""])
        (self.home / "fleet.toml").write_text(text)

    def hang_point(self) -> DelayProxy:
        """The proxy between Coop and the laptop's sshd: `hang()` hangs the laptop."""
        assert self.proxy is not None, "MixedOffice.start first"
        return self.proxy

    # --- the receivers ------------------------------------------------------------------

    def chat(self, name: str, mac: Mac, *args: str, env: dict[str, str] | None = None) -> SimChat:
        """A simulated Claude chat named `name` on `mac`."""
        chat = mac.fleet.start("--name", name, *args, env=env)
        self.chats[name] = (mac, chat)
        return chat

    def thread(self, name: str, mac: Mac, held: bool) -> str:
        """A saved Codex thread on `mac`; `held`: a holder has it open, taking its queue."""
        command = [sys.executable, "-m", "hosts.sim", "codex", "--codex-home", str(mac.codex_home)]
        done = subprocess.run(
            [*command, "--name", name], capture_output=True, text=True, check=True, cwd=ROOT
        )
        thread_id = str(json.loads(done.stdout)["thread_id"])
        if held:
            self.holders.append(codex_holder(mac.codex_home, thread_id, "--poll", "0.2"))
        self.threads[name] = (mac, thread_id)
        return thread_id

    def receivers(self) -> list[Receiver]:
        """Every receiver, as the checker's manifest names it."""
        found: list[Receiver] = []
        for name, (mac, chat) in self.chats.items():
            notes = chat.frame_log.with_suffix(".err")
            found.append(
                ClaudeReceiver(
                    name, mac.name, chat.session_id, mac.config_dir, chat.frame_log, notes
                )
            )
        for name, (mac, thread_id) in self.threads.items():
            found.append(CodexReceiver(name, mac.name, thread_id, mac.codex_home))
        return found

    def said(self, name: str, words: str) -> bool:
        """Whether the chat's own log has a line with these words."""
        _, chat = self.chats[name]
        try:
            return words in chat.frame_log.with_suffix(".err").read_text(errors="replace")
        except FileNotFoundError:
            return False

    # --- Coop, as Dad runs it -----------------------------------------------------------

    def env(self) -> dict[str, str]:
        """What every `coop` here sees: this home, the office's folders, no agent, no ~."""
        return {
            "COOP_HOME": str(self.home),
            "CLAUDE_CONFIG_DIR": str(self.office.config_dir),
            "CODEX_HOME": str(self.office.codex_home),
            "HOME": str(self.root / "ssh-home"),
            "PATH": os.environ["PATH"],
        } | code_under_test()

    def coop(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `coop ARGS`, which must exit 0."""
        done = subprocess.run(
            [COOP, *args], capture_output=True, text=True, env=self.env(), timeout=WAIT, cwd=ROOT
        )
        assert done.returncode == 0, f"coop {' '.join(args)}: {done.stderr}"
        return done

    def invite(self, name: str, title: str) -> str:
        """`coop todo add` and `coop invite` to that chat or thread: the invitation's id."""
        todo = self.coop("todo", "add", title).stdout.strip()
        if name in self.chats:
            mac, chat = self.chats[name]
            ref = chat.ref
        else:
            mac, thread_id = self.threads[name]
            ref = f"codex:{thread_id}"
        invited = self.coop("invite", todo, "--session", ref, "--host", mac.name, "--json")
        return str(json.loads(invited.stdout)["outbox"])

    def outbox(self) -> dict[str, dict[str, Any]]:
        """`coop outbox --json`, by envelope id."""
        rows = json.loads(self.coop("outbox", "--json").stdout)
        return {str(row["id"]): row for row in rows}

    def envelope(self, outbox_id: str) -> dict[str, Any]:
        """One envelope as `coop outbox --json` prints it."""
        return self.outbox()[outbox_id]

    def until(self, check: Callable[[], Any], what: str) -> Any:
        """`check()`'s first truthy value; a failure shows serve's log."""
        return wait_until(check, what, WAIT, interval=0.1, detail=self._log_tail)

    def _log_tail(self) -> str:
        try:
            return self.serve_log.read_text(errors="replace")[-4000:]
        except FileNotFoundError:
            return "(no serve log)"

    def serve(self) -> None:
        """`coop serve` as a process, until it says it is serving."""
        argv = [COOP, "serve", "--interval", "0.5"]
        self.server = started_serve(argv, self.serve_log, self.env(), cwd=ROOT)

    def stop_serving(self) -> int:
        """SIGTERM serve; its exit status."""
        assert self.server is not None
        self.server.send_signal(signal.SIGTERM)
        return self.server.wait(WAIT)

    def tick(self, at: float) -> None:
        """`coop tick --at AT`: one pass as of that time."""
        self.coop("tick", "--at", repr(at))

    def tick_until(self, at: float, done: Callable[[], Any], what: str) -> None:
        """`coop tick --at AT`, a second later each time, until `done()`: a Mac slow to
        answer on a loaded machine costs a pass, not the test."""
        moment = [at]

        def ticked() -> Any:
            self.tick(moment[0])
            moment[0] += 1
            return done()

        self.until(ticked, what)

    # --- what the chats' users do -------------------------------------------------------

    def foreign_frame(self, name: str, text: str) -> None:
        """Another peer (not Coop) writes a frame into the chat's inbox, and its turn
        begins: what comes next queues behind that turn."""
        _, chat = self.chats[name]
        msg_id = str(uuid.uuid4())
        frame = {
            "type": "user",
            "session_id": chat.session_id,
            "uuid": msg_id,
            "msg_id": msg_id,
            "from": "someone-else",
            "priority": "next",
            "message": {"role": "user", "content": text},
        }
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as inbox:
            inbox.connect(str(chat.socket))
            inbox.sendall(json.dumps(frame).encode() + b"\n")
        self.until(lambda: self.said(name, f"frame {msg_id}: started a turn"), "its turn begun")

    def quiet(self, names: list[str]) -> None:
        """Each of these live chats has read every frame Coop recorded as written to it,
        judged each one, and is idle (or waiting on a held frame): a pass as of a later
        time then meets the records a pass at that time would."""

        def judged(name: str, rows: dict[str, dict[str, Any]]) -> bool:
            mac, chat = self.chats[name]
            conversations = {f"claude:{chat.session_id}", f"claude:{chat.entry()['sessionId']}"}
            written = {
                outbox_id
                for outbox_id, row in rows.items()
                if row["facts"]["transport"] and row["host"] == mac.name
                if row["session"] in conversations
            }
            read = {str(frame.get("msg_id")) for frame in chat.frames()}
            if not written <= read or not all(self.said(name, f"frame {m}:") for m in read):
                return False
            # Asked last: the chat notes a judgement after the status it leads to.
            return chat.entry().get("status") in ("idle", "waiting")

        def all_judged() -> bool:
            rows = self.outbox()
            return all(judged(name, rows) for name in names)

        self.until(all_judged, f"{names} quiet")

    # --- the end ------------------------------------------------------------------------

    def stop(self) -> None:
        """Everything started here stopped, even after a failure."""
        if self.server is not None and self.server.poll() is None:
            self.server.kill()
            self.server.wait(WAIT)
        for holder in self.holders:
            holder.kill()
        for mac in (self.office, self.laptop):
            mac.fleet.stop_all()
            shutil.rmtree(mac.fleet.socket_dir, ignore_errors=True)
        if self.proxy is not None:
            self.proxy.stop()
        if self.sshd is not None:
            self.sshd.stop()
