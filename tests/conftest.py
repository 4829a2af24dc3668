from __future__ import annotations

import functools
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from hypothesis import settings

from budgets import BUDGETS, RUN_KIND, scaled
from toolwire import MemoryStore, RunStore, SQLiteStore

# Hypothesis budgets per kind of run (see budgets.py). No deadline: workers share the cores,
# so how long one example takes says nothing about the code.
settings.register_profile("dev", deadline=None)
settings.register_profile("ci", derandomize=True, print_blob=True, deadline=None)
settings.register_profile("deep", derandomize=True, print_blob=True, deadline=None)
if RUN_KIND not in BUDGETS:
    raise pytest.UsageError(f"TOOLWIRE_HYPOTHESIS is one of {', '.join(BUDGETS)}, not {RUN_KIND!r}")
settings.load_profile(RUN_KIND)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Scale each property test's example budget to its run's kind (see BUDGETS)."""
    done: set[int] = set()  # parametrized items share one function: scale it once
    for item in items:
        test = getattr(item, "obj", None)
        if not getattr(test, "is_hypothesis_test", False) or id(test) in done:
            continue
        done.add(id(test))
        kind = "deep" if item.get_closest_marker("deep") is not None else RUN_KIND
        # Where @given and @settings keep a test's settings; hypothesis reads them per call.
        own: settings = test._hypothesis_internal_use_settings  # type: ignore[union-attr]
        budget = scaled(own.max_examples, kind)
        test._hypothesis_internal_use_settings = settings(own, max_examples=budget)  # type: ignore[union-attr]


@pytest.fixture
def examples(request: pytest.FixtureRequest) -> Callable[[int], int]:
    """``examples(n)``: the budget of a property test written inside a test (out of the
    collection hook's reach), scaled as every other one is."""
    kind = "deep" if request.node.get_closest_marker("deep") is not None else RUN_KIND
    return functools.partial(scaled, kind=kind)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


# -- a real Redis server on 127.0.0.1 (from the machine's redis-server; .ci/run installs it),
# and the three run stores as one parametrized fixture
def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (.ci/run installs it)")
        pytest.skip("redis-server is not installed")
    port = _free_port()
    workdir = tmp_path_factory.mktemp("redis")
    process = subprocess.Popen(
        [
            server,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(workdir),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 20
        while not _ping(port):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"redis-server did not start on port {port}")
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)


# -- a real PostgreSQL server on 127.0.0.1, from Debian's postgresql package (.ci/run installs
# it): initdb in a temporary directory, one server for the session


def _postgres_binary(name: str) -> str | None:
    found = shutil.which(name)
    if found is not None:
        return found
    candidates = sorted(Path("/usr/lib/postgresql").glob(f"*/bin/{name}"))
    return str(candidates[-1]) if candidates else None


@pytest.fixture(scope="session")
def postgres_url() -> Iterator[str]:
    initdb, postgres = _postgres_binary("initdb"), _postgres_binary("postgres")
    if initdb is None or postgres is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL is not installed (.ci/run installs it)")
        pytest.skip("PostgreSQL is not installed")
    # initdb refuses to run as root: then the server runs as Debian's postgres user, in a
    # directory of its own (the session's temporary directories are root's alone).
    user = "postgres" if os.geteuid() == 0 else None
    workdir = Path(tempfile.mkdtemp(prefix="toolwire-pg-"))
    if user is not None:
        shutil.chown(workdir, user=user)
    data = workdir / "data"
    subprocess.run(
        [initdb, "-D", str(data), "-U", "toolwire", "--auth=trust", "-E", "UTF8", "--no-sync"],
        check=True,
        capture_output=True,
        user=user,
    )
    port = _free_port()
    server = subprocess.Popen(
        [
            postgres, "-D", str(data), "-p", str(port), "-k", str(workdir),
            "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "max_connections=200",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        user=user,
    )  # fmt: skip
    url = f"postgresql://toolwire@127.0.0.1:{port}/postgres"
    try:
        import psycopg

        deadline = time.monotonic() + 30
        while True:
            try:
                psycopg.connect(url, connect_timeout=2).close()
                break
            except psycopg.OperationalError:
                if time.monotonic() > deadline or server.poll() is not None:
                    pytest.fail(f"PostgreSQL did not start on port {port}")
                time.sleep(0.1)
        yield url
    finally:
        # A fast shutdown: the default (smart) one waits for every client to go, and a test's
        # pools (or a process it started) may still hold connections.
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(workdir, ignore_errors=True)


_prefixes = itertools.count()


@asynccontextmanager
async def fresh_store(
    kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[RunStore]:
    """A fresh store of ``kind`` (memory, sqlite, redis or postgres), closed after."""
    if kind == "memory":
        yield MemoryStore()
    elif kind == "sqlite":
        async with SQLiteStore(tmp_path / "runs.db") as with_file:
            yield with_file
    elif kind == "redis":
        from toolwire.store.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        # keys of its own per test: the server is shared by the worker's session
        async with RedisStore(url, prefix=f"t{next(_prefixes)}:") as redis_store:
            yield redis_store
    else:
        from toolwire.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        # tables of its own per test: the server is shared by the worker's session
        async with PostgresStore(url, prefix=f"t{next(_prefixes)}_") as postgres_store:
            yield postgres_store


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    """Each store, fresh."""
    async with fresh_store(request.param, request, tmp_path) as each:
        yield each


@pytest.fixture(params=["memory", "sqlite"])
async def local_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    """Each store of one host (no server), fresh."""
    async with fresh_store(request.param, request, tmp_path) as each:
        yield each
