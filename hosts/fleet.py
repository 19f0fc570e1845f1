"""The fleet: this machine's name and the Macs Coop reaches (`$COOP_HOME/fleet.toml`).

    office = "office"            # this machine's name in the fleet
    [[mac]]
    name = "laptop"
    host = "laptop.local"        # or an address, or a Host alias from ~/.ssh/config
    port = 22                    # optional
    user = "me"                  # optional
    identity_file = "~/.ssh/id_ed25519"   # optional
    known_hosts = "~/.ssh/known_hosts"    # optional; default: system + user files
    timeout = 10                 # optional, seconds: the most connecting may cost
    deadline = 5                 # optional, seconds: the most one request may cost; a
                                 # Mac past it is unreachable until it answers again
    codex = "/opt/codex/bin/codex"   # optional: that Mac's `codex`; else the one on PATH

A top-level `codex = "..."` names this machine's own `codex` the same way. A `[notify]`
table says which events reach Dad outside the app (a desktop notification, else the
terminal's bell), while `coop serve` runs:

    [notify]
    on = ["expired", "conflict", "held", "adoption-refused", "overdue"]   # the default
    quiet = true                 # optional: nothing outside the app at all

No file: a fleet of one, this machine, named "office". A file Coop cannot use is one
FleetError naming the file and, when there is one, the line. paramiko is imported only
when a Mac is configured: `coop chats` on a lone Mac stays as cheap as before.
"""

from __future__ import annotations

import re
from pathlib import Path

from hosts.mac.host import Host, HostsError
from hosts.mac.local import LocalHost

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

DEFAULT_OFFICE = "office"
DEFAULT_TIMEOUT = 10.0
DEFAULT_DEADLINE = 5.0
MAX_FLEET_BYTES = 1 << 20  # a fleet of Macs is a few hundred bytes a Mac
TOP_KEYS = ("office", "mac", "codex", "notify")
# The events that need a decision from Dad, as `[notify] on` names them (the engine's
# alerts are of these kinds; a test keeps the two lists one).
NOTIFY_EVENTS = ("expired", "conflict", "held", "adoption-refused", "overdue", "not-sent")
NOTIFY_KEYS = ("on", "quiet")
# key: (types accepted, what the message calls it)
MAC_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "host": ((str,), "a string"),
    "port": ((int,), "a whole number"),
    "user": ((str,), "a string"),
    "identity_file": ((str,), "a string"),
    "known_hosts": ((str,), "a string"),
    "timeout": ((int, float), "a number of seconds"),
    "deadline": ((int, float), "a number of seconds"),
    "codex": ((str,), "the path of an executable"),
}
# Patterns, compiled on first use: only a file with a mistake needs them.
MAC_HEADER = r"^\s*\[\[\s*mac\s*\]\]"
TABLE_HEADER = r"^\s*\["
NOTIFY_HEADER = r"^\s*\[\s*notify\s*\]"


class FleetError(HostsError):
    """fleet.toml cannot be used; the message names the file and the line."""


class Notify:
    """Which events reach Dad outside the app; quiet: none."""

    # A plain class: `coop chats` loads this module, and dataclasses costs milliseconds.
    __slots__ = ("on", "quiet")

    def __init__(self, on: tuple[str, ...] = NOTIFY_EVENTS, quiet: bool = False) -> None:
        self.on = on
        self.quiet = quiet

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Notify) and (self.on, self.quiet) == (other.on, other.quiet)

    def __hash__(self) -> int:
        return hash((self.on, self.quiet))

    def __repr__(self) -> str:
        return f"Notify(on={self.on!r}, quiet={self.quiet!r})"


class Fleet:
    def __init__(self, office: str, hosts: dict[str, Host], notify: Notify | None = None) -> None:
        self.office = office
        self.hosts = hosts
        self.notify = notify or Notify()

    def host(self, name: str | None) -> Host:
        wanted = name or self.office
        if wanted not in self.hosts:
            known = ", ".join(sorted(self.hosts))
            raise FleetError(f"No Mac named {wanted!r} in the fleet (known: {known})")
        return self.hosts[wanted]

    def close(self) -> None:
        """Release every Mac's connection."""
        for host in self.hosts.values():
            host.close()


def _line_of(text: str, mac: int | None, key: str | None) -> int | None:
    """The line of `key` at the top (mac None) or in the mac-th [[mac]] table, or of
    that table's header when `key` is None."""
    table = -1
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(MAC_HEADER, line):
            table += 1
            if mac == table and key is None:
                return number
            continue
        if re.match(TABLE_HEADER, line):
            table = -2  # some other table: not a place we look
            continue
        inside = table == -1 if mac is None else table == mac
        if inside and key is not None and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None


def _line_in_notify(text: str, key: str | None) -> int | None:
    """The line of `key` in the [notify] table, or of its header when `key` is None."""
    inside = False
    for number, line in enumerate(text.splitlines(), start=1):
        if re.match(NOTIFY_HEADER, line):
            if key is None:
                return number
            inside = True
        elif re.match(TABLE_HEADER, line):
            inside = False
        elif inside and key is not None and re.match(rf"^\s*{re.escape(key)}\s*=", line):
            return number
    return None


