"""The fleet: this machine's name and the Macs Coop reaches (`$COOP_HOME/fleet.toml`).

No file: a fleet of one, this machine, named "office".
"""

from __future__ import annotations

from pathlib import Path

from hosts.base import Host
from hosts.local import LocalHost

DEFAULT_OFFICE = "office"


class FleetError(Exception):
    """fleet.toml cannot be used; the message names the file and the line."""


class Fleet:
    def __init__(self, office: str, hosts: dict[str, Host]) -> None:
        self.office = office
        self.hosts = hosts

    def host(self, name: str | None) -> Host:
        wanted = name or self.office
        if wanted not in self.hosts:
            known = ", ".join(sorted(self.hosts))
            raise FleetError(f"No Mac named {wanted!r} in the fleet (known: {known})")
        return self.hosts[wanted]


def load_fleet(home: Path) -> Fleet:
    path = home / "fleet.toml"
    office = DEFAULT_OFFICE
    if path.exists():
        import tomllib

        try:
            config = tomllib.loads(path.read_text())
        except tomllib.TOMLDecodeError as error:
            raise FleetError(f"{path}: {error}") from None
        office = str(config.get("office", DEFAULT_OFFICE))
    return Fleet(office=office, hosts={office: LocalHost(office)})
