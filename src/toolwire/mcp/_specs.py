"""The servers a hub reaches, as specs: what to start or connect to, and the limits of each."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["HttpServer", "InProcessServer", "ServerSpec", "SseServer", "StdioServer"]


@dataclass(frozen=True, kw_only=True)
class _Options:
    include: Sequence[str] | None = None
    """Glob patterns over the server's tool names; only matching tools are listed."""
    exclude: Sequence[str] = ()
    timeout: float | None = 60.0
    """Seconds one call may go without progress: counted from when the request is sent, and
    restarted by each progress notification the server sends for it (the hub applies it; a call
    that runs out is cancelled on the server and answered ``timeout``). None: no limit."""
    max_total_timeout: float | None = 600.0
    """Seconds one call may take in all, however much progress it reports (the tools'
    ``timeout``, applied by the executor); at least ``timeout``. None: no cap."""
    max_concurrency: int = 8
    """Calls to this server running at once."""
    connect_timeout: float = 30.0
    """Seconds the server may take to start and list its tools."""
    probe_timeout: float = 5.0
    """Seconds the server has to answer a probe (a ``tools/list`` request) after one of its
    calls was abandoned (timed out or cancelled); a server that doesn't is hung, so it is marked
    down and reconnected."""
    taints: Sequence[str] = ()
    """Sources its tools' output brings into the model's context besides the server itself
    (e.g. ``"web"`` for a fetcher): what ``Outcome.taint`` collects and policies match with
    ``tainted_by``."""


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
class SseServer(_Options):
    """A server reached over the legacy HTTP+SSE transport (protocol revision 2024-11-05): a
    GET on ``url`` opens the event stream, and messages are POSTed where it says."""

    url: str
    headers: Mapping[str, str] | None = None


@dataclass(frozen=True, kw_only=True)
class InProcessServer(_Options):
    """A server object (``mcp.server.mcpserver.MCPServer``) run in this process."""

    server: Any


ServerSpec = StdioServer | HttpServer | SseServer | InProcessServer