class _Checker:
    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.text = text

    def fail(self, problem: str, mac: int | None = None, key: str | None = None) -> FleetError:
        line = _line_of(self.text, mac, key)
        where = f"{self.path}, line {line}" if line else str(self.path)
        return FleetError(f"{where}: {problem}")

    def fail_notify(self, problem: str, key: str | None = None) -> FleetError:
        line = _line_in_notify(self.text, key) or _line_of(self.text, None, "notify")
        where = f"{self.path}, line {line}" if line else str(self.path)
        return FleetError(f"{where}: {problem}")

    def notify(self, config: dict[str, Any]) -> Notify:
        table = config.get("notify", {})
        if not isinstance(table, dict):
            raise self.fail("notify must be a [notify] table", key="notify")
        for key in table:
            if key not in NOTIFY_KEYS:
                known = ", ".join(NOTIFY_KEYS)
                raise self.fail_notify(f"unknown notify setting {key!r} (known: {known})", key)
        quiet = table.get("quiet", False)
        if not isinstance(quiet, bool):
            raise self.fail_notify(f"quiet must be true or false, not {quiet!r}", "quiet")
        on = table.get("on", list(NOTIFY_EVENTS))
        known = ", ".join(NOTIFY_EVENTS)
        if not isinstance(on, list) or not all(isinstance(event, str) for event in on):
            raise self.fail_notify(f"on must be a list of events ({known}), not {on!r}", "on")
        for event in on:
            if event not in NOTIFY_EVENTS:
                problem = f"on names an unknown event {event!r} (known: {known})"
                raise self.fail_notify(problem, "on")
        return Notify(on=tuple(dict.fromkeys(on)), quiet=quiet)

    def office(self, config: dict[str, Any]) -> str:
        for key in config:
            if key not in TOP_KEYS:
                known = "office, codex, [[mac]], [notify]"
                raise self.fail(f"unknown setting {key!r} (known: {known})", key=key)
        codex = config.get("codex")
        if codex is not None and (not isinstance(codex, str) or not codex.strip()):
            raise self.fail("codex must be the path of an executable", key="codex")
        office = config.get("office", DEFAULT_OFFICE)
        if not isinstance(office, str) or not office.strip():
            raise self.fail("office must be a non-empty string", key="office")
        return office

    def macs(self, config: dict[str, Any], office: str) -> list[dict[str, Any]]:
        tables = config.get("mac", [])
        if not isinstance(tables, list):
            raise self.fail("mac must be [[mac]] tables", key="mac")
        seen: dict[str, int] = {}
        macs = []
        for index, table in enumerate(tables):
            if not isinstance(table, dict):
                raise self.fail("each mac must be a [[mac]] table", mac=index)
            mac = self.mac(table, index)
            if mac["name"] == office:
                raise self.fail(f"mac {mac['name']!r} has the office's name", index, "name")
            if mac["name"] in seen:
                problem = (
                    f"two Macs named {mac['name']!r} (the first is Mac {seen[mac['name']] + 1})"
                )
                raise self.fail(problem, index, "name")
            seen[mac["name"]] = index
            macs.append(mac)
        return macs

    def mac(self, table: dict[str, Any], index: int) -> dict[str, Any]:
        for key, value in table.items():
            if key not in MAC_KEYS:
                known = ", ".join(MAC_KEYS)
                raise self.fail(f"unknown mac setting {key!r} (known: {known})", index, key)
            kinds, called = MAC_KEYS[key]
            if isinstance(value, bool) or not isinstance(value, kinds):
                raise self.fail(f"{key} must be {called}, not {value!r}", index, key)
            if isinstance(value, str) and not value.strip():
                raise self.fail(f"{key} must not be empty", index, key)
        for key in ("name", "host"):
            if key not in table:
                raise self.fail(f"this [[mac]] has no {key}", index)
        port = table.get("port")
        if port is not None and not 0 < port < 65536:
            raise self.fail(f"port must be 1 to 65535, not {port}", index, "port")
        budgets = {"timeout": DEFAULT_TIMEOUT, "deadline": DEFAULT_DEADLINE}
        for key, default in budgets.items():
            budgets[key] = float(table.get(key, default))
            if not 0 < budgets[key] < float("inf"):
                problem = f"{key} must be more than 0 seconds, not {table[key]}"
                raise self.fail(problem, index, key)
        return {**table, **budgets}


def read_fleet(path: Path) -> tuple[str, list[dict[str, Any]]]:
    """The office's name and each Mac's settings, checked, the office's own first (its
    name and, when given, its `codex`); FleetError otherwise."""
    office, macs, _ = read_fleet_config(path)
    return office, macs


def read_fleet_config(path: Path) -> tuple[str, list[dict[str, Any]], Notify]:
    """As read_fleet, and the [notify] table, checked."""
    import tomllib

    try:
        with open(path, "rb") as file:
            data = file.read(MAX_FLEET_BYTES + 1)
        if len(data) > MAX_FLEET_BYTES:
            raise FleetError(f"{path}: larger than {MAX_FLEET_BYTES:,} bytes: not a fleet")
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise FleetError(f"{path}: cannot read: {error}") from None
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise FleetError(f"{path}: not valid TOML: {error}") from None
    except RecursionError:  # tomllib recurses once per nested array or table
        raise FleetError(f"{path}: not valid TOML: nested too deeply") from None
    checker = _Checker(path, text)
    office = checker.office(config)
    own = {"name": office, **({"codex": config["codex"]} if "codex" in config else {})}
    macs = checker.macs(config, office)
    return office, [own, *macs], checker.notify(config)


def load_fleet(home: Path) -> Fleet:
    """The fleet `home/fleet.toml` describes: the office as LocalHost, each Mac as an
    SshHost that connects on its first call."""
    path = home / "fleet.toml"
    if not path.exists():
        return Fleet(DEFAULT_OFFICE, {DEFAULT_OFFICE: LocalHost(DEFAULT_OFFICE)})
    office, (own, *macs), notify = read_fleet_config(path)
    hosts: dict[str, Host] = {office: LocalHost(office, codex=own.get("codex"))}
    if macs:
        from hosts.ssh import SshHost

        for mac in macs:
            hosts[mac["name"]] = SshHost(**mac)
    return Fleet(office=office, hosts=hosts, notify=notify)
