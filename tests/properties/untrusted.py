"""Strings as a chat, a Mac or a paste could write them, for the property tests of the
text boundary: escape sequences (OSC titles and clipboard, CSI, C1), bidi controls,
Rich markup, and whatever else hypothesis makes."""

from __future__ import annotations

import hypothesis.strategies as st

from coop_engine.formats import STEERING

NASTY = st.sampled_from(
    [
        "\x1b]2;PWNED\x07",
        "\x1b[2J",
        "\x1b]52;c;cGFzdGU=\x07",
        "\x9b31m",
        "\x9d0;x\x9c",
        "\u202e",
        "\u2066",
        "\u200f",
        "[/]",
        "[bold]x",
        "[link=file:///etc/passwd]y[/link]",
        "\x7f",
        "\r",
        "\x00",
    ]
)
HOSTILE = st.lists(NASTY | st.text(max_size=12), max_size=8).map("".join)


def steering(text: str, kept: str = "") -> list[str]:
    """The characters of `text` that would steer a terminal, but those `kept`."""
    return [c for c in STEERING.findall(text) if c not in kept]
