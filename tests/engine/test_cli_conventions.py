"""The conventions a command-line user expects: `coop --version`, `--home` after the
command as well as before it, an examples block in every command's `--help` (each line
of which parses), and shell completion made from the parser itself."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from coop_engine.cli import completion, examples
from coop_engine.cli.main import build_parser

REPO = Path(__file__).resolve().parents[2]


def coop(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "coop_engine.cli", *argv],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=60,
    )


def every_command() -> dict[str, list[str]]:
    return completion.commands(build_parser())


def test_version_prints_the_installed_version() -> None:
    done = coop("--version")
    assert (done.returncode, done.stdout, done.stderr) == (0, f"coop {version('coop')}\n", "")


def test_the_version_constant_is_pyprojects() -> None:
    """`coop --version` prints coop_engine.__version__ (metadata is slow to read): a
    release that bumps pyproject.toml's version and not the constant fails here."""
    import tomllib

    import coop_engine

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert coop_engine.__version__ == project["version"]


def test_home_may_follow_the_command_and_the_later_one_wins(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    assert coop("todo", "add", "Fix the importer", "--home", str(first)).returncode == 0
    listed = coop("todo", "list", "--json", "--home", str(first))
    assert [todo["title"] for todo in json.loads(listed.stdout)] == ["Fix the importer"]
    both = coop("--home", str(first), "todo", "list", "--home", str(second), "--json")
    assert both.returncode == 0 and json.loads(both.stdout) == []
    bad = coop("todo", "list", "--home", "")
    assert bad.returncode == 2 and len(bad.stderr.splitlines()) == 1


def test_every_command_has_examples_and_each_example_parses() -> None:
    commands = every_command()
    assert sorted(commands) == sorted(examples.EXAMPLES)
    for path, lines in examples.EXAMPLES.items():
        for line in lines:
            words = shlex.split(line.partition(" > ")[0])
            assert words[0] == "coop", line
            argv = words[1:]
            if argv == ["--version"]:
                continue  # it prints and exits: test_version_prints_the_installed_version
            parsed = build_parser(argv).parse_args(argv)
            assert not path or parsed.command == path.split()[0], line


@pytest.mark.parametrize("path", ["todo add", "invite", "chat show", "completion", ""])
def test_help_ends_in_its_examples(path: str) -> None:
    done = coop(*path.split(), "--help")
    assert done.returncode == 0
    block = done.stdout.split("examples:\n", 1)[1].splitlines()
    assert block == [f"  {line}" for line in examples.EXAMPLES[path]]


def complete(script: str, *words: str) -> list[str]:
    """What bash offers, with the script sourced, for the command line `words` (the last
    is the word being completed)."""
    line = " ".join(shlex.quote(word) for word in ("coop", *words))
    probe = (
        f"{script}\nCOMP_WORDS=({line}); COMP_CWORD={len(words)}; _coop;"
        ' printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.split()


def test_bash_completes_commands_actions_and_options_from_the_parser() -> None:
    script = coop("completion", "bash").stdout
    assert complete(script, "inv") == ["invite"]
    assert complete(script, "todo", "a") == ["add"]
    assert complete(script, "--home", "/x", "todo", "add", "x", "--b") == ["--body"]
    assert complete(script, "obligation", "review", "2", "--d") == ["--decision"]
    assert set(complete(script, "")) == set(every_command()[""])


def test_zsh_and_fish_scripts_name_every_command() -> None:
    zsh = coop("completion", "zsh").stdout
    assert zsh.startswith("#compdef coop\n") and "bashcompinit" in zsh
    fish = coop("completion", "fish").stdout
    for word in every_command()[""]:
        if not word.startswith("-"):
            assert f"-n '__fish_use_subcommand' -a {word}\n" in fish
    assert (
        "-n '__fish_seen_subcommand_from todo; and __fish_seen_subcommand_from add' -l body" in fish
    )
