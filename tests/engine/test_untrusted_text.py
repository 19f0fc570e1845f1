"""The one escaper for untrusted text (STYLE.md habit 10): what a chat, a transcript or
another Mac wrote reaches a terminal with every control character shown as `\\xNN`,
never sent; C1 controls (a CSI on its own) included."""

from __future__ import annotations

from coop_engine.formats import one_line, printable


def test_an_escape_sequence_is_printed_never_sent() -> None:
    said = "\x1b]0;owned\x07\x1b[2Jred\x9b31m\x00"
    shown = printable(said)
    assert shown == "\\x1b]0;owned\\x07\\x1b[2Jred\\x9b31m\\x00"
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in shown)


def test_line_breaks_and_tabs_stay_in_printable_and_go_in_one_line() -> None:
    said = "first\tline\nsecond\r\x1b[2J"
    assert printable(said) == "first\tline\nsecond\\x0d\\x1b[2J"
    assert one_line(said) == "first line second \\x1b[2J"
