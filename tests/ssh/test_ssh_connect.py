"""Reaching a Mac over real OpenSSH: host keys under RejectPolicy, ~/.ssh/config and
the agent, a reused Transport, and every failure as a HostError naming the Mac."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fleet_macs import Mac
from sshd_harness import SilentServer, free_port, keygen, short_tmp
from waiting import wait_until

import hosts.ssh
from hosts.mac.host import HostError
from hosts.mac.native import frame
from hosts.ssh import SshHost

pytestmark = pytest.mark.ssh
PATIENCE = 30.0  # bounds a hang only


def failure(host: SshHost) -> HostError:
    with pytest.raises(HostError) as failed:
        host.health()
    assert failed.value.host == host.name and str(failed.value).startswith(f"{host.name}: ")
    return failed.value


def test_unknown_host_key_is_refused_with_a_message_that_says_so_and_names_the_mac(
    start_mac: Callable[..., Mac],
) -> None:
    stranger = start_mac("stranger", trusted=False)
    cause = failure(stranger.ssh_host()).cause
    assert cause.startswith(f"host key refused: [127.0.0.1]:{stranger.port} is unknown")
    assert "SHA256:" in cause and str(stranger.client.known_hosts) in cause
    assert not any("Accepted publickey" in line for line in stranger.sshd.log)


def test_changed_host_key_is_refused_and_names_both_fingerprints(
    laptop: Mac, tmp_path: Path
) -> None:
    impostor_key = keygen(tmp_path / "impostor")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{laptop.port} {impostor_key}\n")
    cause = failure(laptop.ssh_host(known_hosts=str(known))).cause
    assert cause.startswith(f"host key CHANGED for [127.0.0.1]:{laptop.port}")
    assert cause.count("SHA256:") == 2


def test_sshd_down_is_connection_refused(laptop: Mac) -> None:
    host = laptop.ssh_host(port=free_port())
    assert "connection refused by 127.0.0.1:" in failure(host).cause


class _Frozen:
    """`time` for hosts.ssh with its monotonic clock stopped: "asked again at once"."""

    def __init__(self) -> None:
        self.now = time.monotonic()

    def monotonic(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)


def test_a_server_that_accepts_and_never_answers_costs_its_timeout_and_no_more(
    laptop: Mac, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted in connections, not seconds: the one connection is given up on after the
    timeout (the cause says which), and asked again within that timeout the Mac gets no
    second connection, the same failure at once."""
    silent = SilentServer()
    try:
        host = laptop.ssh_host(port=silent.port, timeout=1.0)
        cause = failure(host).cause
        assert cause.startswith("timed out after 1s waiting for ssh from 127.0.0.1:")
        wait_until(lambda: len(silent.accepted) == 1, "the one connection accepted")
        (connection,) = silent.accepted
        connection.settimeout(PATIENCE)
        said = b""
        while chunk := connection.recv(4096):  # its banner, then EOF: it hung up
            said += chunk
        assert said.startswith(b"SSH-2.0-"), said
        # Asked again at once (the clock hosts.ssh reads stopped): no second connection.
        monkeypatch.setattr(hosts.ssh, "time", _Frozen())
        assert failure(host).cause == cause
        # A probe connection after it: had the second ask connected, the server would
        # have accepted that connection first.
        with socket.create_connection(("127.0.0.1", silent.port), timeout=PATIENCE):
            wait_until(lambda: len(silent.accepted) >= 2, "the probe connection accepted")
        assert len(silent.accepted) == 2, "the Mac was connected to twice within its timeout"
    finally:
        silent.close()


def test_a_key_the_mac_does_not_authorize_is_auth_failed(laptop: Mac, tmp_path: Path) -> None:
    keygen(tmp_path / "other")
    cause = failure(laptop.ssh_host(identity_file=str(tmp_path / "other"))).cause
    assert cause.startswith(f"auth failed for root@127.0.0.1:{laptop.port}: no key was accepted")


def test_one_transport_is_reused_and_reopened_when_it_died(laptop: Mac) -> None:
    host = laptop.ssh_host()
    host.health()
    transport = host.transport()
    for _ in range(5):
        host.health()
    assert host.transport() is transport
    assert sum("Accepted publickey" in line for line in laptop.sshd.log) == 1
    transport.close()
    assert host.health()["host"] == "laptop"
    assert host.transport() is not transport


