"""An OAuth 2.1 authorization server and an MCP server that requires its tokens, both served
on 127.0.0.1 (uvicorn in a thread), for the OAuth tests.

The authorization server is small and strict where the client is tested: dynamic registration,
an authorize endpoint that approves at once (a test follows its redirect), a token endpoint
checking PKCE (S256), the redirect URI and the client's secret, refresh tokens that rotate, and
the client-credentials grant. Knobs make it hostile: a token endpoint that hangs, oversized or
compressed answers, metadata that points elsewhere, errors that quote the request.

The MCP server is the SDK's own (streamable HTTP) behind a bearer check: protected-resource
metadata, and a 401 with ``WWW-Authenticate`` (``resource_metadata``, ``scope``) for a missing,
unknown, expired or revoked token.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import secrets
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import anyio
import httpx2
import uvicorn
from mcp.server.mcpserver import MCPServer
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

Scope = dict[str, Any]
JWT_BEARER = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"


@contextmanager
def serving(app: Any, *, bound: socket.socket | None = None) -> Iterator[str]:
    """``app`` served on 127.0.0.1 by uvicorn in a thread; yields its base URL. ``bound``: a
    socket already listening (so the app may know its URL before it starts)."""
    listener = bound or _listening()
    port = listener.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=2, lifespan="auto")
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        listener.close()


def _listening() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    return listener


def pkce_challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")


@dataclass
class AuthServer:
    """The authorization server's state; its knobs are plain attributes."""

    url: str = ""
    scopes: list[str] = field(default_factory=lambda: ["tools", "offline_access"])
    access_ttl: int = 3600
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    access: dict[str, dict[str, Any]] = field(default_factory=dict)
    refresh: dict[str, dict[str, Any]] = field(default_factory=dict)
    issued: list[str] = field(default_factory=list)
    """Every token, secret and code handed out (what must never leak)."""
    token_requests: list[dict[str, Any]] = field(default_factory=list)
    """Per token request: the grant, how the client authenticated, the scope asked."""
    authorize_requests: list[dict[str, str]] = field(default_factory=list)
    registrations: int = 0
    metadata_requests: int = 0
    # -- knobs ------------------------------------------------------------------------------
    metadata_overrides: dict[str, Any] = field(default_factory=dict)
    dcr: bool = True
    cimd: bool = False
    hang_token: bool = False
    released: threading.Event = field(default_factory=threading.Event)
    oversized: set[str] = field(default_factory=set)
    """Paths ("metadata", "token") that answer 2 MiB."""
    compressed: set[str] = field(default_factory=set)
    token_in_url: bool = False
    """The authorize endpoint answers with a token in the redirect (the implicit grant)."""
    echo_errors: bool = False
    """Token errors quote the request's form (secrets and all), as a careless server might."""
    malformed_token: bool = False
    """Token answers lack access_token but carry a refresh token."""
    redirect_metadata: str | None = None
    """The metadata endpoint redirects there."""

    def revoke_all(self) -> None:
        self.access.clear()
        self.refresh.clear()

    def expire_access(self) -> None:
        for grant in self.access.values():
            grant["expires_at"] = time.time() - 10

    def verify(self, token: str, scope: str) -> bool:
        grant = self.access.get(token)
        return bool(grant and grant["expires_at"] > time.time() and scope in grant["scopes"])

    def grants(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.token_requests if r["grant_type"] == kind]

    def register(self, client_id: str, secret: str | None, redirect_uris: list[str]) -> None:
        """A client registered beforehand."""
        method = "client_secret_basic" if secret else "none"
        self.clients[client_id] = {
            "secret": secret,
            "redirect_uris": redirect_uris,
            "method": method,
        }
        if secret:
            self.issued.append(secret)

    # -- the app ----------------------------------------------------------------------------

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        path = request.url.path
        handler = {
            "/.well-known/oauth-authorization-server": self._metadata,
            "/.well-known/openid-configuration": self._metadata,
            "/register": self._register,
            "/authorize": self._authorize,
            "/token": self._token,
        }.get(path)
        response = await handler(request) if handler is not None else Response(status_code=404)
        await response(scope, receive, send)

    def metadata(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "issuer": self.url,
            "authorization_endpoint": f"{self.url}/authorize",
            "token_endpoint": f"{self.url}/token",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": [
                "client_secret_basic",
                "client_secret_post",
                "none",
            ],
            "scopes_supported": self.scopes,
            "authorization_response_iss_parameter_supported": True,
            "client_id_metadata_document_supported": self.cimd,
        }
        if self.dcr:
            data["registration_endpoint"] = f"{self.url}/register"
        data.update(self.metadata_overrides)
        return data

    async def _metadata(self, request: Request) -> Response:
        self.metadata_requests += 1
        if self.redirect_metadata is not None:
            return RedirectResponse(self.redirect_metadata, status_code=307)
        return self._answer("metadata", self.metadata())

    def _answer(self, what: str, data: Any, status: int = 200) -> Response:
        body = json.dumps(data).encode()
        if what in self.oversized:
            padding = b'{"padding": "' + b"x" * (2 << 20) + b'"}'
            return Response(padding, media_type="application/json")
        if what in self.compressed:
            return Response(
                gzip.compress(body),
                status_code=status,
                media_type="application/json",
                headers={"Content-Encoding": "gzip"},
            )
        return Response(body, status_code=status, media_type="application/json")

    async def _register(self, request: Request) -> Response:
        if not self.dcr:
            return Response(status_code=404)
        self.registrations += 1
        data = await request.json()
        client_id = f"client-{secrets.token_hex(8)}"
        method = data.get("token_endpoint_auth_method") or "client_secret_basic"
        secret = secrets.token_urlsafe(24) if method != "none" else None
        self.register(client_id, secret, list(data.get("redirect_uris") or []))
        self.clients[client_id]["method"] = method
        answer = {
            **data,
            "client_id": client_id,
            "token_endpoint_auth_method": method,
            "client_id_issued_at": int(time.time()),
        }
        if secret:
            answer["client_secret"] = secret
        return JSONResponse(answer, status_code=201)

    async def _authorize(self, request: Request) -> Response:
        params = dict(request.query_params)
        self.authorize_requests.append(params)
        client = self.clients.get(params.get("client_id", ""))
        if client is None and self.cimd and params.get("client_id", "").startswith("https://"):
            client = {"redirect_uris": [params.get("redirect_uri")], "method": "none"}
            self.clients[params["client_id"]] = {**client, "secret": None}
        redirect = params.get("redirect_uri", "")
        if client is None or redirect not in client["redirect_uris"]:
            return Response("unknown client or redirect URI", status_code=400)
        if params.get("response_type") != "code" or params.get("code_challenge_method") != "S256":
            return RedirectResponse(f"{redirect}?{urlencode({'error': 'invalid_request'})}", 302)
        if self.token_in_url:
            token = f"implicit-{secrets.token_urlsafe(16)}"
            self.issued.append(token)
            return RedirectResponse(f"{redirect}#access_token={token}&state={params['state']}", 302)
        code = secrets.token_urlsafe(24)
        self.issued.append(code)
        self.codes[code] = {
            "client_id": params["client_id"],
            "redirect_uri": redirect,
            "challenge": params.get("code_challenge"),
            "scope": params.get("scope", ""),
            "resource": params.get("resource"),
        }
        query = {"code": code, "state": params.get("state", ""), "iss": self.url}
        return RedirectResponse(f"{redirect}?{urlencode(query)}", status_code=302)

    async def _token(self, request: Request) -> Response:
        form = {
            key: value for key, value in (await request.form()).items() if isinstance(value, str)
        }
        grant = form.get("grant_type", "")
        if form.get("code_verifier"):
            self.issued.append(form["code_verifier"])  # the client's secret too
        client_id, secret, how = self._client_auth(request, form)
        self.token_requests.append(
            {"grant_type": grant, "auth": how, "scope": form.get("scope"), "client_id": client_id}
        )
        if self.hang_token:
            while not self.released.is_set():
                await anyio.sleep(0.05)
        if self.echo_errors:
            return self._answer(
                "token", {"error": "invalid_grant", "error_description": str(form)}, 400
            )
        client = self.clients.get(client_id or "")
        if (
            client is None
            or (client["secret"] and client["secret"] != secret)
            or (client["method"] == "private_key_jwt" and how != "private_key_jwt")
        ):
            return self._answer("token", {"error": "invalid_client"}, 401)
        if grant == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            if (
                code is None
                or code["client_id"] != client_id
                or code["redirect_uri"] != form.get("redirect_uri")
                or pkce_challenge(form.get("code_verifier", "")) != code["challenge"]
            ):
                return self._answer("token", {"error": "invalid_grant"}, 400)
            return self._issue(client_id or "", code["scope"], refresh=True)
        if grant == "refresh_token":
            old = self.refresh.pop(form.get("refresh_token", ""), None)
            if old is None or old["client_id"] != client_id:
                return self._answer("token", {"error": "invalid_grant"}, 400)
            return self._issue(client_id or "", old["scope"], refresh=True)
        if grant == "client_credentials" and (client["secret"] or how == "private_key_jwt"):
            return self._issue(client_id or "", form.get("scope") or "tools", refresh=False)
        return self._answer("token", {"error": "unsupported_grant_type"}, 400)

    def register_key(self, client_id: str, public_pem: bytes) -> None:
        """A client registered beforehand with its public key (``private_key_jwt``)."""
        self.clients[client_id] = {
            "secret": None,
            "key": public_pem,
            "redirect_uris": [],
            "method": "private_key_jwt",
        }

    def _client_auth(
        self, request: Request, form: dict[str, str]
    ) -> tuple[str | None, str | None, str]:
        if form.get("client_assertion_type") == JWT_BEARER:
            import jwt

            assertion = form.get("client_assertion", "")
            self.issued.append(assertion)
            unverified = jwt.decode(assertion, options={"verify_signature": False})
            client = self.clients.get(unverified.get("iss", ""), {})
            try:
                claims = jwt.decode(
                    assertion, client.get("key", b""), algorithms=["ES256"], audience=self.url
                )
            except jwt.PyJWTError:
                return None, None, "private_key_jwt"
            return claims["sub"], None, "private_key_jwt"
        header = request.headers.get("authorization", "")
        if header.lower().startswith("basic "):
            decoded = base64.b64decode(header[6:]).decode()
            client_id, _, secret = decoded.partition(":")
            from urllib.parse import unquote

            return unquote(client_id), unquote(secret), "basic"
        if "client_secret" in form:
            return form.get("client_id"), form["client_secret"], "post"
        return form.get("client_id"), None, "none"

    def _issue(self, client_id: str, scope: str, *, refresh: bool) -> Response:
        access = f"at-{secrets.token_urlsafe(24)}"
        self.issued.append(access)
        scopes = scope.split() or ["tools"]
        self.access[access] = {
            "client_id": client_id,
            "scopes": scopes,
            "expires_at": time.time() + self.access_ttl,
        }
        answer: dict[str, Any] = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": self.access_ttl,
            "scope": " ".join(scopes),
        }
        if refresh:
            token = f"rt-{secrets.token_urlsafe(24)}"
            self.issued.append(token)
            self.refresh[token] = {"client_id": client_id, "scope": scope}
            answer["refresh_token"] = token
        if self.malformed_token:
            del answer["access_token"]
        return self._answer("token", answer)


