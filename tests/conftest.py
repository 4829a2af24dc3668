from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DATA = Path(__file__).parent / "data"


def load_corpus(name: str) -> list[dict[str, Any]]:
    """Records of tests/data/<name>.jsonl (see tests/data/README.md)."""
    with (DATA / f"{name}.jsonl").open(encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


TOOLS = load_corpus("tools")
STRESS = load_corpus("stress")
ALL_SCHEMAS = TOOLS + STRESS


def corpus_id(record: dict[str, Any]) -> str:
    return f"{record['source'].split(':')[0]}:{record['name']}"


import os  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncIterator, Iterator  # noqa: E402

import pytest  # noqa: E402
from hypothesis import settings  # noqa: E402

from toolwire import MemoryStore, RunStore, SQLiteStore  # noqa: E402

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


@pytest.fixture(params=["memory", "sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[RunStore]:
    """Each store, fresh."""
    if request.param == "memory":
        yield MemoryStore()
    elif request.param == "sqlite":
        with_file = SQLiteStore(tmp_path / "runs.db")
        yield with_file
        with_file.close()
    else:
        from toolwire.store.redis import RedisStore

        url = request.getfixturevalue("redis_url")
        # a prefix per test: the server is shared by the session
        async with RedisStore(url, prefix=f"t:{request.node.name}:") as redis_store:
            yield redis_store
