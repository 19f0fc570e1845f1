"""Real vendor binaries for the tests, fetched with `npm pack` into a cache outside the
repository (~/.cache/coop-test/, or $COOP_TEST_CACHE) and reused while present. Never
committed, never vendored."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parents[1]


class Unavailable(Exception):
    """The binary cannot be had or run on this machine; the message says why."""


def cache_dir() -> Path:
    configured = os.environ.get("COOP_TEST_CACHE")
    path = Path(configured) if configured else Path.home() / ".cache" / "coop-test"
    path = path.expanduser().resolve()
    if path == REPOSITORY or REPOSITORY in path.parents:
        raise Unavailable(f"the package cache {path} must not be inside the repository")
    return path


def fetch(
    spec: str, tarball_name: str, folder: str, binary: Path, cache: Path | None = None
) -> Path:
    """The executable `binary` (relative to the extracted tarball) of npm package `spec`,
    packed into `cache/tarball_name` and extracted into `cache/folder` when missing."""
    cache = cache or cache_dir()
    root = cache / folder
    executable = root / binary
    if executable.is_file() and os.access(executable, os.X_OK):
        return executable
    try:
        cache.mkdir(parents=True, exist_ok=True)
        lock = open(cache / ".fetch.lock", "w")  # noqa: SIM115 - closed by the with
    except OSError as exc:
        raise Unavailable(f"cannot use the package cache {cache}: {exc}") from exc
    with lock:
        # Another test run may be fetching the same package: one fetch, then reuse.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (executable.is_file() and os.access(executable, os.X_OK)):
            tarball = cache / tarball_name
            if not tarball.is_file():
                _npm_pack(spec, tarball_name, cache)
            _extract(tarball, root, binary)
    if not (executable.is_file() and os.access(executable, os.X_OK)):
        raise Unavailable(f"{tarball_name} holds no executable {binary}")
    return executable


def _npm_pack(spec: str, tarball_name: str, cache: Path) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable(f"npm is not installed, so {spec} cannot be fetched")
    # Packed into a folder of its own, then renamed: a tarball in the cache is whole.
    staging = Path(tempfile.mkdtemp(prefix=".pack-", dir=cache))
    try:
        done = subprocess.run(
            [npm, "pack", spec, "--pack-destination", str(staging)],
            cwd=staging,
            capture_output=True,
            text=True,
            timeout=900,
        )
        if done.returncode != 0 or not (staging / tarball_name).is_file():
            last = (done.stderr.strip().splitlines() or ["no output"])[-1]
            raise Unavailable(f"npm pack {spec} failed: {last}")
        (staging / tarball_name).rename(cache / tarball_name)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise Unavailable(f"npm pack {spec} failed: {exc}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract(tarball: Path, target: Path, binary: Path) -> None:
    """Extract into a temporary folder, then rename it into place (atomic for readers)."""
    staging = Path(tempfile.mkdtemp(prefix=".extract-", dir=target.parent))
    try:
        with tarfile.open(tarball) as archive:
            archive.extractall(staging, filter="data")
        extracted = staging / binary
        if extracted.is_file():
            extracted.chmod(0o755)  # be sure, whatever the archive's modes say
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    except (OSError, tarfile.TarError) as exc:
        raise Unavailable(f"cannot extract {tarball}: {exc}") from exc
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
