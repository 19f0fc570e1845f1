"""What the hosts layer raises: one root, `HostsError`, for everything a Mac refuses or
cannot do. Standard library only, like the rest of hosts/mac."""

from __future__ import annotations


class HostsError(Exception):
    """The root of every error the hosts layer raises on purpose."""


class HostError(HostsError):
    """A Mac could not be asked: refused, timed out, auth failed, host key, helper crashed."""

    def __init__(self, host: str, cause: str) -> None:
        super().__init__(f"{host}: {cause}")
        self.host = host
        self.cause = cause


class NativeRefusal(HostsError):
    """The native door refused: nothing was written. `detail` says which check."""

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.detail = detail
