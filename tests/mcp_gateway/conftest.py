"""Fixtures: a client of a gateway serving `toolwire serve`'s flags, reached by the official
`mcp` client over stdio (a gateway process, `python -m toolwire.cli serve ...`) or streamable
HTTP on 127.0.0.1 (a gateway served in the test's event loop)."""

from __future__ import annotations

import os
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

from auth_support import served
from gateway_procs import Connect, serve_argv
from mcp import Client, StdioServerParameters

from toolwire import ToolwireWarning
from toolwire.cli import _parser


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'runs.db'}"


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def connect(transport: str) -> Connect:
    """``connect(store_url=None, *extra_flags, mode="auto", elicitation_callback=None)``: a
    client of a new gateway (one per call) serving `toolwire serve`'s flags, over the test's
    transport: stdio to a gateway process of its own, or streamable HTTP on 127.0.0.1 to one
    served in the test's own event loop (the same ``toolwire.mcp.serve`` the command calls;
    a gateway process over HTTP is what test_ts_client, test_gateway_auth and the hostile
    tests start)."""

    @asynccontextmanager
    async def _connect(
        store_url: str | None = None,
        *extra: str,
        mode: Any = "auto",
        elicitation_callback: Any = None,
    ) -> AsyncIterator[Client]:
        argv = serve_argv(store_url, *extra)
        async with (
            _served(transport, argv) as server,
            Client(
                server,
                mode=mode,
                elicitation_callback=elicitation_callback,
                read_timeout_seconds=30,
            ) as client,
        ):
            yield client

    return _connect


@asynccontextmanager
async def _served(transport: str, argv: list[str]) -> AsyncIterator[Any]:
    """What a client connects to for a gateway of ``argv`` over ``transport``."""
    if transport == "stdio":
        # This environment, not the SDK's short default: the gateway imports the same
        # toolwire as the tests (PYTHONPATH included).
        yield StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
        return
    # What the gateway says at start (a process prints it on its stderr) is not these tests'.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ToolwireWarning)
        async with _serving_http(_parser().parse_args(argv[argv.index("serve") :])) as url:
            yield url


@asynccontextmanager
async def _serving_http(args: Any) -> AsyncIterator[str]:
    """`toolwire serve`'s parsed ``args`` served over HTTP in this event loop; its URL."""
    options = {"policy": args.policy, "store": args.store, "approve_by": args.approve_by}
    async with served(args.source, **options) as url:
        yield url
