"""A temporary copy of the repository where one mutant at a time is applied.

The copy holds every file git lists (tracked, and untracked but not ignored), beside a
link to `../shared` as the checkout has it (tests read `../shared/fixtures`).

Its tests must import the copy's code in every process they start, and not the
checkout's: the venv's editable install maps `coop_engine`, `hosts` and `coop_tui` to
the checkout, and some tests start `coop` with an environment of their own, without
PYTHONPATH (tests/coordinator/officekit.py). So each copy gets a light venv of its own
(`python -m venv --without-pip`, a tenth of a second): one `.pth` file puts the copy on
`sys.path`, then adds the checkout venv's site-packages (its packages, and the editable
finder, which comes after the path finder and so never wins), and its `bin/` holds the
checkout venv's console scripts (`coop`, `lint-imports`...) pointed at its own python.
The tests run with that python, `sys.executable` for every child they start; PYTHONPATH
names the copy too. `check_imports` proves it on each copy before any mutant runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .mutant import Mutant

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("coop_engine", "hosts", "coop_tui")
# Variables that would make a skipped prerequisite a failure, i.e. a false kill.
UNSET = ("COOP_REQUIRE_REAL_CLAUDE", "COOP_REQUIRE_REAL_CODEX")
PROBE = (
    "import json, coop_engine, coop_tui, hosts, hosts.bundle as bundle;"
    "print(json.dumps([coop_engine.__file__, coop_tui.__file__, hosts.__file__,"
    " str(bundle.MAC)]))"
)
CANARY = 'raise SystemExit("coop-mutants canary: " + __file__)\n'
PTH = "00-coop-mutants.pth"


class CopyNotImported(Exception):
    """Code from outside the copy ran where the copy's should have."""


def listed_files(repo: Path) -> list[str]:
    """The repository's files as git lists them: tracked, and untracked but not ignored."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode("utf-8").split("\0") if name]


def _forget_bytecode(path: Path) -> None:
    """Remove the cached bytecode of `path`: a same-size patch written within the same
    second as its source would otherwise pass the cache's mtime-and-size check."""
    for cached in (path.parent / "__pycache__").glob(f"{path.stem}.*.pyc"):
        cached.unlink(missing_ok=True)


def _shared_site_packages() -> list[str]:
    """The site-packages of the interpreter running this (the checkout's venv)."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


class Tree:
    """One copy: `root` is the repository's copy, `python` its venv's interpreter, `tmp`
    the basetemp of its pytest runs."""

    def __init__(self, home: Path, repo: Path = REPO) -> None:
        self.home = home
        self.root = home / repo.name
        self.venv = home / "venv"
        self.python = self.venv / "bin" / "python"
        self.tmp = home / "t"

    @classmethod
    def make(cls, home: Path, repo: Path = REPO) -> Tree:
        """Copy the repository's files into `home`, compiled as `make` compiles them,
        with the copy's venv beside them."""
        tree = cls(home, repo)
        home.mkdir(parents=True)
        shared = repo.parent / "shared"
        if shared.is_dir():
            (home / "shared").symlink_to(shared)
        for name in listed_files(repo):
            source = repo / name
            if not source.exists() and not source.is_symlink():
                continue  # deleted in the working tree, not yet in the index
            target = tree.root / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
        tree._make_venv()
        subprocess.run(
            [str(tree.python), "-m", "compileall", "-q", *PACKAGES],
            cwd=tree.root,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        return tree

    def _make_venv(self) -> None:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.venv)], check=True)
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = self.venv / "lib" / version / "site-packages"
        lines = [str(self.root)]
        lines += [f"import site; site.addsitedir({path!r})" for path in _shared_site_packages()]
        (site / PTH).write_text("\n".join(lines) + "\n", encoding="utf-8")
        self._link_scripts(Path(sys.executable).parent)

    def _link_scripts(self, bin_dir: Path) -> None:
        """The checkout venv's console scripts, run by this venv's python instead; its
        other programs as they are."""
        ours = self.venv / "bin"
        shebang = f"#!{bin_dir / 'python'}".encode()
        for program in sorted(bin_dir.iterdir()):
            target = ours / program.name
            if target.exists() or program.name.startswith("activate") or program.is_dir():
                continue
            head = program.read_bytes()[:256]
            if head.startswith(shebang + b"\n"):
                body = program.read_bytes()[len(shebang) :]
                target.write_bytes(f"#!{self.python}".encode() + body)
                target.chmod(0o755)
            elif os.access(program, os.X_OK):
                target.symlink_to(program)

    def env(self) -> dict[str, str]:
        """The environment of the copy's tests: the copy first on PYTHONPATH too."""
        env = {k: v for k, v in os.environ.items() if k not in UNSET}
        paths = [str(self.root), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
        env["PYTHONPATH"] = os.pathsep.join(paths)
        env.pop("VIRTUAL_ENV", None)
        return env

    @contextmanager
    def replaced(self, name: str, text: str) -> Iterator[None]:
        """The copy's file `name` holds `text` inside the block, and exactly its old
        bytes and times again after it."""
        path = self.root / name
        original, info = path.read_bytes(), path.stat()
        try:
            path.write_text(text, encoding="utf-8")
            _forget_bytecode(path)
            yield
        finally:
            path.write_bytes(original)
            os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
            _forget_bytecode(path)

    @contextmanager
    def applied(self, mutant: Mutant) -> Iterator[None]:
        """The mutant applied inside the block (StaleMutant or BadMutant before any write)."""
        source = (self.root / mutant.file).read_text(encoding="utf-8")
        with self.replaced(mutant.file, mutant.patch(source)):
            yield

    def check_imports(self) -> None:
        """CopyNotImported unless the copy's packages are what its python imports, with
        the tests' environment and with a bare one (no PYTHONPATH), in an interpreter, a
        `python -m` child and the `coop` console script."""
        bare = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        for env in (self.env(), bare):
            probe = self._run([str(self.python), "-c", PROBE], env)
            if probe.returncode != 0:
                raise CopyNotImported(f"the import probe failed: {probe.stderr.strip()}")
            for path in json.loads(probe.stdout):
                if not Path(path).resolve().is_relative_to(self.root.resolve()):
                    raise CopyNotImported(f"{path} was imported instead of the copy's")
        entry_points = [
            ("coop_engine/__init__.py", [str(self.python), "-m", "coop_engine.cli", "--help"]),
            ("hosts/__init__.py", [str(self.python), "-m", "hosts.sim", "--help"]),
            ("coop_engine/__init__.py", [str(self.venv / "bin" / "coop"), "--help"]),
        ]
        for name, argv in entry_points:
            self._expect_canary(name, argv, bare)

    def _expect_canary(self, name: str, argv: list[str], env: dict[str, str]) -> None:
        """Run `argv` with a canary at the top of the copy's `name`: it must stop there."""
        original = (self.root / name).read_text(encoding="utf-8")
        with self.replaced(name, CANARY + original):
            ran = self._run(argv, env)
        said = f"coop-mutants canary: {self.root / name}"
        if said not in ran.stderr:
            shown = " ".join(argv)
            raise CopyNotImported(f"`{shown}` did not run the copy's {name}: {ran.stderr[-300:]}")

    def _run(self, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        # From the copy's parent, not the copy: the working directory must not be what
        # puts the copy on the path.
        return subprocess.run(
            argv, cwd=self.home, env=env, capture_output=True, text=True, timeout=60
        )
