"""The gateway as an OAuth 2.1 resource server, the role the MCP authorization spec gives a
server reached over HTTP: each request proves who makes it with a bearer token, and its calls
run for that principal.

- Every request but the protected-resource metadata's needs ``Authorization: Bearer TOKEN``,
  checked by a [`TokenVerifier`][toolwire.mcp.TokenVerifier]
  ([`JwtVerifier`][toolwire.mcp.JwtVerifier], [`StaticTokens`][toolwire.mcp.StaticTokens],
  or your own).
- Refusals, as RFC 6750 writes them: no token (or another scheme), 401 with a ``Bearer``
  challenge naming the metadata (``resource_metadata``) and the scopes needed (``scope``); a
  token refused, 401 ``invalid_token``; a token lacking a needed scope, 403
  ``insufficient_scope``; a token in the URL's query, or two ``Authorization`` headers, 400
  ``invalid_request``. No answer holds the token or says why it was refused (the reason is
  logged, without the token), and nothing runs.
- The protected-resource metadata (RFC 9728) is served at
  ``/.well-known/oauth-protected-resource`` followed by the resource's path, when the gateway
  names the authorization servers its tokens come from.
- The ``Authorization`` header is taken off the request before the MCP server sees it: the
  gateway, its hub and the servers behind it never get the client's token.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qsl, urlsplit

from toolwire._net import is_loopback
from toolwire.errors import ConfigurationError, InvalidToken, MissingDependency, ToolwireError
from toolwire.runs import ledger

try:
    from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from mcp.server.auth.routes import build_resource_metadata_url, cors_middleware
    from mcp.shared.auth import ProtectedResourceMetadata
    from pydantic import AnyHttpUrl
    from starlette.authentication import AuthCredentials
    from starlette.routing import Route
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise MissingDependency("mcp", "mcp") from exc

__all__ = [
    "PRINCIPAL_KEY",
    "Authentication",
    "Identity",
    "TokenVerifier",
    "checked_url",
    "guarded",
    "metadata_routes",
    "request_principal",
]

_log = logging.getLogger("toolwire")

PRINCIPAL_KEY = "toolwire.principal"
"""The key of an authenticated request's ASGI scope holding the principal its calls run for."""
MAX_TOKEN_CHARS = 8192
"""The longest bearer token looked at: a longer one is refused before any parsing."""
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""A bearer token's characters (RFC 6750's b64token)."""
_SCOPE_TOKEN = re.compile(r"[\x21\x23-\x5b\x5d-\x7e]+")
"""A scope's characters (RFC 6749): printable ASCII but space, quote and backslash."""
_MAX_REMEMBERED = 4096
"""The most accepted tokens remembered at once (see ``Authentication.remember_seconds``)."""


@dataclass(frozen=True)
class Identity:
    """Who a bearer token proves its bearer is, as a verifier found it.

    Attributes:
        subject: the token's subject (``sub``), or None when it names none.
        scopes: the scopes the token grants.
        claims: every claim of the token (a JWT's payload), read-only.
        client_id: the OAuth client the token was issued to (``client_id`` or ``azp``), if
            known.
        issuer: who issued it (``iss``), if known.
        expires_at: when it expires, in seconds since the epoch; None when it does not.
    """

    subject: str | None
    scopes: frozenset[str] = frozenset()
    claims: Mapping[str, Any] = field(default_factory=dict)
    client_id: str | None = None
    issuer: str | None = None
    expires_at: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "scopes", frozenset(self.scopes))
        object.__setattr__(self, "claims", MappingProxyType(dict(self.claims)))


@runtime_checkable
class TokenVerifier(Protocol):
    """What checks a bearer token: [`JwtVerifier`][toolwire.mcp.JwtVerifier],
    [`StaticTokens`][toolwire.mcp.StaticTokens], or your own (an introspection endpoint's
    client, say)."""

    async def verify(self, token: str) -> Identity:
        """The identity ``token`` proves.

        Raises:
            InvalidToken: it proves none; its ``reason`` (logged) never holds the token. Any
                other exception is taken for the verifier being unable to check now: the
                client is answered 503, and nothing runs.
        """
        ...


