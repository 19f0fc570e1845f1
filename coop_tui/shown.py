"""The app's one renderer: words reach a widget, a table cell, a toast or the header only
as `Shown`, a rich Text whose characters are printable and whose styles are Coop's own.

Whatever a chat, a Mac, a file or a paste wrote may hold an escape sequence or a bidi
override: a Shown holds it as visible escapes (`\\x1b`, `\\u202e`, by
coop_engine.formats, as the CLI prints them), and markup in it is never parsed. Build
one with `shown` (line breaks and tabs kept), `line` (one line) or `assemble` (pieces,
each styled by Coop). A Shown escapes whatever it is given, by its constructor, `append`,
`join` or `plain`, so no later step can put a raw control into it; it refuses markup.
tests/tui/test_one_renderer.py keeps the rest of the app from building a Text, a
Content or a toast of its own, or handing a widget a str built from data.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from rich.style import Style, StyleType
from rich.text import Span, Text
from textual.content import Content

from coop_engine.formats import STEERING, one_line, printable

if TYPE_CHECKING:
    from rich.console import JustifyMethod, OverflowMethod
    from textual.dom import DOMNode

Piece = str | Text | tuple[str, StyleType]
Severity = Literal["information", "warning", "error"]


class Shown(Text):
    """Text as Coop shows it: no character that steers a terminal, no markup parsed."""

    __slots__ = ()

    def __init__(
        self,
        text: str = "",
        style: str | Style = "",
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        no_wrap: bool | None = None,
        end: str = "\n",
        tab_size: int | None = None,
        spans: list[Span] | None = None,
    ) -> None:
        super().__init__(
            printable(text),
            style,
            justify=justify,
            overflow=overflow,
            no_wrap=no_wrap,
            end=end,
            tab_size=tab_size,
            # Spans index the text: a Shown is only given spans of text already printable.
            spans=spans,
        )

    @classmethod
    def from_markup(cls, *args: Any, **kwargs: Any) -> Text:
        raise TypeError("Coop never parses markup: build a Shown with shown() or assemble()")

    @classmethod
    def from_ansi(cls, *args: Any, **kwargs: Any) -> Text:
        raise TypeError("Coop never interprets escape sequences: build a Shown with shown()")

    @property
    def plain(self) -> str:
        return Text.plain.fget(self)  # type: ignore[attr-defined, no-any-return]

    @plain.setter
    def plain(self, new_text: str) -> None:
        Text.plain.fset(self, printable(new_text))  # type: ignore[attr-defined]

    def append(self, text: str | Text, style: str | Style | None = None) -> Shown:
        super().append(printable(text) if isinstance(text, str) else escaped(text), style)
        return self

    def append_text(self, text: Text) -> Shown:
        super().append_text(escaped(text))
        return self

    def append_tokens(self, tokens: Iterable[tuple[str, StyleType | None]]) -> Shown:
        super().append_tokens((printable(said), style) for said, style in tokens)
        return self

    def blank_copy(self, plain: str = "") -> Shown:
        return Shown(
            plain,
            self.style,
            justify=self.justify,
            overflow=self.overflow,
            no_wrap=self.no_wrap,
            end=self.end,
            tab_size=self.tab_size,
        )

    def copy(self) -> Shown:
        copied = self.blank_copy(self.plain)
        copied.spans = self.spans
        return copied

    def join(self, lines: Iterable[Text]) -> Shown:
        joined = super().join(escaped(text) for text in lines)
        assert isinstance(joined, Shown)  # its blank copy is one
        return joined


def escaped(text: Text) -> Text:
    """A Text with each character that steers a terminal (line breaks and tabs kept) as
    its visible escape, its styles kept over what it became; a Shown as it is."""
    if isinstance(text, Shown) or printable(text.plain) == text.plain:
        return text
    cuts = [cut for found in STEERING.finditer(text.plain) for cut in found.span()]
    result = Text(
        style=text.style, justify=text.justify, overflow=text.overflow, no_wrap=text.no_wrap
    )
    result.end = text.end
    for piece in text.divide(cuts):
        said = printable(piece.plain)
        spans = piece.spans
        if said != piece.plain:  # one escaped character: its styles cover its escape
            spans = [Span(0, len(said), span.style) for span in piece.spans]
        result.append_text(Text(said, spans=spans))
    return result


def shown(
    value: object,
    style: StyleType = "",
    *,
    overflow: OverflowMethod | None = None,
    no_wrap: bool | None = None,
    end: str = "\n",
) -> Shown:
    """`value` as the characters it holds, line breaks and tabs kept, in Coop's `style`."""
    return Shown(str(value), style, overflow=overflow, no_wrap=no_wrap, end=end)


def line(
    value: object,
    style: StyleType = "",
    *,
    overflow: OverflowMethod | None = None,
    no_wrap: bool | None = None,
    end: str = "\n",
) -> Shown:
    """`value` as the characters it holds on one line (breaks and tabs as spaces)."""
    return shown(one_line(str(value)), style, overflow=overflow, no_wrap=no_wrap, end=end)


def assemble(*pieces: Piece, style: StyleType = "", end: str = "\n") -> Shown:
    """One line of pieces side by side: a str as its characters (breaks as spaces), a
    Text with its styles, a pair of a str and the style Coop gives it."""
    whole = Shown(style=style, end=end)
    for piece in pieces:
        if isinstance(piece, tuple):
            whole.append(one_line(piece[0]), piece[1] or None)
        else:
            whole.append(one_line(piece) if isinstance(piece, str) else piece)
    return whole


def joined(separator: str, pieces: Iterable[Text]) -> Shown:
    """Pieces one after another, `separator` between them (`"\\n"`: one a line)."""
    return Shown(separator).join(pieces)


def headline(*pieces: str | tuple[str, str]) -> Content:
    """One line of Textual's Content (what the header draws), of pieces side by side: a
    str as its characters, a pair of a str and the style Coop gives it (a style may name
    the theme's variables, `bold $error`)."""
    return Content.assemble(
        *(
            (one_line(piece[0]), piece[1]) if isinstance(piece, tuple) else one_line(piece)
            for piece in pieces
        )
    )


def toast(
    node: DOMNode,
    words: Shown,
    *,
    title: str = "",
    severity: Severity = "information",
    timeout: float | None = None,
) -> None:
    """A toast of these words, raised from any thread (as App.notify is). The app's
    notify is the one way to a toast: it shows them as written, never as markup."""
    node.app.notify(words.plain, title=title, severity=severity, timeout=timeout)


# A field being edited keeps one cell per character, so that its cursor stays over the
# character it is at: a character that steers a terminal shows as one visible sign there
# (what it is, the dialog's refusal names, from the door's check).
_PICTURES = {code: 0x2400 + code for code in range(0x20)} | {0x7F: 0x2421}


def pictured(text: str) -> str:
    """What a field shows of its value: each character that steers a terminal as one
    visible sign (␛ for ESC, ␉ for a tab, � for a C1 or bidi control)."""
    return STEERING.sub(lambda found: chr(_PICTURES.get(ord(found.group()), 0xFFFD)), text)
