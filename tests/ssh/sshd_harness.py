"""Real OpenSSH servers on 127.0.0.1 standing in for fleet Macs, and a test client's
keys and known_hosts. Nothing here reads or writes ~/.ssh."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

SSHD = "/usr/sbin/sshd"
START_SECONDS = 10.0
# A session on a Mac runs zsh, which reads no start-up file of the user's but ~/.zshenv,
# with sshd's PATH (/usr/bin:/bin:/usr/sbin:/sbin), so `python3` is found at once. Each
# Mac here logs its sessions into a home of its own (no dotfile of the account running
# the tests: a `.bashrc` running `pyenv init` costs 0.14 s per session, and a pyenv shim
# 0.12 s more per `python3`), and finds this machine's own interpreter first on PATH.
MAC_PATH = f"{os.path.join(sys.base_prefix, 'bin')}:/usr/bin:/bin:/usr/sbin:/sbin"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def keygen(path: Path) -> str:
    """A new ed25519 key pair at `path`; returns the public key line."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "coop-test", "-f", str(path)],
        check=True,
    )
    return path.with_suffix(".pub").read_text().strip()


class ClientKeys:
    """The test client's identity and its own known_hosts file."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.identity = root / "id_ed25519"
        self.public = keygen(self.identity)
        self.known_hosts = root / "known_hosts"
        self.known_hosts.touch()

    def trust(self, server: Sshd) -> None:
        self.trust_key(server.port, server.host_public)

    def trust_key(self, port: int, public: str) -> None:
        """Trust `public` at 127.0.0.1:`port`, in place of any key an earlier server on
        the same port left (the file lasts the session; ports are used again)."""
        self.forget(port)
        with self.known_hosts.open("a") as known:
            known.write(f"[127.0.0.1]:{port} {public}\n")

    def forget(self, port: int) -> None:
        """No key for 127.0.0.1:`port`: a server that is not trusted is unknown, even on
        a port an earlier, trusted one used."""
        where = f"[127.0.0.1]:{port} "
        kept = [line for line in self.known_hosts.read_text().splitlines(True)
                if not line.startswith(where)]  # fmt: skip
        self.known_hosts.write_text("".join(kept))


class Sshd:
    """One sshd process: its own host key, authorized_keys, CLAUDE_CONFIG_DIR and home
    (the HOME of its sessions, as a Mac's account has: see MAC_PATH); `settings` are more
    sshd_config lines (a ForceCommand, say)."""

    def __init__(
        self,
        root: Path,
        client: ClientKeys,
        config_dir: Path,
        codex_home: Path | None = None,
        settings: tuple[str, ...] = (),
    ) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.config_dir = config_dir
        self.home = root / "home"
        self.home.mkdir(exist_ok=True)
        self.port = free_port()
        self.host_key = root / "host_ed25519"
        self.host_public = keygen(self.host_key)
        (root / "authorized_keys").write_text(client.public + "\n")
        self.config = root / "sshd_config"
        self.config.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    "PidFile none",
                    f"AuthorizedKeysFile {root / 'authorized_keys'}",
                    "StrictModes no",
                    "UsePAM no",
                    "PermitRootLogin prohibit-password",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "X11Forwarding no",
                    "PrintMotd no",
                    "MaxStartups 100",
                    "LogLevel INFO",
                    f"SetEnv CLAUDE_CONFIG_DIR={config_dir} CODEX_HOME={codex_home or root}"
                    f" HOME={self.home} PATH={MAC_PATH}",
                    *settings,
                    "",
                ]
            )
        )
        self.process: subprocess.Popen[bytes] | None = None
        self.log: list[str] = []

    def known_hosts_line(self) -> str:
        return f"[127.0.0.1]:{self.port} {self.host_public}\n"

    def start(self) -> Sshd:
        # sshd refuses to start without its privilege separation directory.
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.process = subprocess.Popen(
            [SSHD, "-D", "-e", "-f", str(self.config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        ready = threading.Event()
        threading.Thread(target=self._collect, args=(ready,), daemon=True).start()
        if not ready.wait(START_SECONDS):
            self.stop()
            raise AssertionError(f"sshd did not start: {self.log}")
        return self

    def _collect(self, ready: threading.Event) -> None:
        assert self.process is not None and self.process.stderr is not None
        for raw in self.process.stderr:
            line = raw.decode(errors="replace").rstrip()
            self.log.append(line)
            if "Server listening" in line:
                ready.set()
        ready.set()  # exited: start() reports the log

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)


class SilentServer:
    """Accepts TCP connections and never says a word, like a Mac that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


def short_tmp(prefix: str) -> Path:
    """A short directory under /tmp: AF_UNIX socket paths stay under 108 bytes."""
    return Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp"))


def remove(path: Path) -> None:
    shutil.rmtree(path, ignore_errors=True)
