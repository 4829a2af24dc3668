"""The servers a hub reaches, as specs: what to start or connect to, the limits of each, and
how a remote one is authorized (OAuth, client credentials)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    import httpx2

    from toolwire.mcp.client._tokens import TokenStore

__all__ = [
    "Authorizer",
    "ClientCredentials",
    "HttpServer",
    "InProcessServer",
    "OAuth",
    "ServerSpec",
    "SseServer",
    "StdioServer",
]

Authorizer: TypeAlias = Callable[[str], Awaitable[str]]
"""Takes a person (or a test) through an authorization: given the authorization server's URL
to open, returns the URL the server sent the browser back to (the redirect URI with its
``code`` and ``state``)."""


@dataclass(frozen=True, kw_only=True)
class OAuth:
    """OAuth 2.1 for a remote server ([`HttpServer`][toolwire.mcp.HttpServer],
    [`SseServer`][toolwire.mcp.SseServer]), as the MCP authorization spec has it, through the
    ``mcp`` SDK's ``OAuthClientProvider``: on the server's 401, its protected-resource
    metadata and its authorization server's metadata are discovered, the client is
    identified (a Client ID Metadata Document when ``client_metadata_url`` is given and the
    server supports them, else dynamic registration, or the pre-registered ``client_id``),
    and the authorization code is asked for with PKCE (S256), for the scopes the server's
    ``WWW-Authenticate`` names (else its metadata's) plus ``scope``. Tokens are kept in
    ``store`` and refreshed when they expire, or when the server refuses one.

    A person authorizes once, with ``toolwire mcp login SERVER`` (or
    [`login`][toolwire.mcp.login]); a hub then uses and refreshes the stored tokens. A hub
    never opens a browser: a server that needs an authorization nobody gave is down, with an
    [`AuthorizationRequired`][toolwire.errors.AuthorizationRequired] saying to log in, unless
    ``authorize`` is given.

    Every request of the flow (metadata, registration, token) goes to an ``https://`` URL
    (``http://`` on loopback only), follows redirects only within its origin, must answer
    within ``timeout`` seconds with at most 1 MiB, and fails with an
    [`AuthorizationError`][toolwire.errors.AuthorizationError] that names what went wrong
    and never holds a token or a secret.

    Args:
        scope: scopes to ask for besides those the server names (space-separated).
        client_id: a client registered beforehand with the authorization server (no dynamic
            registration then).
        client_secret: its secret, if it has one (kept out of reprs).
        client_metadata_url: the ``https://`` URL of this client's metadata document (a
            Client ID Metadata Document): its client id where the server supports them.
        redirect_uri: where the authorization server sends the browser back. Default: a
            loopback address (``http://127.0.0.1:PORT/callback``) that ``login`` listens on,
            kept with the client's registration.
        client_name: the name dynamic registration gives the authorization server.
        issuer: the authorization server this client belongs to: any other (named by a
            server's metadata) is refused before anything is sent to it. Give it with a
            ``client_secret``.
        authorize: takes the flow through the authorization server's page when no token can
            be had otherwise (see [`Authorizer`][toolwire.mcp.Authorizer]); None: the hub
            asks for a login instead.
        store: where tokens are kept; None: the hub's (``Hub(token_store=...)``), by default
            a file under the user's config directory
            ([`FileTokenStore`][toolwire.mcp.FileTokenStore]).
        timeout: seconds each request of the flow may take.
    """

    scope: str | None = None
    client_id: str | None = None
    client_secret: str | None = field(default=None, repr=False)
    client_metadata_url: str | None = None
    redirect_uri: str | None = None
    client_name: str = "toolwire"
    issuer: str | None = None
    authorize: Authorizer | None = field(default=None, repr=False, compare=False)
    store: TokenStore | None = field(default=None, repr=False, compare=False)
    timeout: float = 30.0


@dataclass(frozen=True, kw_only=True)
class ClientCredentials:
    """The OAuth client-credentials grant, for services: no person, no browser. The client
    authenticates to the authorization server's token endpoint with its secret
    (``client_secret_basic`` or ``client_secret_post``) or with a JWT it signs with its
    private key (``private_key_jwt``, RFC 7523), and gets a token for the server; a new one
    when it expires. The authorization server is discovered from the server's metadata, as
    for [`OAuth`][toolwire.mcp.OAuth].

    Args:
        client_id: the client's id at the authorization server.
        client_secret: its secret (kept out of reprs); or
        private_key: its private key, PEM, to sign ``private_key_jwt`` assertions with
            (kept out of reprs).
        signing_algorithm: the key's JWS algorithm (``RS256``, ``ES256``...).
        token_endpoint_auth_method: how a secret is sent.
        issuer: the authorization server the client is registered with: a server's
            metadata naming another is refused before the secret is sent anywhere. Without
            it, the secret goes to whichever authorization server the MCP server names (a
            warning says so).
        scope: the scopes to ask for (space-separated), besides those the server names.
        store: where tokens are kept (see [`OAuth`][toolwire.mcp.OAuth]).
        timeout: seconds each request of the flow may take.
    """

    client_id: str
    client_secret: str | None = field(default=None, repr=False)
    private_key: str | None = field(default=None, repr=False)
    signing_algorithm: str = "RS256"
    token_endpoint_auth_method: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_basic"
    )
    issuer: str | None = None
    scope: str | None = None
    store: TokenStore | None = field(default=None, repr=False, compare=False)
    timeout: float = 30.0


ServerAuth: TypeAlias = "OAuth | ClientCredentials | httpx2.Auth"
"""How a remote server is authorized: [`OAuth`][toolwire.mcp.OAuth],
[`ClientCredentials`][toolwire.mcp.ClientCredentials], or any ``httpx2.Auth`` (one of the
SDK's own providers, say), used as it is."""


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
    trusted: bool = False
    """Its tools' output is trusted input (the application's own server, whose results no one
    else writes): see ``Tool.trusted`` and ``toolwire.provenance``. False: untrusted."""


@dataclass(frozen=True, kw_only=True, repr=False)
class StdioServer(_Options):
    """A server started as a subprocess, spoken to over its stdin/stdout. The repr shows the
    names of ``env``'s variables, never their values."""

    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None

    def __repr__(self) -> str:
        return _masked_repr(self)


@dataclass(frozen=True, kw_only=True, repr=False)
class HttpServer(_Options):
    """A server reached over streamable HTTP.

    ``headers`` are sent with every request (``{"Authorization": "Bearer ..."}`` for a
    static token); ``auth`` authorizes with OAuth instead (see [`OAuth`][toolwire.mcp.OAuth]).
    The repr shows header names, never their values.
    """

    url: str
    headers: Mapping[str, str] | None = None
    auth: ServerAuth | None = None

    def __repr__(self) -> str:
        return _masked_repr(self)


@dataclass(frozen=True, kw_only=True, repr=False)
class SseServer(_Options):
    """A server reached over the legacy HTTP+SSE transport (protocol revision 2024-11-05): a
    GET on ``url`` opens the event stream, and messages are POSTed where it says.
    ``headers`` and ``auth`` as for [`HttpServer`][toolwire.mcp.HttpServer]."""

    url: str
    headers: Mapping[str, str] | None = None
    auth: ServerAuth | None = None

    def __repr__(self) -> str:
        return _masked_repr(self)


@dataclass(frozen=True, kw_only=True)
class InProcessServer(_Options):
    """A server object (``mcp.server.mcpserver.MCPServer``) run in this process."""

    server: Any


ServerSpec = StdioServer | HttpServer | SseServer | InProcessServer


_MASKED = ("headers", "env")
"""Fields whose values are often credentials (an ``Authorization`` header, a token in the
environment): a repr shows their keys only (and a URL's query is left out)."""


def _masked_repr(spec: Any) -> str:
    shown = []
    for item in fields(spec):
        if not item.repr:
            continue
        value = getattr(spec, item.name)
        if item.name in _MASKED and isinstance(value, Mapping):
            text = "{" + ", ".join(f"{key!r}: '***'" for key in value) + "}"
        elif item.name == "url" and isinstance(value, str) and "?" in value:
            text = repr(value.split("?", 1)[0] + "?***")  # a query may hold a key
        else:
            text = repr(value)
        shown.append(f"{item.name}={text}")
    return f"{type(spec).__name__}({', '.join(shown)})"
