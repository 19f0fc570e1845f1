"""fetch.py without the network: reuse, extraction, and a cache that must stay outside."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from . import fetch

pytestmark = pytest.mark.real_claude


def test_an_extracted_binary_is_reused(tmp_path: Path) -> None:
    binary = tmp_path / f"claude-{fetch.VERSION}" / "package" / "claude"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    assert fetch.claude_binary(tmp_path) == binary


def test_a_cached_tarball_is_extracted_in_place(tmp_path: Path) -> None:
    data = b"#!/bin/sh\necho 2.1.328\n"
    with tarfile.open(tmp_path / fetch.TARBALL, "w:gz") as archive:
        info = tarfile.TarInfo("package/claude")
        info.size, info.mode = len(data), 0o755
        archive.addfile(info, io.BytesIO(data))
    binary = fetch.claude_binary(tmp_path)
    assert binary == tmp_path / f"claude-{fetch.VERSION}" / "package" / "claude"
    assert binary.read_bytes() == data and os.access(binary, os.X_OK)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".extract-")] == []


def test_a_cache_inside_the_repository_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COOP_TEST_CACHE", str(fetch.REPOSITORY / "tests" / "cache"))
    with pytest.raises(fetch.Unavailable, match="must not be inside the repository"):
        fetch.cache_dir()


def fake_npm(folder: Path, body: str) -> None:
    """An `npm` on PATH that runs ``body`` (sh) instead of reaching a registry."""
    folder.mkdir()
    npm = folder / "npm"
    npm.write_text("#!/bin/sh\n" + body)
    npm.chmod(0o755)


def test_a_missing_package_is_packed_with_npm_then_extracted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "source"
    (source / "package").mkdir(parents=True)
    (source / "package" / "claude").write_text("#!/bin/sh\n")
    (source / "package" / "claude").chmod(0o755)
    with tarfile.open(tmp_path / "pack.tgz", "w:gz") as archive:
        archive.add(source / "package", arcname="package")
    # npm pack PACKAGE@VERSION --pack-destination DIR: the tarball lands in DIR.
    fake_npm(tmp_path / "bin", f'cp {tmp_path / "pack.tgz"} "$4/{fetch.TARBALL}"\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    cache = tmp_path / "cache"
    binary = fetch.claude_binary(cache)
    assert binary == cache / f"claude-{fetch.VERSION}" / "package" / "claude"
    assert (cache / fetch.TARBALL).is_file()
    assert not [p for p in cache.iterdir() if p.name.startswith((".pack-", ".extract-"))]


def test_a_failed_npm_pack_is_one_line_of_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_npm(tmp_path / "bin", 'echo "npm error 404 Not Found" >&2\nexit 1\n')
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}:{os.environ['PATH']}")
    with pytest.raises(fetch.Unavailable, match="npm pack .* failed: npm error 404 Not Found"):
        fetch.claude_binary(tmp_path / "cache")
    assert not (tmp_path / "cache" / fetch.TARBALL).exists()
