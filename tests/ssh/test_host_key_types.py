"""Host keys by type, under RejectPolicy (DESIGN.md 6): known_hosts may hold a Mac's key
of one type while the Mac offers another. Coop first asks for a type known_hosts holds
(as OpenSSH does), so a Mac with several host keys is reached by the one on file; a Mac
that has none of the types on file is refused, naming the type it offered and the types
known_hosts holds. Real sshd processes on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleet_macs import Mac
from prerequisites import missing
from sshd_harness import SSHD, ClientKeys, Sshd, remove, short_tmp

from hosts.mac.host import HostError
from hosts.ssh import SshHost

pytestmark = pytest.mark.ssh

# ssh-keygen's -t for each key type a known_hosts line names
KEYGEN_TYPES = {"ssh-ed25519": "ed25519", "ecdsa-sha2-nistp256": "ecdsa", "ssh-rsa": "rsa"}


def host_key(path: Path, kind: str) -> str:
    """A new key pair of this type at `path`; its public half as `<type> <base64>`."""
    subprocess.run(
        ["ssh-keygen", "-q", "-t", KEYGEN_TYPES[kind], "-N", "", "-C", "", "-f", str(path)],
        check=True,
    )
    public = path.with_suffix(".pub").read_text().split()
    assert public[0] == kind
    return f"{public[0]} {public[1]}"


def known_hosts(path: Path, port: int, *keys: str) -> str:
    path.write_text("".join(f"[127.0.0.1]:{port} {key}\n" for key in keys))
    return str(path)


def ssh_host(port: int, client: ClientKeys, known: str) -> SshHost:
    return SshHost(
        "laptop",
        "127.0.0.1",
        port=port,
        user="root",
        identity_file=str(client.identity),
        known_hosts=known,
        timeout=10.0,
    )


def refusal(host: SshHost) -> str:
    try:
        with pytest.raises(HostError) as failed:
            host.health()
    finally:
        host.close()
    assert failed.value.host == "laptop"
    return failed.value.cause


def answers(host: SshHost) -> bool:
    try:
        return bool(host.health()["host"])
    finally:
        host.close()


class MultiKeySshd:
    """An sshd with an ed25519 host key (as every test Mac has) and one more of `kind`."""

    def __init__(self, client: ClientKeys, kind: str) -> None:
        self.root = short_tmp("sk")
        config_dir = self.root / "claude"
        config_dir.mkdir()
        self.sshd = Sshd(self.root / "sshd", client, config_dir)
        self.ed25519 = self.sshd.host_public.split(maxsplit=2)[:2]
        self.other = host_key(self.root / "sshd" / "host_other", kind)
        with self.sshd.config.open("a") as config:
            config.write(f"HostKey {self.root / 'sshd' / 'host_other'}\n")
        self.sshd.start()

    @property
    def port(self) -> int:
        return self.sshd.port

    @property
    def ed25519_key(self) -> str:
        return " ".join(self.ed25519)

    def stop(self) -> None:
        self.sshd.stop()
        remove(self.root)


@pytest.fixture
def multi_key(client: ClientKeys) -> Iterator[Callable[[str], MultiKeySshd]]:
    if os.geteuid() != 0:
        missing("root, to run sshd (CI runs as root)")
    if not os.path.exists(SSHD):
        missing(f"{SSHD} (make test installs openssh-server)")
    started: list[MultiKeySshd] = []

    def start(kind: str) -> MultiKeySshd:
        server = MultiKeySshd(client, kind)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def test_a_mac_offering_a_key_type_known_hosts_does_not_hold_for_it_is_refused(
    laptop: Mac, tmp_path: Path
) -> None:
    ecdsa = host_key(tmp_path / "elsewhere", "ecdsa-sha2-nistp256")
    ed25519 = " ".join(laptop.sshd.host_public.split()[:2])
    # The control: the laptop's own ed25519 key beside the ecdsa one, and it answers.
    both = known_hosts(tmp_path / "both", laptop.port, ecdsa, ed25519)
    assert answers(ssh_host(laptop.port, laptop.client, both))

    only_ecdsa = known_hosts(tmp_path / "only_ecdsa", laptop.port, ecdsa)
    cause = refusal(ssh_host(laptop.port, laptop.client, only_ecdsa))
    name = f"[127.0.0.1]:{laptop.port}"
    assert cause.startswith(f"host key refused: {name} offered an unknown ssh-ed25519 key SHA256:")
    assert cause.endswith("known_hosts holds only ecdsa-sha2-nistp256 for it")
    assert sum("Accepted publickey" in line for line in laptop.sshd.log) == 1  # the control's


@pytest.mark.parametrize("kind", ["ecdsa-sha2-nistp256", "ssh-rsa"])
def test_a_mac_with_several_host_keys_is_reached_by_the_type_known_hosts_holds(
    multi_key: Callable[[str], MultiKeySshd], client: ClientKeys, tmp_path: Path, kind: str
) -> None:
    server = multi_key(kind)
    # Its ed25519 key alone on file: the type every client asks for first.
    first = known_hosts(tmp_path / "ed25519", server.port, server.ed25519_key)
    assert answers(ssh_host(server.port, client, first))
    # Only its other key on file: Coop asks for that type, and is shown that key.
    other = known_hosts(tmp_path / "other", server.port, server.other)
    assert answers(ssh_host(server.port, client, other))
    # The other type on file, but not this Mac's key of it: changed, not unknown.
    impostor = host_key(tmp_path / "impostor", kind)
    changed = known_hosts(tmp_path / "impostor_hosts", server.port, impostor)
    cause = refusal(ssh_host(server.port, client, changed))
    assert cause.startswith(f"host key CHANGED for [127.0.0.1]:{server.port}")
