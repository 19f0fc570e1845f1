"""A hostile fleet.toml: every command that reads it stops with one line naming the
file, before touching the ledger or any Mac; none shows a traceback.

Also proved in tests/ssh/test_fleet_config.py: malformed TOML, unknown and mistyped
settings, a port out of range, duplicate and missing names, each naming its line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostilekit import GOOD_SESSION, shown_cleanly

FILES: dict[str, bytes] = {
    "not UTF-8": b'office = "\xff\xfe"\n',
    "NUL bytes": b'office = "of\x00fice"\n',
    "a table where a string goes": b"[office]\nname = 1\n",
    "deeply nested arrays": b"office = " + b"[" * 5000 + b"]" * 5000 + b"\n",
    "a mac that is a string": b'mac = "laptop"\n',
    "a megabyte of one key": b'office = "' + b"x" * (1 << 20) + b'"\nbad\n',
    "two megabytes of comment": b'office = "office"\n' + b"#" * (2 << 20) + b"\n",
}
COMMANDS = (
    ("chats",),
    ("hosts",),
    ("tick",),
    ("invite", "1", "--session", f"claude:{GOOD_SESSION}"),
    ("serve",),
)


@pytest.mark.parametrize("case", list(FILES))
def test_a_hostile_fleet_file_is_one_line_naming_it(
    run_coop: Any, coop_home: Path, case: str
) -> None:
    coop_home.mkdir(parents=True)
    (coop_home / "fleet.toml").write_bytes(FILES[case])
    for argv in COMMANDS:
        done = run_coop(*argv)
        shown_cleanly(done, (1,))
        assert done.stderr.startswith(f"coop: {coop_home}/fleet.toml"), done.stderr


def test_a_folder_in_place_of_the_fleet_file_is_one_line(run_coop: Any, coop_home: Path) -> None:
    (coop_home / "fleet.toml").mkdir(parents=True)
    for argv in COMMANDS:
        done = run_coop(*argv)
        shown_cleanly(done, (1,))


def test_a_mac_whose_address_is_a_shell_line_is_unreachable_not_run(
    run_coop: Any, coop_home: Path
) -> None:
    canary = Path("/tmp/coop-fleet-canary")
    canary.unlink(missing_ok=True)
    coop_home.mkdir(parents=True)
    (coop_home / "fleet.toml").write_text(
        f'[[mac]]\nname = "laptop"\nhost = "$(touch {canary})"\nuser = "`touch {canary}`"\n'
        "timeout = 2\n"
    )
    shown_cleanly(run_coop("hosts"), (0, 1))
    shown_cleanly(run_coop("chats"), (0, 1))
    assert not canary.exists()
