"""Fixtures: a client of the gateway as a separate process (`python -m toolwire.cli serve ...`),
reached by the official `mcp` client over stdio or streamable HTTP on 127.0.0.1."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

from gateway_procs import Connect, HttpGateway, serve_argv
from mcp import Client, StdioServerParameters


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture
def gateway_processes() -> Iterator[list[HttpGateway]]:
    started: list[HttpGateway] = []
    yield started
    for gateway in started:
        gateway.close()


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(transport: str, gateway_processes: list[HttpGateway]) -> Connect:
    """``connect(store_url=None, *extra_flags, mode="auto", elicitation_callback=None)``: a
    client of a new gateway process (one per call), over the test's transport."""

    @asynccontextmanager
    async def _connect(
        store_url: str | None = None,
        *extra: str,
        mode: Any = "auto",
        elicitation_callback: Any = None,
    ) -> AsyncIterator[Client]:
        argv = serve_argv(store_url, *extra)
        server: Any
        if transport == "stdio":
            # This environment, not the SDK's short default: the gateway imports the same
            # toolwire as the tests (PYTHONPATH included).
            server = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        else:
            gateway = HttpGateway(argv)
            gateway_processes.append(gateway)
            server = gateway.url
        async with Client(
            server, mode=mode, elicitation_callback=elicitation_callback, read_timeout_seconds=30
        ) as client:
            yield client

    return _connect
