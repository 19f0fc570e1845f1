"""The helper's payload: a tiny loader plus the sources of `hosts/mac/`, the folder of
everything that runs on a Mac (standard library only), sent on the helper's stdin after
a fixed, data-free bootstrap line.

Nothing is installed or written on the Mac: the loader registers the sources as
`hosts.mac.*` modules in memory and runs `hosts.mac.helper.main()`.
"""

from __future__ import annotations

import shlex
from pathlib import Path

# The whole of this folder is sent: the loader executes a source only when the helper
# imports it, so a module added there is on the Mac without a change here.
MAC = Path(__file__).resolve().parent / "mac"

# `-I`: the Mac's PYTHONPATH and user site cannot shadow the standard library the helper
# relies on. `-u`: answers are not held back in a buffer.
BOOTSTRAP = "import sys;exec(sys.stdin.buffer.read({length}))"

MINIMUM_PYTHON = (3, 9)

LOADER = """\
import sys
if sys.version_info < {minimum!r}:
    sys.stderr.write("Coop's helper needs Python %d.%d or newer; this Mac's python3 is %s\\n"
                     % ({minimum!r} + (sys.version.split()[0],)))
    sys.exit(3)
import importlib.abc, importlib.util
SOURCES = {sources!r}
class _CoopBundle(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name not in SOURCES:
            return None
        return importlib.util.spec_from_loader(
            name, self, origin="coop-helper/" + name, is_package=name in ("hosts", "hosts.mac"))
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        code = compile(SOURCES[module.__name__], module.__spec__.origin, "exec")
        exec(code, module.__dict__)
sys.meta_path.insert(0, _CoopBundle())
from hosts.mac.helper import main
main()
"""

_payload: bytes | None = None


def payload() -> bytes:
    """The bytes sent on the helper's stdin: the loader with every module's source.
    Built once per process; the same bytes every time."""
    global _payload
    if _payload is None:
        # `hosts` itself is an empty package on the Mac: nothing of the office goes there.
        sources = {"hosts": "", "hosts.mac": (MAC / "__init__.py").read_text(encoding="utf-8")}
        for path in sorted(MAC.glob("*.py")):
            if path.stem != "__init__":
                sources[f"hosts.mac.{path.stem}"] = path.read_text(encoding="utf-8")
        text = LOADER.format(minimum=MINIMUM_PYTHON, sources=sources)
        _payload = text.encode("utf-8")
    return _payload


def bootstrap_argv(length: int, python: str = "python3") -> list[str]:
    """The helper's command line: fixed but for the payload's length, which is a number
    this module computed, never data from a request."""
    return [python, "-I", "-u", "-c", BOOTSTRAP.format(length=int(length))]


def bootstrap_command(length: int) -> str:
    """The same command line as one shell string, for ssh's exec request."""
    return shlex.join(bootstrap_argv(length))
