"""The mutation suite's catalog stays true to the code (run by `make test`; `make
mutants` runs the mutants themselves): every mutant's old text occurs exactly once in
its file, the patched file compiles, and its tests exist."""

from __future__ import annotations

import re

import pytest

from .catalog import MUTANTS
from .mutant import ID_SHAPE, Mutant
from .tree import REPO

BY_ID = {mutant.id: mutant for mutant in MUTANTS}


def test_mutant_ids_are_unique_kebab_case() -> None:
    assert len(BY_ID) == len(MUTANTS), "two mutants share an id"
    assert [m.id for m in MUTANTS if not ID_SHAPE.match(m.id)] == []


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_each_mutant_applies_exactly_once_and_compiles(mutant: Mutant) -> None:
    assert mutant.old != mutant.new
    source = (REPO / mutant.file).read_text(encoding="utf-8")
    mutant.patch(source)  # StaleMutant or BadMutant otherwise


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_each_mutant_names_tests_that_exist(mutant: Mutant) -> None:
    assert mutant.tests and mutant.rule.strip()
    for name in mutant.test_files():
        path = REPO / name
        assert path.is_file(), f"{mutant.id}: no test file {name}"
        # The runner leaves the snapshot plugin out: a snapshot test cannot kill there.
        assert "snap_compare" not in path.read_text(encoding="utf-8"), name
        for test in mutant.tests:
            if test.startswith(f"{name}::"):
                function = test.split("::")[-1].split("[")[0]
                assert re.search(rf"def {re.escape(function)}\b", path.read_text()), test
