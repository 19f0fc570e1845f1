"""Imports point one way: coop_tui -> coop_engine -> hosts (DESIGN.md section 2).

Each check runs in a fresh interpreter, so what this test process has imported already
cannot hide a violation.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ENGINE_MODULES = ("engine", "delivery", "takes", "views", "cli", "db")

# Import every module of `hosts` that exists, found by walking the package. A
# `__main__` module is a program, not a library: importing it would run it.
IMPORT_HOSTS = """
import importlib, pkgutil
import hosts
found = ["hosts"]
for info in pkgutil.walk_packages(hosts.__path__, "hosts."):
    if info.name.rsplit(".", 1)[-1] == "__main__":
        continue
    importlib.import_module(info.name)
    found.append(info.name)
"""


def modules_after(code: str) -> dict:
    """Run `code` in a new interpreter; report which of the watched packages it loaded."""
    probe = textwrap.dedent(code) + textwrap.dedent(
        """
        import json, sys
        loaded = {name.split(".")[0] for name in sys.modules}
        watched = ("textual", "peewee", "coop_engine", "coop_tui", "hosts")
        print(json.dumps({
            "loaded": sorted(name for name in watched if name in loaded),
            "found": globals().get("found", []),
        }))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_engine_and_hosts_never_import_textual():
    engine = "\n".join(f"import coop_engine.{name}" for name in ENGINE_MODULES)
    report = modules_after(engine + "\n" + IMPORT_HOSTS)
    assert "coop_engine" in report["loaded"] and "hosts" in report["loaded"]
    assert "textual" not in report["loaded"]
    assert "coop_tui" not in report["loaded"]


def test_hosts_import_neither_the_engine_nor_peewee():
    report = modules_after(IMPORT_HOSTS)
    assert len(report["found"]) > 1, "walking hosts found no modules"
    assert "coop_engine" not in report["loaded"]
    assert "peewee" not in report["loaded"]
    assert "textual" not in report["loaded"]


def test_coop_help_imports_neither_peewee_nor_textual():
    # -X importtime lists every module the real `python -m coop_engine.cli` imports.
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "coop_engine.cli", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "usage: coop" in done.stdout
    imported = {
        line.rsplit("|", 1)[-1].strip().split(".")[0]
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "coop_engine" in imported
    assert "peewee" not in imported
    assert "textual" not in imported
