"""A hub of MCP servers: their tools as one toolset, each call governed and fault-tolerant.

Built on the official ``mcp`` SDK (2.x): ``mcp.Client`` reaches each server over stdio, streamable
HTTP or in process. A server that fails to start or dies contributes no tools and its calls are
answered ``unavailable``; the hub reconnects it in the background with bounded backoff.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.abc

from toolwire._text import clean_description
from toolwire.calls import ToolResult, canonical_json
from toolwire.errors import ConfigurationError, MissingDependency
from toolwire.executor import acquire
from toolwire.mcp._content import result_from_mcp
from toolwire.tool import Tool, ToolSet

__all__ = ["HttpServer", "Hub", "InProcessServer", "ServerSpec", "StdioServer"]

_PAGE_CAP = 100
"""Pages of ``tools/list`` read from one server before the listing is cut."""


def _mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingDependency("mcp", "mcp") from None
    return mcp


@dataclass(frozen=True, kw_only=True)
class _Options:
    include: Sequence[str] | None = None
    """Glob patterns over the server's tool names; only matching tools are listed."""
    exclude: Sequence[str] = ()
    timeout: float | None = 60.0
    """Seconds one call may take (the tools' ``timeout``, applied by the executor)."""
    max_concurrency: int = 8
    """Calls to this server running at once."""
    connect_timeout: float = 30.0
    """Seconds the server may take to start and list its tools."""
    probe_timeout: float = 5.0
    """Seconds the server has to answer a probe (a ``tools/list`` request) after one of its
    calls was abandoned (timed out or cancelled); a server that doesn't is hung, so it is marked
    down and reconnected."""


