"""Files that the suite's processes share: the test run's parallel workers (pytest-xdist), and
runs after one another (the cache of what the suite fetches: the public suites, and the npm
packages it installs). What one of them installs or unpacks is made once, under an exclusive
lock, and only then marked done: another process waits for the lock, then finds it done and
uses it."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import pytest

__all__ = ["cache_dir", "kept", "locked", "made_once", "npm_package", "run_root", "unavailable"]

DONE = ".done"
"""Written into a folder once it is made whole."""
NPM_SECONDS = 300
"""How long one npm install may take."""


@contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (made if missing) while the block runs: one process
    of the machine at a time, whichever test run it belongs to."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def cache_dir() -> Path:
    """Where what the suite fetches is kept between runs: ``TOOLWIRE_SUITES_CACHE``, by default
    ``~/.cache/toolwire-suites``."""
    configured = os.environ.get("TOOLWIRE_SUITES_CACHE")
    path = Path(configured) if configured else Path.home() / ".cache" / "toolwire-suites"
    path.mkdir(parents=True, exist_ok=True)
    return path


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every worker of this test run shares (each worker's own temporary
    folders are inside it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def made_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """The folder ``name`` of this test run, made by ``make`` by the first worker that asks;
    the others wait, then use it. When ``make`` fails (or skips), the folder is not marked
    done, and the next worker that asks calls ``make`` again (on what the failed attempt
    left)."""
    return _made_in(run_root(tmp_path_factory), name, make)


def kept(name: str, make: Callable[[Path], None]) -> Path:
    """The folder ``name`` of the cache, made by ``make`` by the first process of any run that
    asks, and kept for the runs after it: ``name`` says the version of what it holds."""
    return _made_in(cache_dir(), name, make)


def _made_in(root: Path, name: str, make: Callable[[Path], None]) -> Path:
    folder = root / name
    with locked(root / f"{name}.lock"):
        if not (folder / DONE).exists():
            folder.mkdir(parents=True, exist_ok=True)
            make(folder)
            (folder / DONE).touch()
    return folder


def unavailable(reason: str) -> NoReturn:
    """Skip a test whose outside tool (node, npm, a package) cannot be had; in CI (``CI``
    set), fail it: CI installs everything."""
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


def npm_package(spec: str) -> Path:
    """The folder of npm package ``spec`` (pinned, ``@scope/name@version``), installed once
    into the cache and kept for the runs after (see [`unavailable`][] when it cannot be)."""
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        unavailable(f"{spec} needs node and npm on the PATH")

    def install(prefix: Path) -> None:
        command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund", spec]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=NPM_SECONDS, check=False
            )
        except (subprocess.SubprocessError, OSError) as exc:
            unavailable(f"npm install {spec} did not finish: {exc}")
        if done.returncode != 0:
            unavailable(
                f"npm install {spec} failed (exit {done.returncode}):\n{done.stderr[-2000:]}"
            )

    prefix = kept("npm-" + spec.replace("/", "-").lstrip("@"), install)
    return prefix / "node_modules" / spec.rsplit("@", 1)[0]