class Authentication:
    """How a gateway served over HTTP authenticates its clients (``toolwire.mcp.serve(...,
    auth=)``, ``Gateway(auth=)``): each request's bearer token is checked by ``verifier``,
    and its calls run for the principal the token names. Policies see that principal, the
    listing shows each client what its policy lets it call, and a run is bound to it.

    Args:
        verifier: checks each request's bearer token.
        resource: the gateway's URL as its clients reach it (``https://tools.example.com/mcp``),
            the ``resource`` of its protected-resource metadata: ``https``, or ``http`` on a
            loopback host. Default: the URL it listens on (a gateway listening beyond loopback
            that names authorization servers must be told).
        authorization_servers: the issuers of its tokens, named in its metadata so that
            clients know where to get one. Default: the verifier's ``issuer``, when it has
            one (a [`JwtVerifier`][toolwire.mcp.JwtVerifier]'s). Without any, no metadata is
            served (static tokens are handed out, not obtained).
        scopes: the scopes every token must grant (else 403 ``insufficient_scope``); named in
            the metadata and in the challenges.
        principal: who a token's calls run for: the name of a claim (default ``"sub"``, the
            subject), or a function of the [`Identity`][toolwire.mcp.Identity] returning the
            principal. A token whose principal is missing or names nobody (None, an empty or
            blank string, 0, an empty object...) is refused.
        remember_seconds: how long an accepted token is remembered (by its digest, with its
            identity and principal, up to 4,096 tokens) before the verifier checks it again;
            never past the token's expiry. Checking a JWT's signature costs more than the
            rest of a call's way through the gateway; 0 checks every request.

    Raises:
        ConfigurationError: a URL or a scope that cannot be used.
    """

    def __init__(
        self,
        verifier: TokenVerifier,
        *,
        resource: str | None = None,
        authorization_servers: Sequence[str] | None = None,
        scopes: Sequence[str] = (),
        principal: str | Callable[[Identity], Any] = "sub",
        remember_seconds: float = 60.0,
    ) -> None:
        if not callable(getattr(verifier, "verify", None)):
            raise ConfigurationError("verifier is a TokenVerifier (an async verify(token))")
        if isinstance(scopes, str):
            raise ConfigurationError("scopes is a list of scopes, not one string")
        for scope in scopes:
            if not isinstance(scope, str) or not _SCOPE_TOKEN.fullmatch(scope):
                raise ConfigurationError(f"{scope!r} is not a scope (RFC 6749 scope-token)")
        if not (callable(principal) or (isinstance(principal, str) and principal)):
            raise ConfigurationError("principal is a claim's name or a function of the identity")
        if not math.isfinite(remember_seconds) or remember_seconds < 0:
            raise ConfigurationError(
                f"remember_seconds is a number of seconds, not {remember_seconds!r}"
            )
        if authorization_servers is None:
            issuer = getattr(verifier, "issuer", None)
            authorization_servers = [issuer] if isinstance(issuer, str) else []
        if isinstance(authorization_servers, str):
            raise ConfigurationError("authorization_servers is a list of URLs, not one string")
        self.verifier = verifier
        self.resource = checked_url(resource, "resource") if resource is not None else None
        self.authorization_servers = tuple(
            checked_url(url, "an authorization server") for url in authorization_servers
        )
        self.scopes = tuple(dict.fromkeys(scopes))
        self.principal = principal
        self.remember_seconds = remember_seconds

    def principal_of(self, identity: Identity) -> Any:
        """The principal ``identity``'s calls run for.

        Raises:
            InvalidToken: the token names no principal.
        """
        if isinstance(self.principal, str):
            value = identity.claims.get(self.principal)
            if value is None and self.principal == "sub":
                value = identity.subject
        else:
            value = self.principal(identity)
        if value is None or isinstance(value, bool) or ledger.identity_json(value) is None:
            raise InvalidToken("the token names no principal")
        return value

    def metadata_url(self, resource: str) -> str | None:
        """Where the protected-resource metadata of ``resource`` is served; None when the
        gateway names no authorization server (no metadata then)."""
        if not self.authorization_servers:
            return None
        return str(build_resource_metadata_url(AnyHttpUrl(resource)))


def checked_url(url: Any, what: str) -> str:
    """``url``, when it is an ``https`` URL (or an ``http`` one on a loopback host) without
    credentials, query or fragment.

    Raises:
        ConfigurationError: naming it as ``what``.
    """
    if not isinstance(url, str):
        raise ConfigurationError(f"{what} is a URL, not {type(url).__name__}")
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018  a port that is not a number raises here
    except ValueError:
        raise ConfigurationError(f"{what} {url!r} is not a URL") from None
    if parts.scheme not in ("https", "http") or not host:
        raise ConfigurationError(f"{what} {url!r} is not an https URL")
    if parts.scheme == "http" and not is_loopback(host):
        raise ConfigurationError(f"{what} {url!r} is http: only a loopback one may be")
    if parts.username is not None or parts.password is not None:
        raise ConfigurationError(f"{what} {url!r} holds credentials")
    if parts.fragment or parts.query:
        raise ConfigurationError(f"{what} {url!r} has a query or a fragment")
    return url


