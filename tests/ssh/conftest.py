"""Fleet Macs for the ssh tests: real sshd processes on 127.0.0.1, each with its own host
key and its own CLAUDE_CONFIG_DIR (sshd's SetEnv), simulated chats living there, and a
client whose keys, known_hosts and ~/.ssh are in a temporary folder.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from fleet_macs import Mac
from prerequisites import missing
from sshd_harness import SSHD, ClientKeys, remove, short_tmp

from hosts.mac.host import Host
from hosts.mac.local import LocalHost
from hosts.pipe import PipeHost
from hosts.sim.launch import CODEX_EXECUTABLE

CODEX = str(CODEX_EXECUTABLE)  # the simulated `codex`, as fleet.toml would name it


@pytest.fixture(autouse=True)
def private_ssh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """~ is a temporary folder: nothing reads or writes the real ~/.ssh, and no agent."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    return home


@pytest.fixture(scope="session")
def client() -> Iterator[ClientKeys]:
    root = short_tmp("sc")
    yield ClientKeys(root)
    remove(root)


@pytest.fixture
def start_mac(client: ClientKeys) -> Iterator[Callable[..., Mac]]:
    """Start Macs; `trusted` puts the Mac's host key in the client's known_hosts;
    `sshd_settings` are more lines of its sshd_config."""
    if os.geteuid() != 0:
        missing("root, to run sshd (CI runs as root)")
    if not os.path.exists(SSHD):
        missing(f"{SSHD} (make test installs openssh-server)")
    macs: list[tuple[Mac, Path]] = []

    def start(
        name: str = "laptop", trusted: bool = True, sshd_settings: tuple[str, ...] = ()
    ) -> Mac:
        root = short_tmp("sm")
        mac = Mac(name, root, client, sshd_settings)
        macs.append((mac, root))
        if trusted:
            client.trust(mac.sshd)
        else:
            client.forget(mac.sshd.port)
        return mac

    yield start
    with ExitStack() as stack:  # every Mac stopped and removed, even after one raised
        for mac, root in macs:
            stack.callback(remove, root)
            stack.callback(mac.stop)


@pytest.fixture
def laptop(start_mac: Callable[..., Mac]) -> Mac:
    return start_mac("laptop")


HOST_KINDS = ("local", "pipe", "pipe-python3.9", "ssh")


def oldest_python() -> str | None:
    """A Python 3.9, the version macOS ships as /usr/bin/python3: the helper must run there."""
    # The real home: these tests give HOME a temporary folder.
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path(pwd.getpwuid(os.getuid()).pw_dir) / ".pyenv")
    candidates = sorted((pyenv / "versions").glob("3.9*/bin/python3.9"))
    if candidates:
        return str(candidates[0])
    found = shutil.which("python3.9")
    # A pyenv shim is not an interpreter: it may refuse to run outside its project.
    return found if found and "/shims/" not in found else None


@pytest.fixture(params=HOST_KINDS)
def host_on(request: pytest.FixtureRequest, laptop: Mac) -> Iterator[Host]:
    """The laptop's chats, asked through each Host implementation in turn."""
    kind = request.param
    host: Host
    if kind == "local":
        host = LocalHost(
            "laptop", config_dir=laptop.config_dir, codex_home=laptop.codex_home, codex=CODEX
        )
    elif kind.startswith("pipe"):
        env = {"CLAUDE_CONFIG_DIR": str(laptop.config_dir), "CODEX_HOME": str(laptop.codex_home)}
        python = sys.executable
        if kind == "pipe-python3.9":
            python = oldest_python() or ""
            if not python:
                missing("a Python 3.9 (pyenv's, or python3.9 on PATH) for macOS's stock python3")
        host = PipeHost("laptop", env=env, python=python, codex=CODEX)
    else:
        host = laptop.ssh_host(codex=CODEX)
    yield host
    host.close()
