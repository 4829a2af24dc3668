"""``serve``: a tool source served as a governed MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from toolwire.approval import ApprovalRequest, Approver
from toolwire.errors import ConfigurationError, MissingDependency
from toolwire.mcp._gateway import Gateway
from toolwire.mcp._hub import Hub
from toolwire.policy import Policy
from toolwire.store import RunStore
from toolwire.tool import Tool, ToolSet

__all__ = ["open_toolset", "serve"]

Source = ToolSet | Hub | ModuleType | str | Path | Iterable[Tool | Callable[..., Any]]


async def serve(
    source: Source,
    *,
    policy: Policy | str | Path | None = None,
    store: RunStore | str | None = None,
    approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    principal: Any = None,
    timeout: float | None = None,
    elicit: bool = True,
    name: str = "toolwire",
    on_listening: Callable[[str], Any] | None = None,
    **executor_options: Any,
) -> None:
    """Serve ``source``'s tools as an MCP server until the client (stdio) or the process
    (HTTP) stops; every call goes through the governed executor (see
    [`Gateway`][toolwire.mcp.Gateway]).

    Args:
        source: a ToolSet, a [`Hub`][toolwire.mcp.Hub] (opened here), a module holding
            tools, tools, or a SOURCE string as the ``toolwire`` command takes it (a ``.py`` file,
            ``module:attribute``, a JSON tool file, ``stdio:CMD``, an MCP URL, an
            ``mcp.json``).
        policy: a [`Policy`][toolwire.Policy], or the path of a policy file (see
            ``toolwire.policy_file``).
        store: the run store, or its URL (``sqlite:///runs.db``...).
        transport: ``"stdio"``, or ``"http"`` (streamable HTTP at ``/mcp``).
        host: where HTTP listens (loopback by default: DNS-rebinding protection is on).
        port: the HTTP port; 0 picks a free one (``on_listening`` is told the URL).
        on_listening: called with the URL once HTTP listens.
        principal: see [`Gateway`][toolwire.mcp.Gateway].
        timeout: see [`Gateway`][toolwire.mcp.Gateway].
        elicit: see [`Gateway`][toolwire.mcp.Gateway].
        name: see [`Gateway`][toolwire.mcp.Gateway].
        executor_options: see [`Gateway`][toolwire.mcp.Gateway].

    Raises:
        ConfigurationError: a bad option, or a policy file that cannot be read.
        MissingDependency: HTTP without ``uvicorn``.
    """
    if transport not in ("stdio", "http"):
        raise ConfigurationError(f"transport is 'stdio' or 'http', not {transport!r}")
    if isinstance(policy, str | Path):
        from toolwire.policy_file import load_policy

        policy = load_policy(policy)
    owned_store = isinstance(store, str)
    if isinstance(store, str):
        from toolwire.store import from_url

        store = from_url(store)
    try:
        async with open_toolset(source) as toolset:
            hubs = _hubs_of(source, toolset)
            # Followed only when the toolset is the hub's own: a filtered one stays as it is.
            own = next((hub for hub in hubs if hub.as_toolset() is toolset), None)
            gateway = Gateway(
                toolset,
                policy=policy,
                store=store,
                approver=approver,
                principal=principal,
                timeout=timeout,
                elicit=elicit,
                name=name,
                hub=own,
                **executor_options,
            )
            for hub in hubs:
                if hub is not own:
                    gateway.forward_progress(hub)
            if transport == "stdio":
                await _serve_stdio(gateway)
            else:
                await _serve_http(gateway, host, port, on_listening)
    finally:
        if owned_store and store is not None:
            await _close(store)


@asynccontextmanager
async def open_toolset(source: Source) -> AsyncIterator[ToolSet]:
    """The tools of ``source`` (see ``serve``), with its MCP servers connected while open."""
    if isinstance(source, Hub):
        async with source:
            yield source.as_toolset()
    elif isinstance(source, str | Path):
        from toolwire.cli import open_source  # the CLI's reader of SOURCE strings

        async with open_source(str(source)) as toolset:
            yield toolset
    elif isinstance(source, ModuleType):
        from toolwire.cli import load_source

        yield load_source(source.__name__)
    else:
        yield ToolSet.of(source)


def _hubs_of(source: Source, toolset: ToolSet) -> list[Hub]:
    """The hubs whose servers the toolset's tools call: ``source`` itself, or those a SOURCE
    string opened (found through the tools' handlers, ``partial(hub._call, ...)``, since the
    CLI's reader yields only the toolset)."""
    if isinstance(source, Hub):
        return [source]
    found: dict[int, Hub] = {}
    for tool in toolset:
        owner = getattr(getattr(tool.handler, "func", None), "__self__", None)
        if isinstance(owner, Hub):
            found.setdefault(id(owner), owner)
    return list(found.values())


async def _serve_stdio(gateway: Gateway) -> None:
    from mcp.server.stdio import stdio_server

    server = gateway.server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(
    gateway: Gateway, host: str, port: int, on_listening: Callable[[str], Any] | None
) -> None:
    try:
        import uvicorn
    except ImportError as exc:
        raise MissingDependency("uvicorn", "mcp") from exc
    app = gateway.server().streamable_http_app(host=host)
    # The socket is bound here, so port 0 works and the URL is known before serving.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from None
    sock.listen(128)  # before the URL is told: a client connecting at once is queued, not refused
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/mcp"
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    if on_listening is not None:
        on_listening(url)
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()


async def _close(store: Any) -> None:
    if hasattr(store, "aclose"):
        await store.aclose()
    elif hasattr(store, "close"):
        store.close()


def _listening_on_stderr(url: str) -> None:
    print(f"toolwire: serving MCP at {url}", file=sys.stderr, flush=True)
