"""Remote servers (streamable HTTP, SSE): their transports with headers and authorization,
checked before anything is sent, and how a failed authorization is found in what the SDK
raises."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any
from urllib.parse import parse_qs, urlsplit

from toolwire.errors import AuthorizationError, ConfigurationError
from toolwire.mcp.client._specs import ClientCredentials, HttpServer, OAuth, SseServer
from toolwire.mcp.client._state import ServerState
from toolwire.mcp.client._tokens import TokenStore

__all__ = ["authorization_error", "check_remote", "remote_transport"]


def remote_transport(server: ServerState, token_store: TokenStore | None) -> Any:
    """The SDK transport for a remote server (an async context manager of its two streams)."""
    spec = server.spec
    assert isinstance(spec, HttpServer | SseServer)
    if isinstance(spec, SseServer):
        from mcp.client.sse import sse_client

        if spec.auth is None:
            return sse_client(spec.url, headers=dict(spec.headers) if spec.headers else None)
        return sse_client(spec.url, httpx_client_factory=partial(_http_client, server, token_store))
    from mcp.client.streamable_http import streamable_http_client

    if spec.headers or spec.auth is not None:
        # A fresh client per connection attempt, closed with it.
        return _closing(
            _http_client(server, token_store), partial(streamable_http_client, spec.url)
        )
    return streamable_http_client(spec.url)  # the SDK makes (and closes) its own


def _http_client(
    server: ServerState,
    token_store: TokenStore | None,
    headers: Any = None,
    timeout: Any = None,
    auth: Any = None,
) -> Any:
    """The HTTP client of a server with headers or authorization (the SDK's timeouts: 30 s,
    reading 300 s); its ``auth`` is the spec's, an OAuth one bounded by its transport. Takes
    what the SSE transport's client factory is given, and keeps the spec's instead."""
    import httpx2

    spec = server.spec
    assert isinstance(spec, HttpServer | SseServer)
    options: dict[str, Any] = {
        "headers": dict(spec.headers) if spec.headers else None,
        "timeout": timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
    }
    if isinstance(spec.auth, OAuth | ClientCredentials):
        from toolwire.mcp.client._oauth import http_auth

        options["auth"], options["transport"] = http_auth(
            spec.auth, spec.url, label=server.name, store=token_store
        )
        server.oauth = options["auth"]
    elif spec.auth is not None:
        options["auth"] = spec.auth
    return httpx2.AsyncClient(**options)


@asynccontextmanager
async def _closing(client: Any, transport: Any) -> AsyncIterator[Any]:
    """``transport(http_client=client)``, with the client closed after it."""
    async with client, transport(http_client=client) as streams:
        yield streams


def authorization_error(exc: BaseException) -> AuthorizationError | None:
    """The ``AuthorizationError`` a connection failed with, however deep in the SDK's task
    groups; None when it failed otherwise."""
    seen: set[int] = set()
    waiting = [exc]
    while waiting and len(seen) < 64:
        current = waiting.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, AuthorizationError):
            return current
        if isinstance(current, BaseExceptionGroup):
            waiting.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                waiting.append(linked)
    return None


def check_remote(name: str, spec: HttpServer | SseServer) -> None:
    """A remote server's URL and authorization, checked before anything is sent.

    Raises:
        ConfigurationError: a token in the URL's query, or an ``auth`` of another kind.
    """
    try:
        query = parse_qs(urlsplit(spec.url).query)
    except ValueError:
        query = {}
    if "access_token" in query:
        raise ConfigurationError(
            f"server {name!r}: its url carries an access_token in its query, where OAuth 2.1 "
            "forbids tokens (URLs end up in logs and histories): use auth= or an "
            "Authorization header"
        )
    auth = spec.auth
    if auth is None:
        return
    if isinstance(auth, OAuth | ClientCredentials):
        if not auth.timeout > 0:
            raise ConfigurationError(f"server {name!r}: the OAuth timeout must be positive")
        from toolwire.mcp.client._oauth import warn_unpinned

        warn_unpinned(name, auth)
        return
    import httpx2

    if not isinstance(auth, httpx2.Auth):
        raise ConfigurationError(
            f"server {name!r}: auth is an OAuth, a ClientCredentials or an httpx2.Auth"
        )
