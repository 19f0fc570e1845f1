"""A Mac that hangs the moment Coop asks it to start a helper costs the helper's timeout,
never the thread: paramiko waits for an exec request's answer with no timeout of its
own, so Coop bounds that wait itself (a real sshd, reached through a proxy that is
SIGSTOPped between the session's opening and the exec request)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from fleet_macs import Mac
from netdelay import DelayProxy
from waiting import wait_until

from hosts.mac.host import HostError

pytestmark = pytest.mark.ssh

TIMEOUT = 1.5


def test_a_mac_hung_between_opening_a_session_and_its_exec_costs_the_timeout(
    start_mac: Callable[..., Mac], monkeypatch: pytest.MonkeyPatch
) -> None:
    laptop = start_mac("laptop")
    proxy = DelayProxy(laptop.port, 0.01).start()
    try:
        laptop.client.trust_key(proxy.port, laptop.sshd.host_public)
        host = laptop.ssh_host(port=proxy.port, timeout=TIMEOUT, deadline=TIMEOUT)
        transport = host.transport()
        opened = transport.open_session

        def open_then_hang(*args: Any, **kwargs: Any) -> Any:
            channel = opened(*args, **kwargs)
            proxy.hang()  # the session is open; its exec request will get no answer
            return channel

        monkeypatch.setattr(transport, "open_session", open_then_hang)
        outcome: list[BaseException | None] = []

        def start() -> None:
            try:
                host.exec_channel("exit 0")
                outcome.append(None)
            except BaseException as error:
                outcome.append(error)

        thread = threading.Thread(target=start, daemon=True)
        thread.start()
        wait_until(lambda: not thread.is_alive(), "the exec request to give up")
        [error] = outcome
        assert isinstance(error, HostError)
        assert f"cannot start the helper over ssh: timed out after {TIMEOUT:g}s" in str(error)
        assert not transport.is_active()  # the next request opens a new connection
    finally:
        proxy.resume()
        proxy.stop()
