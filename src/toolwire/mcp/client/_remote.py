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

    # A fresh client per connection attempt, closed with it.
    return _closing(_http_client(server, token_store), partial(streamable_http_client, spec.url))


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
    server.refused_status = None

    async def refused(response: Any) -> None:  # what the SDK's error leaves out
        code = response.status_code
        server.refused_status = code if code in _REFUSED else None

    options: dict[str, Any] = {
        "headers": dict(spec.headers) if spec.headers else None,
        "timeout": timeout if timeout is not None else httpx2.Timeout(30.0, read=300.0),
        "event_hooks": {"response": [refused]},
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


_REFUSED = {
    401: "HTTP 401: its token is missing, expired or not one it accepts",
    403: "HTTP 403: its token does not let it in",
}
"""What an HTTP server's refusal of the hub's credentials says (never the token itself)."""


def authorization_error(
    exc: BaseException, server: ServerState | None = None
) -> AuthorizationError | None:
    """The ``AuthorizationError`` a connection failed with, however deep in the SDK's task
    groups, or, for ``server``, the refusal of its credentials its last HTTP answer gave
    (401, 403); None when it failed otherwise."""
    found = _authorization_error(exc)
    if found is None and server is not None and server.refused_status is not None:
        why = _REFUSED[server.refused_status]
        message = f"Server {server.name!r} refused the hub's credentials ({why})"
        found = AuthorizationError(server.name, "token_refused", message)
    return found


def _authorization_error(exc: BaseException) -> AuthorizationError | None:
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