@dataclass
class ProtectedServer:
    """The SDK's MCP server (tools ``add`` and ``whoami``) behind a bearer-token check."""

    auth: AuthServer
    url: str = ""
    scope: str = "tools"
    prm_overrides: dict[str, Any] = field(default_factory=dict)
    seen: list[str | None] = field(default_factory=list)
    """The Authorization header of each MCP request."""
    json_response: bool = False
    """Answer each request with one JSON response (its headers come with the answer), not a
    stream."""
    waiting_for_an_add: threading.Event = field(default_factory=threading.Event)
    """Set once a call of ``wait_for_an_add`` runs (the server runs in a thread of its own)."""

    def __post_init__(self) -> None:
        self.mcp = _tools(self.waiting_for_an_add)
        self.inner = self.mcp.streamable_http_app(json_response=self.json_response)

    @property
    def prm_url(self) -> str:
        base = urlsplit(self.url)
        return f"{base.scheme}://{base.netloc}/.well-known/oauth-protected-resource{base.path}"

    def prm(self) -> dict[str, Any]:
        return {
            "resource": self.url,
            "authorization_servers": [self.auth.url],
            "scopes_supported": [self.scope],
            "bearer_methods_supported": ["header"],
            **self.prm_overrides,
        }

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.inner(scope, receive, send)
            return
        path = scope["path"]
        if path.startswith("/.well-known/oauth-protected-resource"):
            response: Response = JSONResponse(self.prm())
            if path != urlsplit(self.prm_url).path:
                response = Response(status_code=404)
            await response(scope, receive, send)
            return
        headers = dict(scope["headers"])
        header = headers.get(b"authorization", b"").decode("latin-1") or None
        self.seen.append(header)
        query = parse_qs(scope.get("query_string", b"").decode())
        token = header[7:] if header and header.lower().startswith("bearer ") else None
        if "access_token" in query or token is None or not self.auth.verify(token, self.scope):
            error = ', error="invalid_token"' if token else ""
            challenge = f'Bearer resource_metadata="{self.prm_url}", scope="{self.scope}"{error}'
            await Response(status_code=401, headers={"WWW-Authenticate": challenge})(
                scope, receive, send
            )
            return
        await self.inner(scope, receive, send)


