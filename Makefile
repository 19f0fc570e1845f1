# Two commands a newcomer needs: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PYTEST := $(PY) -m pytest

.PHONY: demo test test-fast bench check screenshots reliability mutants system-programs clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

# Stamp files: reinstall only when pyproject.toml changes.
# An editable install leaves the sources uncompiled; compile them as a regular install
# would, so that `coop` starts fast even where PYTHONDONTWRITEBYTECODE is set.
$(VENV)/.installed: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e .
	$(PY) -m compileall -q coop_engine hosts coop_tui
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(VENV)/bin/python
	$(PY) -m pip install -q -e '.[test,dev]'
	$(PY) -m compileall -q coop_engine hosts coop_tui
	touch $@ $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/coop demo

system-programs:
	@scripts/ensure-system-programs

# The suite in WORKERS processes (pytest-xdist): most of its time is spent waiting on
# chats, sshd and the clock, so more workers than cores still pay. Each test file
# stays in one process (its fixtures and its order hold); WORKERS=0 runs it in this one.
WORKERS ?= 3
XDIST = -n $(WORKERS) --dist loadfile
test: $(VENV)/.installed-test system-programs
	$(PYTEST) -q $(XDIST)

# Everything but the slow groups: for the edit-test loop.
test-fast: $(VENV)/.installed-test
	$(PYTEST) -q $(XDIST) -m "not (tui or ssh or kill or real_claude)"

# Each benchmark prints `BENCH name=... ratio=...` lines; a missed bound fails the target.
bench: $(VENV)/.installed-test system-programs
	@$(PY) -m compileall -q coop_engine hosts coop_tui
	@status=0; for bench in tests/bench/bench_*.py; do \
		$(PY) -m tests.bench.$$(basename $$bench .py) || status=1; \
	done; exit $$status

# The curated mutation suite (tests/mutants/): each mutant breaks one safety rule in a
# copy of the tree, and the tests named for it must fail. Prints one line per mutant,
# then `MUTANTS total=N killed=K`; fails unless every one is killed. About five minutes.
# (`make test` only checks that every mutant still applies: tests/mutants/test_catalog.py.)
JOBS ?= 2
mutants: $(VENV)/.installed-test system-programs
	$(PY) -m tests.mutants.run --jobs $(JOBS)

# SIGKILLs `coop serve` 1,000 times mid-delivery; prints `RELIABILITY kills=... lost=...`.
# (`make test` runs the same harness with 50 kills.) About ten minutes.
KILLS ?= 1000
reliability: $(VENV)/.installed-test system-programs
	$(PY) -m tests.reliability --kills $(KILLS)

# SVGs of each screen of the real app over the demo's fleet, driven by Textual's pilot;
# and screenshots/web.png: `coop web` in headless Chromium, a todo typed in the page.
screenshots: $(VENV)/.installed system-programs
	$(PY) -m coop_tui.screenshots --out screenshots
	$(PY) tests/web/chromium.py --out screenshots/web.png

check: $(VENV)/.installed-test
	$(VENV)/bin/ruff check coop_engine coop_tui hosts tests
	$(VENV)/bin/ruff format --check coop_engine coop_tui hosts tests
	$(VENV)/bin/mypy coop_engine hosts coop_tui
	$(VENV)/bin/lint-imports

clean:
	rm -rf $(VENV) build *.egg-info
