"""A fleet Mac for the ssh tests: a real sshd on 127.0.0.1 with its own Claude and Codex
folders and the simulated chats living there (conftest.py starts them; tests name the
class from here, never from a conftest)."""

from __future__ import annotations

from contextlib import ExitStack
from pathlib import Path
from typing import Any

from sshd_harness import ClientKeys, Sshd

from hosts.mac.host import Host
from hosts.sim.launch import SimChat, SimFleet
from hosts.ssh import SshHost

# The simulator's quick pace (tests/sim/conftest.py uses the same).
FAST = ("--think", "0.05", "--tool-interval", "0.1", "--busy-seconds", "0.6")


class Mac:
    """One simulated fleet Mac: an sshd whose sessions see `config_dir` as Claude's
    folder and `codex_home` as Codex's."""

    def __init__(
        self, name: str, root: Path, client: ClientKeys, sshd_settings: tuple[str, ...] = ()
    ) -> None:
        self.name = name
        self.client = client
        self.config_dir = root / "claude"
        self.config_dir.mkdir(parents=True)
        self.codex_home = root / "codex"
        self.codex_home.mkdir()
        self.sshd = Sshd(
            root / "sshd", client, self.config_dir, self.codex_home, sshd_settings
        ).start()
        self.chats = SimFleet(self.config_dir)
        self.hosts: list[Host] = []

    @property
    def port(self) -> int:
        return self.sshd.port

    def chat(self, *args: str) -> SimChat:
        return self.chats.start(*FAST, *args)

    def ssh_host(self, name: str | None = None, **settings: Any) -> SshHost:
        options: dict[str, Any] = {
            "port": self.port,
            "user": "root",
            "identity_file": str(self.client.identity),
            "known_hosts": str(self.client.known_hosts),
        }
        options.update(settings)
        host = SshHost(name or self.name, "127.0.0.1", **options)
        self.hosts.append(host)
        return host

    def fleet_entry(self, **extra: Any) -> str:
        """This Mac's [[mac]] table for a fleet.toml."""
        lines = [
            "[[mac]]",
            f'name = "{self.name}"',
            'host = "127.0.0.1"',
            f"port = {self.port}",
            'user = "root"',
            f'identity_file = "{self.client.identity}"',
            f'known_hosts = "{self.client.known_hosts}"',
        ]
        lines += [f"{key} = {value!r}" for key, value in extra.items()]
        return "\n".join(lines) + "\n"

    def stop(self) -> None:
        """Its hosts closed, its chats stopped, its sshd stopped, each even when one
        before it raised (a failed test can leave a host whose close raises): the first
        error is raised after all of them, and no sshd is left running."""
        with ExitStack() as stack:  # its callbacks run last in, first out
            stack.callback(self.sshd.stop)
            stack.callback(self.chats.stop_all)
            for host in self.hosts:
                stack.callback(host.close)