def metadata_routes(auth: Authentication, resource: str, name: str) -> list[Route]:
    """The route serving ``resource``'s protected-resource metadata (RFC 9728, through the
    SDK's handler), or none when ``auth`` names no authorization server."""
    url = auth.metadata_url(resource)
    if url is None:
        return []
    # Validated from the strings, so an issuer keeps its exact spelling (no slash added).
    metadata = ProtectedResourceMetadata.model_validate(
        {
            "resource": resource,
            "authorization_servers": list(auth.authorization_servers),
            "scopes_supported": list(auth.scopes) or None,
            "resource_name": name,
        }
    )
    handler = ProtectedResourceMetadataHandler(metadata)
    endpoint = cors_middleware(handler.handle, ["GET", "OPTIONS"])
    return [Route(urlsplit(url).path, endpoint=endpoint, methods=["GET", "OPTIONS"])]


def request_principal(request: Any) -> tuple[bool, Any]:
    """Whether ``request`` (an MCP handler's ``ctx.request``) was authenticated, and the
    principal its calls run for if it was."""
    scope = getattr(request, "scope", None)
    if isinstance(scope, Mapping) and PRINCIPAL_KEY in scope:
        return True, scope[PRINCIPAL_KEY]
    return False, None


@dataclass(frozen=True)
class _Refusal:
    status: int
    error: str | None
    description: str


def guarded(app: Any, auth: Authentication, *, resource: str) -> Any:
    """``app`` (the gateway's ASGI app) behind ``auth``: see the module docstring."""
    return _Guard(app, auth, resource)


