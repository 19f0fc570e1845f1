"""Run the curated mutation suite: `python -m tests.mutants.run [--only ID ...] [--jobs 2]`.

Each mutant is applied to a temporary copy of the repository (one copy per job), its
tests run there, and the copy is put back before the next. Outcomes:

- killed: pytest exited 1, some test failed (or errored in a fixture) with the mutant in;
- survived: pytest exited 0, every test passed: the rule is not guarded;
- stale: the mutant's old text is missing from its file or occurs more than once;
- bad: the patched file does not compile (a mutant must break a rule, not the syntax);
- missing: a test file the mutant names does not exist (yet);
- error: pytest could not run the tests (exit 2: collection or import failed, 3: internal
  error, 4: usage, e.g. an unknown node id, 5: no test ran). An error is never a kill: a
  mutant that stops the tests from being collected has broken an import, not the rule,
  and must be rewritten;
- timeout: the tests did not finish within the mutant's timeout.

Prints one line per mutant, then exactly `MUTANTS total=N killed=K`, then every mutant
not killed with its outcome. Exits 1 unless every mutant selected was killed.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from .catalog import MUTANTS
from .mutant import BadMutant, Mutant, StaleMutant
from .tree import Tree

# Stop at the first failure; no cache written into the copy; the hypothesis and
# textual-snapshot plugins left out: importing them costs seconds per run, and no test a
# mutant names needs them (@given runs without the plugin; test_catalog.py refuses a
# mutant naming a snapshot test).
PYTEST = [
    "-m",
    "pytest",
    "-x",
    "-q",
    "--no-header",
    "-rfE",
    "-p",
    "no:cacheprovider",
    "-p",
    "no:hypothesispytest",
    "-p",
    "no:textual-snapshot",
]
ERRORS = {2: "collection or import failed", 3: "internal error", 4: "usage", 5: "no test ran"}
FAILED_LINE = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.M)
GRACE = 10.0  # seconds between asking a timed-out pytest to stop and killing it


@dataclass(frozen=True)
class Result:
    mutant: Mutant
    outcome: str
    seconds: float
    detail: str = ""

    def line(self) -> str:
        return f"{self.outcome.upper():<9}{self.mutant.id:<46}{self.seconds:6.1f}s  {self.detail}"


@dataclass(frozen=True)
class Ran:
    """One pytest run: its exit code (None: timed out) and its output."""

    code: int | None
    output: str


def pytest(tree: Tree, args: Sequence[str], timeout: float) -> Ran:
    """Run pytest with `args` in the copy; a run past `timeout` is interrupted (its teardown may
    run), then killed with everything it started in its session."""
    argv = [str(tree.python), *PYTEST, f"--basetemp={tree.tmp}", *args]
    proc = subprocess.Popen(
        argv,
        cwd=tree.root,
        env=tree.env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = proc.communicate(timeout=timeout)
        return Ran(proc.returncode, output)
    except subprocess.TimeoutExpired:
        _stop(proc)
        output, _ = proc.communicate()
        return Ran(None, output)


def _stop(proc: subprocess.Popen[str]) -> None:
    """SIGINT to the run's process group, then SIGKILL if it is still there."""
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def judge(ran: Ran, timeout: float) -> tuple[str, str]:
    """The outcome of one mutant's run, and what to say about it."""
    if ran.code is None:
        return "timeout", f"not finished in {timeout:g} s"
    failed = FAILED_LINE.search(ran.output)
    if ran.code == 1:
        return "killed", f"by {failed.group(1)}" if failed else "a test failed"
    if ran.code == 0:
        return "survived", "every test passed"
    why = ERRORS.get(ran.code, f"pytest exit {ran.code}")
    tail = " | ".join(line for line in ran.output.strip().splitlines()[-3:])
    return "error", f"{why}: {tail[-300:]}"


def run_mutant(tree: Tree, mutant: Mutant) -> Result:
    """Apply the mutant in the copy, run its tests, put the copy back."""
    start = time.monotonic()
    missing = [name for name in mutant.test_files() if not (tree.root / name).exists()]
    if missing:
        return Result(mutant, "missing", 0.0, "no test file " + ", ".join(missing))
    try:
        with tree.applied(mutant):
            ran = pytest(tree, mutant.pytest_args(), mutant.timeout)
    except StaleMutant as stale:
        return Result(mutant, "stale", 0.0, str(stale))
    except BadMutant as bad:
        return Result(mutant, "bad", 0.0, str(bad))
    outcome, detail = judge(ran, mutant.timeout)
    return Result(mutant, outcome, time.monotonic() - start, detail)


