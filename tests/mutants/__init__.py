"""The curated mutation suite (STYLE.md habit 11): every safety rule has a mutant here
that some test kills. `make mutants` runs it; `python -m tests.mutants.run --help`."""
