"""fleet.toml: a fleet of one without it, each Mac from it, and one clear error naming
the file and the line for anything Coop cannot use."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hosts.fleet import NOTIFY_EVENTS, FleetError, Notify, load_fleet
from hosts.mac.local import LocalHost
from hosts.ssh import SshHost

pytestmark = pytest.mark.ssh


def fleet_error(home: Path, text: str) -> str:
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleet.toml").write_text(text)
    with pytest.raises(FleetError) as failed:
        load_fleet(home)
    return str(failed.value)


def test_no_file_is_a_fleet_of_one_named_office(tmp_path: Path) -> None:
    fleet = load_fleet(tmp_path)
    assert fleet.office == "office" and list(fleet.hosts) == ["office"]
    assert isinstance(fleet.hosts["office"], LocalHost)


def test_each_mac_becomes_an_ssh_host_with_its_settings(tmp_path: Path) -> None:
    (tmp_path / "fleet.toml").write_text(
        'office = "desk"\n[[mac]]\nname = "laptop"\nhost = "laptop.local"\nport = 2222\n'
        'user = "me"\nidentity_file = "~/.ssh/id_ed25519"\nknown_hosts = "/k"\ntimeout = 3\n'
        'deadline = 2.5\n[[mac]]\nname = "studio"\nhost = "studio"\n'
    )
    fleet = load_fleet(tmp_path)
    assert list(fleet.hosts) == ["desk", "laptop", "studio"]
    laptop, studio = fleet.host("laptop"), fleet.host("studio")
    assert isinstance(laptop, SshHost) and laptop.timeout == 3.0
    assert laptop.client.deadline == 2.5
    assert isinstance(studio, SshHost) and studio.client.deadline == 5.0  # the default
    assert (laptop.host, laptop.port, laptop.user) == ("laptop.local", 2222, "me")
    assert (laptop.identity_file, laptop.known_hosts) == ("~/.ssh/id_ed25519", "/k")
    assert fleet.host(None) is fleet.hosts["desk"]


BAD = [
    ('office = "office"\n[[mac]\nname = "x"\n', "not valid TOML", "line 2"),
    ('office = "office"\nmacs = []\n', "unknown setting 'macs'", "line 2"),
    ("office = 3\n", "office must be a non-empty string", "line 1"),
    ('[[mac]]\nname = "a"\nhost = "h"\nssh = "me@h"\n', "unknown mac setting 'ssh'", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\nport = "22"\n', "port must be a whole number", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\nport = 70000\n', "port must be 1 to 65535", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\ntimeout = 0\n', "timeout must be more than 0", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\ntimeout = true\n', "timeout must be a number", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\ndeadline = -1\n', "deadline must be more than 0", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\ndeadline = inf\n', "deadline must be more than 0", "line 4"),
    ('[[mac]]\nname = "a"\nhost = "h"\ndeadline = "5"\n', "deadline must be a number", "line 4"),
    ('[[mac]]\nname = "a"\n', "this [[mac]] has no host", "line 1"),
    ('[[mac]]\nname = ""\nhost = "h"\n', "name must not be empty", "line 2"),
    ('[[mac]]\nname = "office"\nhost = "h"\n', "mac 'office' has the office's name", "line 2"),
    (
        '[[mac]]\nname = "a"\nhost = "h"\n\n[[mac]]\nname = "a"\nhost = "k"\n',
        "two Macs named 'a'",
        "line 6",
    ),
    ('office = "o"\nnotify = "all"\n', "notify must be a [notify] table", "line 2"),
    ('[notify]\nquiet = "yes"\n', "quiet must be true or false, not 'yes'", "line 2"),
    ('[notify]\non = "expired"\n', "on must be a list of events", "line 2"),
    (
        '[notify]\nquiet = false\non = ["expired", "delivered"]\n',
        "unknown event 'delivered'",
        "line 3",
    ),
    ("[notify]\nloud = true\n", "unknown notify setting 'loud' (known: on, quiet)", "line 2"),
    ('[[mac]]\nname = "a"\nhost = "h"\n[notify]\non = [1]\n', "on must be a list", "line 5"),
]


def test_notify_defaults_to_every_event_and_reads_on_and_quiet(tmp_path: Path) -> None:
    assert load_fleet(tmp_path).notify == Notify(on=NOTIFY_EVENTS, quiet=False)
    (tmp_path / "fleet.toml").write_text('[notify]\non = ["held", "expired"]\nquiet = true\n')
    assert load_fleet(tmp_path).notify == Notify(on=("held", "expired"), quiet=True)


@pytest.mark.parametrize(("text", "problem", "line"), BAD)
def test_a_malformed_fleet_file_is_one_error_naming_the_file_and_line(
    tmp_path: Path, text: str, problem: str, line: str
) -> None:
    message = fleet_error(tmp_path, text)
    assert message.startswith(str(tmp_path / "fleet.toml"))
    assert problem in message and line in message


def test_the_cli_reports_a_malformed_fleet_file_with_exit_1(run_coop: Any, coop_home: Path) -> None:
    coop_home.mkdir(parents=True)
    (coop_home / "fleet.toml").write_text('[[mac]]\nname = "a"\nhost = "h"\nport = -1\n')
    for args in (["hosts"], ["chats"], ["chat", "show", "5b7cf1d2-8a61-4c0e-9d43-2f7e1a9c0b11"]):
        done = run_coop(*args)
        assert done.returncode == 1
        assert (
            done.stderr
            == f"coop: {coop_home}/fleet.toml, line 4: port must be 1 to 65535, not -1\n"
        )


def test_coop_chats_without_a_fleet_never_imports_paramiko(coop_home: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "coop_engine.cli",
            "--home",
            str(coop_home),
            "chats",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "paramiko" not in imported and "hosts.ssh" not in imported
