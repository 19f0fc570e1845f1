"""Opening one authenticated paramiko Transport to a fleet Mac, within one time budget.

Where to connect comes from fleet.toml over `~/.ssh/config` (HostName, User, Port,
IdentityFile, HostKeyAlias, IdentitiesOnly, UserKnownHostsFile). The server's host key
must already be in known_hosts (the system and user files, or the Mac's own
`known_hosts` setting): an unknown or changed key is refused, as OpenSSH's
`StrictHostKeyChecking yes` and paramiko's `RejectPolicy` do. Every failure is a
`HostError` naming the Mac and the cause.
"""

from __future__ import annotations

import getpass
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import paramiko

from hosts.mac.host import HostError

# paramiko logs a traceback for every failed connect; with no handler configured Python
# would print it on stderr, under a clean one-line HostError.
logging.getLogger("paramiko").addHandler(logging.NullHandler())

SSH_PORT = 22
SYSTEM_KNOWN_HOSTS = "/etc/ssh/ssh_known_hosts"
USER_KNOWN_HOSTS = "~/.ssh/known_hosts"
DEFAULT_IDENTITIES = ("~/.ssh/id_ed25519", "~/.ssh/id_ecdsa", "~/.ssh/id_rsa")
# known_hosts names RSA keys "ssh-rsa"; the signatures negotiated for them are these.
RSA_SIGNATURES = ("rsa-sha2-512", "rsa-sha2-256", "ssh-rsa")


class Destination:
    """Where and as whom one Mac is reached, with every setting resolved."""

    def __init__(
        self,
        hostname: str,
        port: int,
        user: str,
        identities: list[str],
        agent: bool,
        known_hosts: list[str],
        key_alias: str,
    ) -> None:
        self.hostname = hostname
        self.port = port
        self.user = user
        self.identities = identities
        self.agent = agent
        self.known_hosts = known_hosts
        # The name known_hosts files use: "host" on port 22, "[host]:port" otherwise.
        self.key_name = key_alias if port == SSH_PORT else f"[{key_alias}]:{port}"

    @property
    def label(self) -> str:
        return f"{self.user}@{self.hostname}:{self.port}"


def _ssh_config(name: str, path: str, host: str) -> dict[str, object]:
    config_path = Path(path).expanduser()
    if not config_path.is_file():
        return {}
    try:
        return dict(paramiko.SSHConfig.from_path(str(config_path)).lookup(host))
    except Exception as error:  # paramiko raises several kinds for one bad file
        raise HostError(name, f"cannot use {config_path}: {error}") from None


def resolve(
    name: str,
    host: str,
    port: int | None = None,
    user: str | None = None,
    identity_file: str | None = None,
    known_hosts: str | None = None,
    ssh_config: str = "~/.ssh/config",
) -> Destination:
    """fleet.toml's settings, then `~/.ssh/config`'s for the `host` alias, then defaults."""
    config = _ssh_config(name, ssh_config, host)
    if "proxycommand" in config or "proxyjump" in config:
        raise HostError(
            name,
            f"{ssh_config} sets a ProxyCommand or ProxyJump for {host}; "
            "Coop connects directly and does not support proxies",
        )
    try:
        port = port or int(str(config.get("port", SSH_PORT)))
    except ValueError:
        raise HostError(
            name, f"{ssh_config}: Port {config.get('port')!r} is not a number"
        ) from None
    configured = config.get("identityfile")
    identities = [identity_file] if identity_file else []
    identities += list(configured) if isinstance(configured, list) else []
    if known_hosts:
        known = [known_hosts]
    else:
        user_files = str(config.get("userknownhostsfile", USER_KNOWN_HOSTS)).split()
        known = [SYSTEM_KNOWN_HOSTS, *user_files]
    hostname = str(config.get("hostname", host))
    return Destination(
        hostname=hostname,
        port=port,
        user=user or str(config.get("user") or getpass.getuser()),
        identities=[os.path.expanduser(path) for path in identities],
        agent=str(config.get("identitiesonly", "no")).lower() != "yes",
        known_hosts=[os.path.expanduser(path) for path in known],
        key_alias=str(config.get("hostkeyalias", hostname)),
    )


def load_known_hosts(name: str, files: list[str]) -> paramiko.HostKeys:
    keys = paramiko.HostKeys()
    for path in files:
        if not os.path.isfile(path):
            continue
        try:
            keys.load(path)
        except Exception as error:  # a malformed line raises one of several kinds
            raise HostError(name, f"cannot read known_hosts file {path}: {error}") from None
    return keys


def _open_socket(name: str, dest: Destination, timeout: float) -> socket.socket:
    where = f"{dest.hostname}:{dest.port}"
    try:
        sock = socket.create_connection((dest.hostname, dest.port), timeout=timeout)
    except socket.gaierror as error:
        raise HostError(name, f"cannot resolve {dest.hostname}: {error.strerror}") from None
    except TimeoutError:
        raise HostError(name, f"timed out after {timeout:g}s connecting to {where}") from None
    except ConnectionRefusedError:
        raise HostError(name, f"connection refused by {where} (is sshd running?)") from None
    except OSError as error:
        raise HostError(name, f"cannot connect to {where}: {error.strerror or error}") from None
    # The kernel notices a vanished peer even while paramiko's keepalive is idle.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    return sock


