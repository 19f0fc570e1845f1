"""Find or fetch the real Claude Code 2.1.328 (linux-x64) in a cache outside the repository.

``claude_binary()`` returns the path of the ``claude`` executable or raises
``Unavailable`` with a one-line reason. The package (a ~172 MB npm tarball) is fetched
once with ``npm pack`` into ``~/.cache/coop-test/`` (``COOP_TEST_CACHE`` overrides) and
extracted beside it, under a lock (parallel test runs fetch once); later calls reuse it.
"""

from __future__ import annotations

import fcntl
import os
import platform
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

VERSION = "2.1.328"
PACKAGE = "@anthropic-ai/claude-code-linux-x64"
TARBALL = f"anthropic-ai-claude-code-linux-x64-{VERSION}.tgz"
REPOSITORY = Path(__file__).resolve().parents[2]


class Unavailable(Exception):
    """The real Claude Code cannot be had on this machine; the message says why."""


def cache_dir() -> Path:
    configured = os.environ.get("COOP_TEST_CACHE")
    path = Path(configured) if configured else Path.home() / ".cache" / "coop-test"
    path = path.expanduser().resolve()
    if path == REPOSITORY or REPOSITORY in path.parents:
        raise Unavailable(f"the package cache {path} must not be inside the repository")
    return path


def claude_binary(cache: Path | None = None) -> Path:
    """The extracted ``claude`` executable, fetching and extracting it when missing."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(
            f"the linux-x64 build cannot run on {platform.system()} {platform.machine()}"
        )
    cache = cache or cache_dir()
    binary = cache / f"claude-{VERSION}" / "package" / "claude"
    if binary.is_file() and os.access(binary, os.X_OK):
        return binary
    try:
        cache.mkdir(parents=True, exist_ok=True)
        lock = open(cache / ".fetch.lock", "w")  # noqa: SIM115
    except OSError as exc:
        raise Unavailable(f"cannot use the package cache {cache}: {exc}") from exc
    with lock:
        # Another test run may be fetching the same package: one fetch, then reuse.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if binary.is_file() and os.access(binary, os.X_OK):
            return binary
        tarball = cache / TARBALL
        if not tarball.is_file():
            _npm_pack(cache)
        _extract(tarball, binary.parent.parent)
    if not (binary.is_file() and os.access(binary, os.X_OK)):
        raise Unavailable(f"{TARBALL} holds no executable package/claude")
    return binary


def _npm_pack(cache: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("npm is not installed, so the Claude Code package cannot be fetched")
    # Packed into a folder of its own, then renamed: a tarball in the cache is whole.
    staging = Path(tempfile.mkdtemp(prefix=".pack-", dir=cache))
    try:
        done = subprocess.run(
            [npm, "pack", f"{PACKAGE}@{VERSION}", "--pack-destination", str(staging)],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0 or not (staging / TARBALL).is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"npm pack {PACKAGE}@{VERSION} failed: {last}")
        (staging / TARBALL).rename(cache / TARBALL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"npm pack {PACKAGE}@{VERSION} failed: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract(tarball: Path, target: Path) -> None:
    """Extract into a temporary folder, then rename it into place (atomic for readers)."""
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    try:
        with tarfile.open(tarball) as archive:
            if hasattr(tarfile, "data_filter"):
                archive.extractall(staging, filter="data")
            else:  # Python < 3.11.4: no filters; the package comes from the npm registry
                archive.extractall(staging)  # noqa: S202
        # tarfile's data filter drops the executable bit of nothing, but be sure.
        extracted = staging / "package" / "claude"
        if extracted.is_file():
            extracted.chmod(0o755)
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except (OSError, tarfile.TarError) as exc:
        raise Unavailable(f"cannot extract {tarball}: {exc}") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


if __name__ == "__main__":
    print(claude_binary())
