"""Imports point one way: coop_tui -> coop_engine -> hosts (DESIGN.md section 2).

The import contracts in pyproject.toml keep every "never" between the folders; these
tests run them, check that their lists are complete, and check what only a fresh
interpreter can show (which packages a module really loads). Each such check runs in a
new interpreter, so what this test process has imported already cannot hide a violation.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]

# Import every module of a package, found by walking it. A `__main__` module is a
# program, not a library (importing it would run it); the launcher is the one engine
# module allowed to open the app.
IMPORT_ALL = """
import importlib, pkgutil
found = []
for root in {roots!r}:
    package = importlib.import_module(root)
    found.append(root)
    for info in pkgutil.walk_packages(package.__path__, root + "."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf == "__main__" or info.name == "coop_engine.cli.launcher":
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


def contract(name_starts: str) -> dict:
    (found,) = [c for c in CONTRACTS["contracts"] if c["name"].startswith(name_starts)]
    return found


def test_import_contracts_are_kept():
    lint = Path(sys.executable).with_name("lint-imports")
    done = subprocess.run([str(lint)], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    kept = len(CONTRACTS["contracts"])
    assert f"Contracts: {kept} kept, 0 broken." in done.stdout


def test_the_rules_contract_names_every_module_of_the_ledger():
    # A module added to coop_engine/ is one of the ledger's rules until it moves to the
    # loop or the CLI: the contract must check it from the day it lands.
    listed = set(contract("The ledger and its rules")["source_modules"])
    top_level = {
        f"coop_engine.{path.stem}"
        for path in (REPO / "coop_engine").glob("*.py")
        if path.stem != "__init__"
    }
    packages = {
        f"coop_engine.{path.parent.name}"
        for path in (REPO / "coop_engine").glob("*/__init__.py")
        if path.parent.name not in ("loop", "cli")
    }
    assert listed == top_level | packages


def test_the_launcher_is_the_only_exception():
    ignored = contract("Only the CLI's launcher")["ignore_imports"]
    assert ignored == ["coop_engine.cli.launcher -> coop_tui.app"]


def test_hosts_mac_imports_only_the_standard_library_and_itself():
    # What runs on a Mac is stdlib only (macOS's stock python3 has nothing else).
    foreign = []
    for path in sorted((REPO / "hosts" / "mac").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] if node.level == 0 else []
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                own = name == "hosts.mac" or name.startswith("hosts.mac.")
                if not own and top not in sys.stdlib_module_names and top != "__future__":
                    foreign.append(f"{path.name}: {name}")
    assert foreign == []


def test_engine_and_hosts_never_import_textual():
    report = modules_after(IMPORT_ALL.format(roots=("coop_engine", "hosts")))
    assert "coop_engine.loop.doors.claude" in report["found"]
    assert "coop_engine.queries.envelopes" in report["found"]
    assert "hosts.mac.helper" in report["found"]
    assert "textual" not in report["loaded"]
    assert "coop_tui" not in report["loaded"]


def test_hosts_import_neither_the_engine_nor_peewee():
    report = modules_after(IMPORT_ALL.format(roots=("hosts",)))
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


def import_cycles(*packages: str) -> list[list[str]]:
    """Every set of modules that import one another round (Tarjan's strongly connected
    components of more than one module), TYPE_CHECKING imports included."""
    import grimp

    graph = grimp.build_graph(*packages)
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        order[module] = low[module] = len(order)
        stack.append(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in order:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in stack:
                low[module] = min(low[module], order[imported])
        if low[module] == order[module]:
            component = []
            while (popped := stack.pop()) != module:
                component.append(popped)
            if component:
                cycles.append(sorted([module, *component]))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return cycles


def test_no_package_of_coop_has_an_import_cycle():
    assert import_cycles("coop_engine", "coop_tui", "hosts") == []


def test_the_cycle_finder_finds_a_cycle(tmp_path, monkeypatch):
    package = tmp_path / "circle"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from circle import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from circle import a\n"
    )
    (package / "c.py").write_text("from circle import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("circle") == [["circle.a", "circle.b"]]