def run_baseline(tree: Tree, mutant: Mutant) -> Result:
    """The mutant's tests on the unmutated copy (`--baseline`): they must pass there, or
    a kill would prove nothing."""
    start = time.monotonic()
    ran = pytest(tree, mutant.pytest_args(), mutant.timeout)
    outcome, detail = judge(ran, mutant.timeout)
    # Without the mutant, a kill is a test failing on the code as it is.
    outcome = {"survived": "passing", "killed": "failing"}.get(outcome, outcome)
    return Result(mutant, outcome, time.monotonic() - start, "" if ran.code == 0 else detail)


def run_all(
    mutants: Sequence[Mutant], trees: Sequence[Tree], step: Callable[[Tree, Mutant], Result]
) -> list[Result]:
    """Each mutant through `step` in one of the copies, a thread per copy; each result
    printed as it comes. Returned in the catalog's order."""
    todo: queue.Queue[Mutant] = queue.Queue()
    for mutant in mutants:
        todo.put(mutant)
    results: dict[str, Result] = {}
    printing = threading.Lock()

    def work(tree: Tree) -> None:
        while True:
            try:
                mutant = todo.get_nowait()
            except queue.Empty:
                return
            result = step(tree, mutant)
            with printing:
                results[mutant.id] = result
                print(result.line(), flush=True)

    workers = [threading.Thread(target=work, args=(tree,)) for tree in trees]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return [results[mutant.id] for mutant in mutants]


def make_trees(workspace: Path, jobs: int) -> list[Tree]:
    """One checked copy per job."""
    trees = [Tree.make(workspace / str(index)) for index in range(jobs)]
    for tree in trees:
        tree.check_imports()
    return trees


def select(only: Sequence[str] | None) -> list[Mutant]:
    """The mutants named (all when None); SystemExit naming any unknown id."""
    if not only:
        return list(MUTANTS)
    known = {mutant.id: mutant for mutant in MUTANTS}
    unknown = [name for name in only if name not in known]
    if unknown:
        raise SystemExit(f"unknown mutant id: {', '.join(unknown)}")
    return [known[name] for name in dict.fromkeys(only)]


def report(results: Sequence[Result], seconds: float, baseline: bool) -> int:
    """The summary lines; the exit status (0 only when every mutant was killed, or for
    --baseline, every test set passed)."""
    wanted = "passing" if baseline else "killed"
    good = sum(1 for result in results if result.outcome == wanted)
    print(f"time={seconds:.0f}s")
    if baseline:
        print(f"BASELINE total={len(results)} passing={good}")
    else:
        print(f"MUTANTS total={len(results)} killed={good}")
    for result in results:
        if result.outcome != wanted:
            print(f"  {result.outcome}: {result.mutant.id} ({result.mutant.rule})")
    return 0 if good == len(results) else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutants.run", description=__doc__)
    parser.add_argument("--only", nargs="+", action="extend", metavar="ID", help="these mutants")
    parser.add_argument("--jobs", type=int, default=2, help="copies run side by side (2)")
    parser.add_argument("--list", action="store_true", help="print the catalog and exit")
    parser.add_argument(
        "--baseline", action="store_true", help="run the tests without the mutants: all pass"
    )
    parser.add_argument("--keep", action="store_true", help="keep the copies, say where")
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="NODE",
        help="run these tests instead of each mutant's own (to find a mutant's narrow tests)",
    )
    args = parser.parse_args(argv)
    mutants = select(args.only)
    if args.tests:
        mutants = [replace(mutant, tests=tuple(args.tests)) for mutant in mutants]
    if args.list:
        for mutant in mutants:
            print(f"{mutant.id:<46}{mutant.file}  {mutant.rule}")
        return 0
    start = time.monotonic()
    workspace = Path(tempfile.mkdtemp(prefix="cm-"))
    try:
        trees = make_trees(workspace, max(1, min(args.jobs, len(mutants))))
        step = run_baseline if args.baseline else run_mutant
        results = run_all(mutants, trees, step)
    finally:
        if args.keep:
            print(f"copies kept in {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)
    return report(results, time.monotonic() - start, args.baseline)


if __name__ == "__main__":
    sys.exit(main())
