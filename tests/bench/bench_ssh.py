"""Benchmark of the ssh door: ssh_request.

One `health` request to a local sshd "Mac", three ways: over the warm Transport and
helper (what SshHost does), with a fresh `exec_command` running python3 per request on
the same Transport, and with a fresh connection per request.
"""

from __future__ import annotations

import os
import shutil
from typing import Any

from hosts import bundle
from hosts.channel import HelperClient, Stream
from hosts.ssh import ChannelStream, SshHost
from tests.bench.common import ROOT, median_seconds, report, run_main
from tests.ssh.sshd_harness import SSHD, ClientKeys, Sshd, short_tmp


def ssh_request() -> bool:
    if os.geteuid() != 0 or not os.path.exists(SSHD):
        print("BENCH name=ssh_request skipped: needs root and /usr/sbin/sshd", flush=True)
        return False
    root = short_tmp("sb")
    client = ClientKeys(root / "client")
    (root / "claude").mkdir()
    server = Sshd(root / "sshd", client, root / "claude").start()
    client.trust(server)
    settings: dict[str, Any] = {
        "port": server.port,
        "user": "root",
        "identity_file": str(client.identity),
        "known_hosts": str(client.known_hosts),
        "ssh_config": str(root / "no-ssh-config"),
    }
    warm_host = SshHost("bench", "127.0.0.1", **settings)

    def fresh_exec(length: int) -> Stream:
        channel = warm_host.exec_channel(bundle.bootstrap_command(length))
        return ChannelStream(channel.get_transport(), channel)

    def exec_per_request() -> None:
        helper = HelperClient("bench", fresh_exec)
        helper.call("health", {})
        helper.close()

    def connection_per_request() -> None:
        host = SshHost("bench", "127.0.0.1", **settings)
        host.health()
        host.close()

    try:
        warm = median_seconds(warm_host.health, repeat=101, warmup=3)
        execs = median_seconds(exec_per_request, repeat=7)
        connections = median_seconds(connection_per_request, repeat=5)
    finally:
        warm_host.close()
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
    return report(
        "ssh_request",
        execs / warm,
        minimum=10,
        warm_ms=warm * 1000,
        exec_ms=execs * 1000,
        connection_ms=connections * 1000,
    )


if __name__ == "__main__":
    os.chdir(ROOT)
    run_main([ssh_request])
