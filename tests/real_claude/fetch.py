"""Find or fetch the real Claude Code 2.1.328 (linux-x64) in a cache outside the repository.

``claude_binary()`` returns the path of the ``claude`` executable or raises
``Unavailable`` with a one-line reason. The package (a ~172 MB npm tarball) is fetched
once with ``npm pack`` into ``~/.cache/coop-test/`` (``COOP_TEST_CACHE`` overrides) and
extracted beside it, under a lock (parallel test runs fetch once); later calls reuse it.
"""

from __future__ import annotations

import platform
from pathlib import Path

from npmcache import REPOSITORY, Unavailable, cache_dir, fetch

__all__ = ["REPOSITORY", "Unavailable", "cache_dir", "claude_binary"]

VERSION = "2.1.328"
PACKAGE = "@anthropic-ai/claude-code-linux-x64"
TARBALL = f"anthropic-ai-claude-code-linux-x64-{VERSION}.tgz"


def claude_binary(cache: Path | None = None) -> Path:
    """The extracted ``claude`` executable, fetching and extracting it when missing."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(
            f"the linux-x64 build cannot run on {platform.system()} {platform.machine()}"
        )
    return fetch(
        f"{PACKAGE}@{VERSION}", TARBALL, f"claude-{VERSION}", Path("package/claude"), cache
    )


if __name__ == "__main__":
    print(claude_binary())
