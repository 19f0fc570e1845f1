"""The app shows text only through its one renderer (coop_tui/shown.py), by type: this
test reads every module of coop_tui and fails where one could bypass it.

Outside shown.py, no module of the app
- builds a rich Text or a Textual Content itself (`Text(...)`, `Text.assemble(...)`,
  `Content(...)`, any `from_markup`): a Shown is built by `shown`, `line`, `assemble`;
- asks for markup (`markup=` other than False);
- raises a toast but through `shown.toast` (the app's `notify` is the one way to a
  toast, and it shows every word as written);
- makes a text field of Textual's Input (a Field shows a pasted control as a sign);
- hands a widget, a table row, a toast or a border title a str built from data: an
  f-string, a concatenation, `str()`, `repr()`, `.format()`, `.join()` or a value read
  out of a row (`row["name"]`). Coop's own fixed words may be a literal.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

APP = Path(__file__).resolve().parents[2] / "coop_tui"
RENDERER = APP / "shown.py"
# Where text meets a widget, a table, a toast or the palette: a call of one of these
# names takes text as its positional arguments (and the keywords below).
SINKS = frozenset(
    {
        "update",
        "Static",
        "Label",
        "Button",
        "Option",
        "add_option",
        "add_row",
        "add_column",
        "Group",
        "Hit",
        "DiscoveryHit",
        "Field",
        "toast",
    }
)
TEXT_KEYWORDS = frozenset({"label", "prompt", "value", "renderable", "content", "help"})
TITLES = frozenset({"border_title", "border_subtitle"})
BUILDERS = frozenset({"Text", "Content"})


def called(node: ast.Call) -> str:
    """The name a call is made by: `update` for `body.update(...)`."""
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return ""


def built_from_data(node: ast.expr) -> bool:
    """Whether an expression is a str made of values (not one literal): an f-string, a
    concatenation or a format, a conversion, a join, or a value read out of a row."""
    if isinstance(node, ast.JoinedStr | ast.Subscript):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Mod):
        return any(
            isinstance(side, ast.JoinedStr)
            or (isinstance(side, ast.Constant) and isinstance(side.value, str))
            or built_from_data(side)
            for side in (node.left, node.right)
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return node.func.id in ("str", "repr", "format")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        return node.func.attr in ("format", "join")
    if isinstance(node, ast.IfExp):
        return built_from_data(node.body) or built_from_data(node.orelse)
    return False


def bypasses(source: str, module: str = "<module>") -> list[str]:
    """Every place in `source` where text could reach the terminal without the one
    renderer, as `module:line: what`."""
    found: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        found.append(f"{module}:{getattr(node, 'lineno', '?')}: {what}")

    tree = ast.parse(source)
    notifiers = {
        id(node)
        for function in ast.walk(tree)
        if isinstance(function, ast.FunctionDef) and function.name == "notify"
        for node in ast.walk(function)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in ("from_markup", "from_ansi"):
            say(node, f"{node.attr}: markup parsed")
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in TITLES:
                    if built_from_data(node.value):
                        say(node, f"{target.attr} given a str built from data (markup)")
        if not isinstance(node, ast.Call):
            continue
        name = called(node)
        func = node.func
        owner = func.value if isinstance(func, ast.Attribute) else None
        if name in BUILDERS or (isinstance(owner, ast.Name) and owner.id in BUILDERS):
            say(node, f"{ast.unparse(func)}(...) built outside the renderer")
        if name == "Input":
            say(node, "Input: a text field is a Field (a pasted control shows as a sign)")
        for keyword in node.keywords:
            literal = isinstance(keyword.value, ast.Constant)
            if keyword.arg == "markup" and not (literal and keyword.value.value is False):
                say(node, "markup= asked for: text is never parsed as markup")
        if name == "notify" and id(node) not in notifiers:
            say(node, "notify called directly: raise a toast with shown.toast")
        if name in SINKS:
            given = list(node.args)
            given += [kw.value for kw in node.keywords if kw.arg in TEXT_KEYWORDS]
            for argument in given:
                if built_from_data(argument):
                    say(argument, f"{name} given a str built from data: {ast.unparse(argument)}")
    return found


def modules() -> list[Path]:
    return sorted(path for path in APP.rglob("*.py") if path != RENDERER)


@pytest.mark.parametrize("path", modules(), ids=lambda path: str(path.relative_to(APP)))
def test_no_module_of_the_app_shows_text_but_through_the_one_renderer(path: Path) -> None:
    assert bypasses(path.read_text(encoding="utf-8"), str(path.relative_to(APP))) == []


BYPASSES = {
    "a Text of data": "Static(Text(row['name']))",
    "a Text assembled": "body.update(Text.assemble(('x', 'bold'), name))",
    "a Content": "Content(title)",
    "markup parsed": "cell = Shown.from_markup(words)",
    "markup asked for": "Static(line(words), markup=True)",
    "a toast raised directly": "self.notify(line(words))",
    "an f-string to a widget": "Static(f'{chat}: {why}')",
    "a row's value to a widget": "body.update(found['error'])",
    "a joined str to a table": "table.add_row(', '.join(names))",
    "a str() to an option": "Option(str(todo))",
    "a concatenation to a label": "Label('Send ' + outbox_id)",
    "an f-string border title": "pane.border_title = f'Outbox {words}'",
    "Textual's Input": "Input(value=current)",
    "a str of data to a button": "Button(label=f'{yes} (y)')",
}


@pytest.mark.parametrize("code", BYPASSES.values(), ids=BYPASSES.keys())
def test_each_way_around_the_renderer_is_found(code: str) -> None:
    assert len(bypasses(code)) == 1, bypasses(code)


def test_the_renderers_own_words_and_literals_pass() -> None:
    code = (
        "Static(line(f'{chat}: {why}'))\n"
        "Static(line('Fixed words'))\n"
        "pane.border_title = line(f'Outbox {words}')\n"
        "toast(self, line(refusal), title='Invite')\n"
        "table.add_row(line(event['at']), shown(text))\n"
        "Button(line(f'{yes} (y)'), variant='warning')\n"
        "Field(value=self.current)\n"
        "class A:\n"
        "    def notify(self, message):\n"
        "        super().notify(printable(message), markup=False)\n"
    )
    assert bypasses(code) == []