def _prefer_known_key_types(transport: paramiko.Transport, known: object) -> None:
    """Ask first for a key type known_hosts holds, as OpenSSH does, so a server with
    several host keys is not refused for showing one we never saw."""
    if not known:
        return
    options = transport.get_security_options()
    wanted: list[str] = []
    for key_type in known.keys():  # type: ignore[attr-defined]
        wanted += list(RSA_SIGNATURES) if key_type == "ssh-rsa" else [key_type]
    first = [kind for kind in wanted if kind in options.key_types]
    options.key_types = first + [kind for kind in options.key_types if kind not in first]


def _handshake(
    name: str, transport: paramiko.Transport, dest: Destination, left: float, timeout: float
) -> None:
    done = threading.Event()
    transport.banner_timeout = left
    transport.handshake_timeout = left
    transport.start_client(event=done)
    silent = (
        f"timed out after {timeout:g}s waiting for ssh from {dest.hostname}:{dest.port} "
        "(the connection was accepted but the server did not answer)"
    )
    if not done.wait(left):
        raise HostError(name, silent)
    if not transport.is_active():
        error = transport.get_exception()
        if isinstance(error, paramiko.SSHException) and isinstance(error.__context__, TimeoutError):
            raise HostError(name, silent)  # paramiko's own banner timeout came first
        raise HostError(name, f"ssh handshake with {dest.hostname}:{dest.port} failed: {error}")


def _check_host_key(
    name: str, transport: paramiko.Transport, dest: Destination, known: paramiko.HostKeys
) -> None:
    """RejectPolicy, with messages that say what is wrong and what to do."""
    offered = transport.get_remote_server_key()
    kind, fingerprint = offered.get_name(), offered.fingerprint
    ours = known.lookup(dest.key_name)
    files = ", ".join(dest.known_hosts)
    if not ours:
        raise HostError(
            name,
            f"host key refused: {dest.key_name} is unknown ({kind} {fingerprint} is in none of "
            f"{files}); check the fingerprint on the Mac and add its key to known_hosts",
        )
    expected = ours.get(kind)
    if expected is None:
        raise HostError(
            name,
            f"host key refused: {dest.key_name} offered an unknown {kind} key {fingerprint}; "
            f"known_hosts holds only {', '.join(ours.keys())} for it",
        )
    if expected != offered:
        raise HostError(
            name,
            f"host key CHANGED for {dest.key_name}: known_hosts ({files}) has "
            f"{expected.fingerprint}, the server offered {fingerprint}; refusing to connect "
            "(if the Mac's keys really changed, replace its line in known_hosts)",
        )


def _keys(dest: Destination, notes: list[str]) -> Iterator[tuple[str, paramiko.PKey]]:
    """Identity files named for this Mac, then the agent's keys, then the default files
    (only when no identity file was named), as OpenSSH orders them."""
    for path in dest.identities:
        key = _load_key(path, notes, named=True)
        if key is not None:
            yield path, key
    if dest.agent:
        try:
            agent = paramiko.Agent()
        except (paramiko.SSHException, OSError) as error:
            notes.append(f"ssh agent unusable: {error}")
        else:
            try:
                for key in agent.get_keys():
                    yield f"agent key {key.fingerprint}", key
            finally:
                agent.close()
    if not dest.identities:
        for path in DEFAULT_IDENTITIES:
            key = _load_key(os.path.expanduser(path), notes, named=False)
            if key is not None:
                yield path, key


def _load_key(path: str, notes: list[str], named: bool) -> paramiko.PKey | None:
    try:
        return paramiko.PKey.from_path(path)
    except FileNotFoundError:
        if named:
            notes.append(f"identity file {path} not found")
    except paramiko.PasswordRequiredException:
        notes.append(f"{path} needs a passphrase (add it to the ssh agent)")
    except (paramiko.SSHException, OSError, ValueError) as error:
        notes.append(f"{path} unusable: {error}")
    return None


def _authenticate(name: str, transport: paramiko.Transport, dest: Destination, left: float) -> None:
    transport.auth_timeout = left
    notes: list[str] = []
    tried: list[str] = []
    for label, key in _keys(dest, notes):
        tried.append(label)
        try:
            transport.auth_publickey(dest.user, key)
        except paramiko.BadAuthenticationType as error:
            allowed = ", ".join(error.allowed_types)
            raise HostError(
                name, f"auth failed for {dest.label}: public keys not accepted (allows {allowed})"
            ) from None
        except paramiko.AuthenticationException:
            continue
        except (paramiko.SSHException, OSError, EOFError) as error:
            raise HostError(name, f"auth failed for {dest.label}: {error}") from None
        if transport.is_authenticated():
            return
    detail = "; ".join([f"tried {', '.join(tried) or 'no key'}", *notes])
    raise HostError(name, f"auth failed for {dest.label}: no key was accepted ({detail})")


def connect(name: str, dest: Destination, timeout: float) -> paramiko.Transport:
    """An authenticated Transport, or HostError; all of it within `timeout` seconds."""
    deadline = time.monotonic() + timeout

    def left() -> float:
        return max(0.05, deadline - time.monotonic())

    known = load_known_hosts(name, dest.known_hosts)
    transport = paramiko.Transport(_open_socket(name, dest, timeout))
    try:
        _prefer_known_key_types(transport, known.lookup(dest.key_name))
        _handshake(name, transport, dest, left(), timeout)
        _check_host_key(name, transport, dest, known)
        _authenticate(name, transport, dest, left())
    except BaseException:
        transport.close()
        raise
    return transport
