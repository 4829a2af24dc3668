from __future__ import annotations

import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from toolwire import MemoryStore, RunStore, SQLiteStore

# CI replays the same examples on every run (a failure there is reproducible and never a coin
# toss); local runs keep exploring new ones.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


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


@pytest.fixture(params=["memory", "sqlite", "redis", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    """Each store, fresh."""
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "sqlite":
        with_file = SQLiteStore(tmp_path / "runs.db")
        yield with_file
        with_file.close()
    elif request.param == "redis":
        from toolwire.store.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        # a prefix per test: the server is shared by the session
        async with RedisStore(url, prefix=f"t:{request.node.name}:") as redis_store:
            yield redis_store
    else:
        from toolwire.store.postgres import PostgresStore

        url = request.getfixturevalue("postgres_url")
        # tables of its own per test: the server is shared by the session
        async with PostgresStore(url, prefix=f"t{next(_prefixes)}_") as postgres_store:
            yield postgres_store
