"""Find or fetch the real Codex CLI 0.171.0 (linux-x64) and run the driver offline.

``codex_binary()`` returns the ``codex`` executable or raises ``Unavailable`` with a
one-line reason. The npm package ``@openai/codex@0.171.0-linux-x64`` (~172 MB, never
committed) is fetched once with ``npm pack`` into ``~/.cache/coop-test/``
(``COOP_TEST_CACHE`` overrides) and extracted beside it; later runs reuse it.

``run_driver(binary, root)`` runs ``real_driver.py`` inside a loopback-only network
namespace (``unshare -n``) and returns the JSON it wrote. Every process left in that
namespace afterwards is killed by pid.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import namespaces
from npmcache import REPOSITORY, Unavailable, fetch

VERSION = "0.171.0"
PACKAGE = f"@openai/codex@{VERSION}-linux-x64"
TARBALL = f"openai-codex-{VERSION}-linux-x64.tgz"
BINARY = Path("package/vendor/x86_64-unknown-linux-musl/bin/codex")
DRIVER = Path(__file__).with_name("real_driver.py")
DRIVER_TIMEOUT = 90.0


def check_prerequisites() -> None:
    """Raise Unavailable unless a loopback-only network namespace can be made here."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        raise Unavailable(f"the linux-x64 build cannot run on {platform.machine()}")
    if os.geteuid() != 0:
        raise Unavailable("unshare -n (a loopback-only network namespace) needs root")
    for tool in ("unshare", "ip"):
        if shutil.which(tool) is None:
            raise Unavailable(f"{tool} is not installed")
    probe = subprocess.run(
        ["unshare", "-n", "ip", "link", "set", "lo", "up"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        raise Unavailable(f"unshare -n does not work here: {probe.stderr.strip()[:200]}")


def codex_binary(cache: Path | None = None) -> Path:
    """The extracted ``codex`` executable, fetching and extracting it when missing."""
    return fetch(PACKAGE, TARBALL, f"codex-{VERSION}", BINARY, cache)


def run_driver(
    binary: Path,
    root: Path,
    driver: Path = DRIVER,
    timeout: float = DRIVER_TIMEOUT,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Run a driver (real_driver.py unless named) in its own network namespace; returns
    its result JSON.

    Raises RuntimeError (with the driver's stderr) when it fails or times out."""
    result = root / "result.json"
    netns_file = root / "netns"
    argv = ["unshare", "-n", sys.executable, str(driver), "--codex", str(binary)]
    argv += ["--root", str(root), "--repo", str(REPOSITORY), "--result", str(result)]
    argv += ["--netns-file", str(netns_file), *extra]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENAI_"))}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    # Held until what is left in it is killed (a reused namespace is another test's).
    held = namespaces.Held(process.pid, lambda: process.poll() is not None)
    try:
        _, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        raise RuntimeError(f"the driver timed out\n{stderr.decode(errors='replace')}") from None
    finally:
        held.sweep()
        held.release()
    if process.returncode != 0 or not result.is_file():
        raise RuntimeError(
            f"the driver exited {process.returncode}\n{stderr.decode(errors='replace')[-4000:]}"
        )
    value: dict[str, Any] = json.loads(result.read_text())
    return value