def _tools(waiting_for_an_add: threading.Event) -> MCPServer:
    server = MCPServer("guarded")

    added: list[int] = []

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        added.append(a + b)
        return a + b

    @server.tool(description="Wait (up to a bound) for an add made after it started.")
    async def wait_for_an_add(seconds: float) -> str:
        before = len(added)
        waiting_for_an_add.set()
        with anyio.move_on_after(seconds):
            while len(added) == before:
                await anyio.sleep(0.01)
            return "an add came while this call ran"
        return "no add came while this call ran"

    return server


@contextmanager
def oauth_pair(
    auth: AuthServer | None = None, protected: ProtectedServer | None = None
) -> Iterator[tuple[AuthServer, ProtectedServer]]:
    """The two servers, running; each knows its URL before it answers anything."""
    auth = auth or AuthServer()
    protected = protected or ProtectedServer(auth)
    auth_socket, mcp_socket = _listening(), _listening()
    auth.url = f"http://127.0.0.1:{auth_socket.getsockname()[1]}"
    protected.url = f"http://127.0.0.1:{mcp_socket.getsockname()[1]}/mcp"
    with serving(auth, bound=auth_socket), serving(protected, bound=mcp_socket):
        try:
            yield auth, protected
        finally:
            auth.released.set()  # a hanging token endpoint lets go before the servers stop


@contextmanager
def another_protected(auth: AuthServer) -> Iterator[ProtectedServer]:
    """A second MCP server taking the same authorization server's tokens (any it issued with
    the scope), on its own port: the server a token kept for the first must never reach."""
    protected = ProtectedServer(auth)
    listener = _listening()
    protected.url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    with serving(protected, bound=listener):
        yield protected


async def follow_authorization(url: str) -> str:
    """What a person's browser does, approving: open the authorization URL, and return where
    the authorization server sends it back (the redirect is not followed)."""
    async with httpx2.AsyncClient() as client:
        response = await client.get(url)
    assert response.status_code in (302, 303, 307), response.status_code
    return response.headers["location"]
