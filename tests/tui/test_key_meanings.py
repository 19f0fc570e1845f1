"""One meaning per key across the app's screens, and the README's key table says what
`?` says: read from the bindings themselves, so a key given a second job, or a key the
README forgets, fails here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
from collections import defaultdict
from pathlib import Path

from textual.binding import Binding
from textual.dom import DOMNode

import coop_tui
from coop_tui.app import CoopApp
from coop_tui.screens.help import KEYS_ELSEWHERE

README = Path(__file__).resolve().parents[2] / "README.md"
# Two keys whose meaning is the same everywhere, though the action differs by screen:
# escape leaves (back, cancel, close, clear the filter); enter opens or does what the
# selected row offers; `?` opens help, and in help closes it.
SAME_EVERYWHERE = {"escape", "enter", "question_mark"}


def bindings_by_class() -> dict[str, list[Binding]]:
    """Every Binding the app's own classes declare, by class."""
    found: dict[str, list[Binding]] = {}
    for module_info in pkgutil.walk_packages(coop_tui.__path__, "coop_tui."):
        module = importlib.import_module(module_info.name)
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, DOMNode):
                continue
            own = cls.__dict__.get("BINDINGS", [])
            found[f"{cls.__module__}.{name}"] = [b for b in own if isinstance(b, Binding)]
    return found


def test_every_key_means_one_thing_on_every_screen() -> None:
    meanings: dict[str, set[str]] = defaultdict(set)
    where: dict[str, set[str]] = defaultdict(set)
    for owner, bindings in bindings_by_class().items():
        for binding in bindings:
            for key in binding.key.split(","):
                meanings[key.strip()].add(binding.action)
                where[key.strip()].add(owner)
    assert meanings["y"] == {"answer(True)"} and "exclamation_mark" in meanings
    twice = {
        key: sorted(actions)
        for key, actions in meanings.items()
        if len(actions) > 1 and key not in SAME_EVERYWHERE
    }
    assert not twice, {key: (twice[key], sorted(where[key])) for key in twice}


def help_keys() -> set[str]:
    """The keys `?` lists: the app's bindings as they are displayed, and the others."""
    keys = {b.key_display or b.key for b in CoopApp.BINDINGS if isinstance(b, Binding)}
    for shown, _, _ in KEYS_ELSEWHERE:
        keys.update(shown.split())
    return keys


def readme_keys() -> set[str]:
    """The keys in the first column of the README's table under `## The app`."""
    text = README.read_text()
    table = text[text.index("## The app") :].split("\n\n", 2)[1]
    keys: set[str] = set()
    for line in table.splitlines()[2:]:
        first = line.split("|")[1]
        keys.update(re.findall(r"`([^`]+)`", first))
    return keys


def test_the_readme_key_table_lists_exactly_the_keys_help_lists() -> None:
    assert help_keys() == readme_keys()