@dataclass(frozen=True, kw_only=True)
class StdioServer(_Options):
    """A server started as a subprocess, spoken to over its stdin/stdout."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None


@dataclass(frozen=True, kw_only=True)
class HttpServer(_Options):
    """A server reached over streamable HTTP."""

    url: str
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class InProcessServer(_Options):
    """A server object (``mcp.server.mcpserver.MCPServer``) run in this process."""

    server: Any


ServerSpec = StdioServer | HttpServer | InProcessServer


@dataclass(eq=False)
class _Server:
    name: str
    spec: ServerSpec
    client: Any = None
    tools: list[Any] = field(default_factory=list)
    error: str | None = "not connected yet"
    limiter: anyio.Semaphore = field(default_factory=lambda: anyio.Semaphore(8))
    ready: anyio.Event = field(default_factory=anyio.Event)
    wake: anyio.Event = field(default_factory=anyio.Event)
    """Set to make the connection loop re-list (list_changed) or reconnect (a failure)."""
    broken: bool = False
    checking: bool = False
    """A probe after an abandoned call is on its way."""


def _target(spec: ServerSpec) -> Any:
    mcp = _mcp()
    if isinstance(spec, StdioServer):
        return mcp.StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) if spec.env else None,
            cwd=spec.cwd,
        )
    if isinstance(spec, HttpServer):
        if not spec.headers:
            return spec.url
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # A fresh transport per connection attempt: it is a one-shot context manager.
        return streamable_http_client(
            spec.url, http_client=httpx2.AsyncClient(headers=dict(spec.headers))
        )
    return spec.server


class Hub:
    """Several MCP servers as one tool source (an async context manager).

    ```python
    async with Hub({"files": StdioServer(command="mcp-files"), "web": HttpServer(url=...)}) as hub:
        listing = toolwire.tools(hub, "gemini")
        outcome = await toolwire.execute_tool_calls(hub, "gemini", response)
    ```

    Tools are exposed as ``server__tool``; a server's tools never shadow another's. Tool
    descriptions from servers are cleaned (invisible characters, 4 KiB cap).
    """

    def __init__(self, servers: Mapping[str, ServerSpec], *, max_backoff: float = 30.0) -> None:
        if not servers:
            raise ConfigurationError("a hub needs at least one server")
        for name, spec in servers.items():
            if spec.max_concurrency < 1:
                raise ConfigurationError(f"server {name!r}: max_concurrency must be at least 1")
            if spec.timeout is not None and not spec.timeout > 0:
                raise ConfigurationError(f"server {name!r}: timeout must be positive (or None)")
            if not spec.probe_timeout > 0:
                raise ConfigurationError(f"server {name!r}: probe_timeout must be positive")
        self._servers = {
            name: _Server(name, spec, limiter=anyio.Semaphore(spec.max_concurrency))
            for name, spec in servers.items()
        }
        self.max_backoff = max_backoff
        self._tasks: anyio.abc.TaskGroup | None = None
        self._toolset: ToolSet | None = None
        # The definition each tool was approved with (first seen, or approve_definition):
        # a tool whose description, schema or annotations change needs approval again.
        self._approved: dict[tuple[str, str], str] = {}

    @classmethod
    def from_config(cls, config: Mapping[str, Any] | str | Path) -> Hub:
        """A hub from an ``mcp.json``-style config (a dict, or the path of a JSON file):
        ``{"mcpServers": {name: {"command", "args", "env"} | {"url", "headers"}}}``."""
        if isinstance(config, str | Path):
            try:
                config = json.loads(Path(config).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError) as exc:
                raise ConfigurationError(f"cannot read MCP config {config}: {exc}") from None
        servers = config.get("mcpServers") if isinstance(config, Mapping) else None
        if not isinstance(servers, Mapping):
            raise ConfigurationError("an MCP config needs an mcpServers object")
        specs: dict[str, ServerSpec] = {}
        for name, entry in servers.items():
            if not isinstance(entry, Mapping):
                raise ConfigurationError(f"server {name!r}: expected an object")
            if "command" in entry:
                specs[name] = StdioServer(
                    command=str(entry["command"]),
                    args=[str(a) for a in entry.get("args") or []],
                    env=entry.get("env"),
                    cwd=entry.get("cwd"),
                )
            elif "url" in entry:
                specs[name] = HttpServer(url=str(entry["url"]), headers=entry.get("headers"))
            else:
                raise ConfigurationError(f"server {name!r}: needs a command or a url")
        return cls(specs)

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Hub:
        _mcp()
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        for server in self._servers.values():
            self._tasks.start_soon(self._keep_connected, server)
        for server in self._servers.values():
            await server.ready.wait()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        assert self._tasks is not None
        self._tasks.cancel_scope.cancel()
        # The body's own exception is not handed to the task group: it propagates as it was,
        # not wrapped in an ExceptionGroup.
        await self._tasks.__aexit__(None, None, None)
        self._tasks = None

    async def _keep_connected(self, server: _Server) -> None:
        mcp = _mcp()
        failures = 0
        while True:
            # A server that never finishes starting must not hold the hub up.
            deadline = anyio.current_time() + server.spec.connect_timeout
            with anyio.CancelScope(deadline=deadline) as connecting:
                try:
                    async with mcp.Client(
                        _target(server.spec),
                        mode="legacy",
                        cache=None,
                        message_handler=self._notifications(server),
                    ) as client:
                        server.broken = False
                        while True:
                            server.wake = anyio.Event()
                            server.tools = await self._list(client, server)
                            connecting.deadline = math.inf
                            server.client = client
                            server.error = None
                            failures = 0
                            self._changed()
                            server.ready.set()
                            await server.wake.wait()
                            if server.broken:
                                break
                except Exception as exc:  # a server that fails in any way is down
                    server.error = _describe(exc)
            if connecting.cancelled_caught:
                server.error = f"did not start within {server.spec.connect_timeout:g} s"
            server.client = None
            server.tools = []
            self._changed()
            server.ready.set()
            failures += 1
            await anyio.sleep(min(self.max_backoff, 0.1 * 2 ** min(failures, 16)))

    def _notifications(self, server: _Server) -> Any:
        mcp = _mcp()

        async def handle(message: Any) -> None:
            if isinstance(message, mcp.types.ToolListChangedNotification):
                server.wake.set()

        return handle

    async def _list(self, client: Any, server: _Server) -> list[Any]:
        tools: dict[str, Any] = {}
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(_PAGE_CAP):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                tools.setdefault(tool.name, tool)  # a name listed twice is one tool
            cursor = page.next_cursor
            if cursor is None or cursor in seen:  # a server repeating a cursor would loop
                break
            seen.add(cursor)
        return list(tools.values())

    def _changed(self) -> None:
        self._toolset = None

    # -- the tool source -------------------------------------------------------------------------

    @property
    def status(self) -> dict[str, str | None]:
        """Per server, None when it is up, else why it is down."""
        return {name: server.error for name, server in self._servers.items()}

    def as_toolset(self) -> ToolSet:
        """The tools of the servers that are up, as ``server__tool``; rebuilt after changes."""
        if self._toolset is None:
            tools: list[Tool] = []
            for server in self._servers.values():
                if server.client is None:
                    continue
                tools.extend(
                    self._tool(server, tool)
                    for tool in server.tools
                    if _selected(server.spec, tool.name)
                )
            self._toolset = ToolSet(tools, on_collision="suffix")
        return self._toolset

    def approve_definition(self, exposed_name: str) -> None:
        """Accept the current definition of a tool whose definition changed (a "rug pull"
        makes every call to it need approval until then)."""
        tool = self.as_toolset()[exposed_name]
        assert tool.server_id is not None
        self._approved[(tool.server_id, tool.name)] = _fingerprint(tool)
        self._changed()

    def _tool(self, server: _Server, tool: Any) -> Tool:
        annotations = (
            tool.annotations.model_dump(by_alias=True, exclude_none=True)
            if (tool.annotations is not None)
            else None
        )
        description = clean_description(tool.description)
        fingerprint = _fingerprint_of(description, tool.input_schema, annotations)
        approved = self._approved.setdefault((server.name, tool.name), fingerprint)

        return Tool(
            name=tool.name,
            description=description,
            input_schema=tool.input_schema,
            output_schema=tool.output_schema,
            annotations=annotations,
            server_id=server.name,
            handler=partial(self._call, server, tool.name),
            # The executor times the call out; cancelled, the SDK tells the server.
            timeout=server.spec.timeout,
            needs_approval=fingerprint != approved,
        )

    async def _call(self, server: _Server, name: str, /, **arguments: Any) -> ToolResult:
        client = server.client
        if client is None:
            return ToolResult.error(
                "unavailable", f"Server {server.name!r} is unavailable: {server.error}."
            )
        await acquire(server.limiter)
        try:
            result = await client.call_tool(name, arguments)
        except anyio.get_cancelled_exc_class():
            # Timed out or cancelled: a slow tool, or a hung server? A probe tells, off this path.
            if self._tasks is not None and not server.checking:
                server.checking = True
                self._tasks.start_soon(self._check_after_abandoned_call, server)
            raise
        except Exception as exc:  # mapped to an answer; nothing leaks to the caller
            return self._failure(server, name, exc)
        finally:
            server.limiter.release()
        return result_from_mcp(result)

    async def check(self, name: str) -> bool:
        """Probe server ``name`` with a ``tools/list`` request (every server answers it; the
        protocol's ping is gone from its newest revision): True when it answers within its
        ``probe_timeout``; one that doesn't (hung, or its connection broke) is marked down and
        reconnected.

        The hub checks a server this way by itself after one of its calls is abandoned.

        Raises:
            ConfigurationError: the hub has no server ``name``.
        """
        server = self._servers.get(name)
        if server is None:
            raise ConfigurationError(f"the hub has no server {name!r}")
        client = server.client
        try:
            if client is None:
                return False
            with anyio.fail_after(server.spec.probe_timeout):
                await client.list_tools()
            return True
        except Exception as exc:  # no answer in time, a broken connection, or garbage
            if server.client is client:
                reason = (
                    f"it did not answer a probe within {server.spec.probe_timeout:g} s"
                    if isinstance(exc, TimeoutError)
                    else _describe(exc)
                )
                self._down(server, reason)
            return False

    async def _check_after_abandoned_call(self, server: _Server) -> None:
        try:
            await self.check(server.name)
        finally:
            server.checking = False

    def _failure(self, server: _Server, name: str, exc: Exception) -> ToolResult:
        mcp = _mcp()
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            exc = exc.exceptions[0]  # the SDK's task groups wrap single errors
        if isinstance(exc, mcp.MCPError):
            if exc.code == mcp.types.REQUEST_TIMEOUT:
                return ToolResult.error("timeout", f"Tool {name!r} timed out on the server.")
            if exc.code == mcp.types.CONNECTION_CLOSED:
                return self._lost(server, exc)
            return ToolResult.error("failed", f"Tool {name!r} failed: {exc.message}")
        if isinstance(exc, RuntimeError):  # e.g. the SDK's output-schema check
            return ToolResult.error("failed", f"Tool {name!r} failed: {exc}")
        return self._lost(server, exc)  # the connection broke

    def _lost(self, server: _Server, exc: BaseException) -> ToolResult:
        return ToolResult.error("unavailable", self._down(server, _describe(exc)))

    def _down(self, server: _Server, reason: str) -> str:
        """The server is down until the connection loop reconnects it; returns what to say."""
        message = f"Server {server.name!r} became unavailable: {reason}."
        server.broken = True
        server.client = None
        server.error = message
        self._changed()
        server.wake.set()
        return message


def _fingerprint_of(description: str, schema: Any, annotations: Any) -> str:
    payload = canonical_json(
        {"description": description, "schema": schema, "annotations": annotations}
    )
    return hashlib.sha256(payload.encode()).hexdigest()


def _fingerprint(tool: Tool) -> str:
    """What a model is told about a tool, hashed."""
    return _fingerprint_of(tool.description or "", tool.input_schema, tool.annotations)


def _selected(spec: ServerSpec, name: str) -> bool:
    if spec.include is not None and not any(fnmatch.fnmatchcase(name, p) for p in spec.include):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in spec.exclude)


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