class _Guard:
    def __init__(self, app: Any, auth: Authentication, resource: str) -> None:
        self.app = app
        self.auth = auth
        self.metadata_url = auth.metadata_url(resource)
        self.metadata_path = urlsplit(self.metadata_url).path if self.metadata_url else None
        self._remembered: dict[bytes, tuple[float, dict[str, Any]]] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("path") == self.metadata_path:
            await self.app(scope, receive, send)
            return
        checked = await self._check(scope)
        if isinstance(checked, _Refusal):
            await self._refuse(send, checked)
            return
        await self.app(checked, receive, send)

    async def _check(self, scope: Any) -> dict[str, Any] | _Refusal:
        """The request's scope as the app gets it (the principal in, the token out), or why
        it is refused."""
        headers = list(scope.get("headers") or ())
        if _token_in_query(scope.get("query_string") or b""):
            return _Refusal(400, "invalid_request", "Send the token in the Authorization header.")
        given = [value for key, value in headers if key.lower() == b"authorization"]
        if len(given) > 1:
            return _Refusal(400, "invalid_request", "Send one Authorization header.")
        token = _bearer_token(given[0]) if given else None
        if token is None:
            return _Refusal(401, None, "A bearer token is required.")
        accepted = await self._accepted(token)
        if isinstance(accepted, _Refusal):
            return accepted
        kept = [(key, value) for key, value in headers if key.lower() != b"authorization"]
        return {**scope, "headers": kept, **accepted}

    async def _accepted(self, token: str) -> dict[str, Any] | _Refusal:
        """What an accepted token adds to its requests' scope (remembered by the token's
        digest for a while), or why it is refused."""
        if len(token) > MAX_TOKEN_CHARS or not _TOKEN68.fullmatch(token):
            _log.info(
                "MCP gateway: refused a bearer token: not a token of at most %d characters",
                MAX_TOKEN_CHARS,
            )
            return _Refusal(401, "invalid_token", "The access token is not valid.")
        digest = hashlib.sha256(token.encode("ascii")).digest()
        remembered = self._remembered.get(digest)
        if remembered is not None:
            until, additions = remembered
            if time.time() < until:
                return additions
            del self._remembered[digest]
        identity = await self._identity(token)
        if isinstance(identity, _Refusal):
            return identity
        if any(needed not in identity.scopes for needed in self.auth.scopes):
            return _Refusal(403, "insufficient_scope", "The token lacks a scope this server needs.")
        try:
            principal = self.auth.principal_of(identity)
        except InvalidToken as exc:
            _log.info("MCP gateway: %s", exc)
            return _Refusal(401, "invalid_token", "The access token is not valid.")
        except Exception as exc:  # a mapping function that fails refuses, it never lets in
            _log.warning("MCP gateway: the principal function raised %s", type(exc).__name__)
            return _Refusal(401, "invalid_token", "The access token is not valid.")
        additions = {
            # The SDK binds each session to who opened it (client, issuer, subject): here the
            # principal, so one client's session is never another's.
            "user": AuthenticatedUser(_access_token(identity, digest.hex(), principal)),
            "auth": AuthCredentials(sorted(identity.scopes)),
            PRINCIPAL_KEY: principal,
        }
        self._remember(digest, additions, identity.expires_at)
        return additions

    def _remember(self, digest: bytes, additions: dict[str, Any], expires: float | None) -> None:
        """Remember an accepted token for ``remember_seconds``, never past its expiry."""
        if self.auth.remember_seconds <= 0:
            return
        until = time.time() + self.auth.remember_seconds
        if expires is not None:
            until = min(until, expires)
        if len(self._remembered) >= _MAX_REMEMBERED:
            now = time.time()
            for known in [d for d, (when, _) in self._remembered.items() if when <= now]:
                del self._remembered[known]
            while len(self._remembered) >= _MAX_REMEMBERED:
                del self._remembered[next(iter(self._remembered))]  # the oldest
        self._remembered[digest] = (until, additions)

    async def _identity(self, token: str) -> Identity | _Refusal:
        try:
            identity: Any = await self.auth.verifier.verify(token)  # checked below: any verifier
        except InvalidToken as exc:
            _log.info("MCP gateway: %s", exc)
            return _Refusal(401, "invalid_token", "The access token is not valid.")
        except Exception as exc:  # the verifier cannot check now: not the token's fault
            # Only toolwire's own messages are logged: another's might quote the token.
            what = str(exc) if isinstance(exc, ToolwireError) else type(exc).__name__
            _log.warning("MCP gateway: the token could not be checked: %s", what)
            return _Refusal(503, "temporarily_unavailable", "The token cannot be checked now.")
        if not isinstance(identity, Identity):
            _log.warning(
                "MCP gateway: the verifier returned %s, not an Identity", type(identity).__name__
            )
            return _Refusal(503, "temporarily_unavailable", "The token cannot be checked now.")
        expires = identity.expires_at
        if expires is not None and (not math.isfinite(expires) or expires <= time.time()):
            _log.info("MCP gateway: refused a bearer token: expired")
            return _Refusal(401, "invalid_token", "The access token is not valid.")
        return identity

    def _challenge(self, refusal: _Refusal) -> str:
        params = []
        if refusal.error is not None:
            params += [f'error="{refusal.error}"', f'error_description="{refusal.description}"']
        if self.metadata_url is not None:
            params.append(f'resource_metadata="{self.metadata_url}"')
        if self.auth.scopes:
            params.append(f'scope="{" ".join(self.auth.scopes)}"')
        return "Bearer" + (" " + ", ".join(params) if params else "")

    async def _refuse(self, send: Any, refusal: _Refusal) -> None:
        body = json.dumps(
            {"error": refusal.error or "unauthorized", "error_description": refusal.description}
        ).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode("ascii")),
            (b"cache-control", b"no-store"),
        ]
        if refusal.status in (401, 403):
            headers.append((b"www-authenticate", self._challenge(refusal).encode("latin-1")))
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _token_in_query(query: bytes) -> bool:
    """Whether the URL's query carries an access token (never accepted: URLs are logged)."""
    try:
        pairs = parse_qsl(query.decode("latin-1"), keep_blank_values=True)
    except ValueError:
        return False
    return any(key.lower() == "access_token" for key, _ in pairs)


def _bearer_token(value: bytes) -> str | None:
    """The token of an ``Authorization: Bearer TOKEN`` header; None for another scheme, or
    none given."""
    scheme, _, rest = value.decode("latin-1").strip().partition(" ")
    token = rest.strip(" ")
    return token if scheme.lower() == "bearer" and token else None


def _access_token(identity: Identity, digest: str, principal: Any) -> AccessToken:
    """What the SDK keeps of an authenticated request (its session binding reads it): the
    token's digest, never the token."""
    expires = identity.expires_at
    return AccessToken(
        token=digest,
        client_id=identity.client_id or "",
        scopes=sorted(identity.scopes),
        expires_at=int(expires) if expires is not None else None,
        subject=ledger.principal_key(principal),
        claims={"iss": identity.issuer} if identity.issuer is not None else None,
    )