def test_a_connection_shut_under_a_running_helper_is_the_mac_unreachable_not_a_crash(
    laptop: Mac, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = laptop.ssh_host()
    host.health()
    # What a send meets when another thread's Transport.close has just shut the socket
    # while the channels still look open: paramiko's packetizer raises EOFError. (Shutting
    # the real socket races the Transport's own thread, which may notice first.)
    # Every message after fails so, closing the channel included (seen in a side-by-side
    # run: that close's EOFError stopped serve after a request timed out).
    transport = host.transport()

    def shut(data: object) -> None:
        raise EOFError

    monkeypatch.setattr(transport, "_send_user_message", shut)
    assert failure(host).cause.startswith("helper crashed during health")
    assert host.health()["host"] == "laptop"  # the next request opens it anew
    assert host.transport() is not transport


def test_a_helper_killed_mid_session_is_started_again_by_the_next_request(laptop: Mac) -> None:
    host = laptop.ssh_host()
    first = host.client.hello
    pid = host.health()["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not host.client.running(), "the helper seen dead")
    assert host.health()["pid"] != pid
    assert host.client.hello is not first


def test_ssh_config_host_alias_hostname_user_port_and_identity_file_are_honoured(
    laptop: Mac, private_ssh_home: Path
) -> None:
    (private_ssh_home / ".ssh" / "config").write_text(
        "Host laptop-alias\n"
        "  HostName 127.0.0.1\n"
        f"  Port {laptop.port}\n"
        "  User root\n"
        f"  IdentityFile {laptop.client.identity}\n"
    )
    host = SshHost("laptop", "laptop-alias", known_hosts=str(laptop.client.known_hosts))
    laptop.hosts.append(host)
    assert host.health()["host"] == "laptop"


def test_user_known_hosts_are_read_when_the_mac_names_none(
    laptop: Mac, private_ssh_home: Path
) -> None:
    known = private_ssh_home / ".ssh" / "known_hosts"
    known.write_text(laptop.sshd.known_hosts_line())
    assert laptop.ssh_host(known_hosts=None).health()["host"] == "laptop"


def answers(env: dict[str, str]) -> bool:
    listed = subprocess.run(["ssh-add", "-l"], env=env, capture_output=True)
    return listed.returncode != 2


@pytest.fixture
def agent(laptop: Mac, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    folder = short_tmp("sa")
    sock = str(folder / "agent.sock")
    process = subprocess.Popen(["ssh-agent", "-D", "-a", sock], stdout=subprocess.DEVNULL)
    try:
        env = {**os.environ, "SSH_AUTH_SOCK": sock}
        # The socket's file is there once bound, before the agent listens ("Connection
        # refused"); `ssh-add -l` exits 2 only while it cannot reach the agent.
        wait_until(lambda: answers(env), "the agent answering on its socket")
        subprocess.run(["ssh-add", "-q", str(laptop.client.identity)], env=env, check=True)
        monkeypatch.setenv("SSH_AUTH_SOCK", sock)
        yield sock
    finally:
        process.terminate()
        process.wait(5)


def test_keys_in_the_ssh_agent_are_used(laptop: Mac, agent: str) -> None:
    assert laptop.ssh_host(identity_file=None).health()["host"] == "laptop"


def test_session_ids_and_names_full_of_shell_metacharacters_reach_the_mac_unchanged(
    laptop: Mac,
) -> None:
    marker = short_tmp("sp") / "ran"
    nasty = f"x';touch {marker};\"$(touch {marker})`touch {marker}`|&<>*?$HOME\\"
    session_id = f"{nasty}\n$(id)"
    chat = laptop.chat("--name", nasty)
    chat.rewrite_entry(sessionId=session_id)  # what a registry may hold is not up to Coop
    host = laptop.ssh_host(name=f"mac {nasty}")
    (seen,) = host.chats()["chats"]
    assert (seen["session_id"], seen["name"], seen["host"]) == (session_id, nasty, host.name)
    pinned = host.target(session_id)
    line = frame(session_id, "m-1", nasty).decode()
    assert host.send_frame(pinned, session_id, line)["ok"] is True
    (received,) = wait_until(chat.frames, "the frame received")
    assert received["session_id"] == session_id and received["message"]["content"] == nasty
    assert not marker.exists()
