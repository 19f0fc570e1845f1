"""The fleet Mac of the ssh tests stops everything it started, even after a test left it
a host whose close raises (as a shut connection's can): no sshd outlives its test."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fleet_macs import Mac

pytestmark = pytest.mark.ssh


class Unclosable:
    """A host whose first close raises; its second (the fixture's) does not."""

    def __init__(self) -> None:
        self.closes = 0

    def close(self) -> None:
        self.closes += 1
        if self.closes == 1:
            raise EOFError("the connection was shut")


def test_a_mac_whose_host_raises_on_close_still_stops_its_sshd(
    start_mac: Callable[..., Mac],
) -> None:
    mac = start_mac("laptop")
    assert mac.sshd.process is not None and mac.sshd.process.poll() is None
    mac.hosts.append(Unclosable())  # type: ignore[arg-type]
    with pytest.raises(EOFError):
        mac.stop()
    stopped = mac.sshd.process.poll() is not None
    mac.sshd.stop()  # a Mac that fails this test leaves no sshd either
    assert stopped, "the sshd outlived a close that raised"
