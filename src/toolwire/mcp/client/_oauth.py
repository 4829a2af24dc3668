"""OAuth for the hub's remote servers, on the ``mcp`` SDK's providers, guarded.

The SDK's ``OAuthClientProvider`` does the protocol (discovery, PKCE, registration, the
token requests, refresh). Around it, here:

- the tokens are kept in a [`TokenStore`][toolwire.mcp.TokenStore], with their expiry, and are
  used only by the grant and the client that got them;
- every request of the flow goes to ``https://`` (``http://`` on loopback), must answer within
  a timeout and with at most ``_BODY_CAP`` bytes, uncompressed;
- a server refusing a token is given a refreshed one first; a hub that cannot take a person
  through the authorization says so (``AuthorizationRequired``) instead of registering and
  stalling;
- whatever fails becomes an ``AuthorizationError`` whose message holds no token, secret or
  code (the core's scrubbing filter cleans the SDK's and the HTTP client's log records of them
  too; the SDK's own flow errors, which toolwire raises itself, show only at DEBUG).
"""

from __future__ import annotations

import re
import socket
import time
import warnings
from collections.abc import AsyncGenerator
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pydantic
from mcp.client.auth import OAuthClientProvider, OAuthRegistrationError
from mcp.client.auth.exceptions import OAuthTokenError
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.auth.oauth2 import OAuthContext
from mcp.client.auth.utils import extract_field_from_www_auth, extract_scope_from_www_auth
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    OAuthToken,
    ProtectedResourceMetadata,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER

from toolwire._json import load_json
from toolwire._scrub import KNOWN, is_loopback, quiet_logs, scrub, server_key, shown_url
from toolwire._values import describe_exception
from toolwire.errors import (
    AuthorizationError,
    AuthorizationRequired,
    ConfigurationError,
    ToolwireWarning,
)
from toolwire.mcp.client._specs import Authorizer, ClientCredentials, OAuth
from toolwire.mcp.client._tokens import TokenStore, bound_entry, default_token_store

__all__ = ["callback_result", "free_loopback_uri", "http_auth", "warn_unpinned"]

_BODY_CAP = 1 << 20
"""Bytes an answer to a request of the flow may have (metadata, registration, token)."""
_PURPOSE = "toolwire.oauth"
"""The request extension marking a request of the flow, with what it is for."""
_SHOWN = 200
"""Characters of a URL, or of a server's text, put in a message."""
_EARLY = 30.0
"""Seconds before its stated expiry a stored access token is refreshed."""


# The SDK's auth flow logs what toolwire raises itself as an ``AuthorizationError``.
quiet_logs(
    "mcp.client.auth.oauth2",
    "mcp.client.auth.extensions.client_credentials",
    "mcp.client.auth.extensions.identity_assertion",
)


# -- the tokens of one server, in its store ------------------------------------------------------


class _Storage:
    """The SDK's ``TokenStorage`` over a [`TokenStore`][toolwire.mcp.TokenStore] entry: tokens
    come back only for the server, the grant and the client that got them, with their
    expiry (an entry kept for another server is not read: see ``bound_entry``)."""

    def __init__(
        self,
        store: TokenStore,
        key: str,
        grant: str,
        *,
        fixed_client: OAuthClientInformationFull | None = None,
        ignore_tokens: bool = False,
    ) -> None:
        self.store = store
        self.key = key
        self.grant = grant
        self.fixed_client = fixed_client
        self.ignore_tokens = ignore_tokens
        self.expires_at: float | None = None
        self.context: OAuthContext | None = None
        self._entry: dict[str, Any] | None = None

    async def entry(self) -> dict[str, Any]:
        if self._entry is None:
            self._entry = await bound_entry(self.store, self.key)
        return self._entry

    async def get_tokens(self) -> OAuthToken | None:
        entry = await self.entry()
        tokens = entry.get("tokens")
        if self.ignore_tokens or not isinstance(tokens, dict) or entry.get("grant") != self.grant:
            return None
        client = await self.get_client_info()
        if client is None or entry.get("client_id") != client.client_id:
            return None  # got by another client: not this one's to use
        try:
            token = OAuthToken.model_validate(tokens)
        except pydantic.ValidationError:
            return None
        KNOWN.add(token.access_token, token.refresh_token)
        expires_at = entry.get("expires_at")
        self.expires_at = float(expires_at) if isinstance(expires_at, int | float) else None
        return token

    async def set_tokens(self, tokens: OAuthToken) -> None:
        KNOWN.add(tokens.access_token, tokens.refresh_token)
        entry = await self.entry()
        client = await self.get_client_info()
        entry["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        entry["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in else None
        entry["grant"] = self.grant
        entry["client_id"] = client.client_id if client is not None else None
        entry["server"] = self.key
        # Where the tokens came from: a refresh after a restart goes there, not to a guess.
        context = self.context
        if context is not None and context.oauth_metadata is not None:
            entry["authorization_server"] = context.oauth_metadata.model_dump(
                mode="json", exclude_none=True
            )
            prm = context.protected_resource_metadata
            entry["resource_metadata"] = (
                prm.model_dump(mode="json", exclude_none=True) if prm is not None else None
            )
        self.ignore_tokens = False
        await self.store.write(self.key, entry)

    def restore(self, context: OAuthContext) -> None:
        """The authorization server's metadata the stored tokens came with, into ``context``
        (when nothing was discovered yet in this process)."""
        entry = self._entry or {}
        if context.oauth_metadata is not None or context.current_tokens is None:
            return
        try:
            found = entry.get("authorization_server")
            if isinstance(found, dict):
                context.oauth_metadata = OAuthMetadata.model_validate(found)
                context.auth_server_url = str(context.oauth_metadata.issuer)
            prm = entry.get("resource_metadata")
            if isinstance(prm, dict):
                context.protected_resource_metadata = ProtectedResourceMetadata.model_validate(prm)
        except pydantic.ValidationError:
            context.oauth_metadata = None
            context.protected_resource_metadata = None

    async def forget_tokens(self, refused: str | None) -> None:
        """Forget the tokens whose refresh token (``refused``) the server refused, unless
        another process kept newer ones since (its refresh went first)."""
        self._entry = None  # read anew
        entry = await self.entry()
        tokens = entry.get("tokens")
        if isinstance(tokens, dict) and tokens.get("refresh_token") not in (None, refused):
            return
        if entry.pop("tokens", None) is not None:
            entry.pop("expires_at", None)
            await self.store.write(self.key, entry)

    async def newer_tokens(self, sent: str | None) -> OAuthToken | None:
        """The tokens kept now, when they are not the access token ``sent`` (another process
        refreshed them: workers on one store share them); None otherwise."""
        self._entry = None  # read anew
        tokens = await self.get_tokens()
        return tokens if tokens is not None and tokens.access_token != sent else None

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.fixed_client is not None:
            return self.fixed_client
        client = (await self.entry()).get("client")
        if not isinstance(client, dict):
            return None
        try:
            info = OAuthClientInformationFull.model_validate(client)
        except pydantic.ValidationError:
            return None
        KNOWN.add(info.client_secret)
        return info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.fixed_client is not None:
            return
        KNOWN.add(client_info.client_secret)
        entry = await self.entry()
        entry["client"] = client_info.model_dump(mode="json", exclude_none=True)
        entry["server"] = self.key
        await self.store.write(self.key, entry)


# -- the answers of the flow's requests, bounded ------------------------------------------------


class _Bounded(httpx2.AsyncBaseTransport):
    """The client's transport, with each request of the flow bounded: an answer within
    ``timeout`` seconds (sending, waiting and reading it all), of at most ``_BODY_CAP`` bytes,
    uncompressed. Other requests (the MCP traffic) pass untouched."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, timeout: float, server: str) -> None:
        self.inner = inner
        self.timeout = timeout
        self.server = server
        self.provider: _Guarded | None = None
        """Told of each failure (it is raised past the flow, not through it)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        purpose = request.extensions.get(_PURPOSE)
        if purpose is None:
            return await self.inner.handle_async_request(request)
        try:
            return await self._bounded(request, purpose)
        except AuthorizationError as exc:
            if self.provider is not None:
                self.provider.failure = exc
            raise

    async def _bounded(self, request: httpx2.Request, purpose: str) -> httpx2.Response:
        where = shown_url(str(request.url))
        try:
            with anyio.fail_after(self.timeout):
                response = await self.inner.handle_async_request(request)
                try:
                    body = await self._read(response, purpose, where)
                finally:
                    await response.aclose()
        except TimeoutError:
            raise AuthorizationError(
                self.server,
                "timeout",
                f"OAuth for {self.server}: the {purpose} request to {where} got no answer "
                f"within {self.timeout:g} s",
            ) from None
        except httpx2.TransportError as exc:
            raise AuthorizationError(
                self.server,
                "unreachable",
                f"OAuth for {self.server}: cannot reach {where} ({type(exc).__name__})",
            ) from None
        headers = [
            (name, value)
            for name, value in response.headers.raw
            if name.lower() not in (b"content-length", b"transfer-encoding")
        ]
        return httpx2.Response(
            response.status_code,
            headers=headers,
            content=body,
            extensions=response.extensions,
            request=request,
        )

    async def _read(self, response: httpx2.Response, purpose: str, where: str) -> bytes:
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            raise AuthorizationError(
                self.server,
                "oversized",
                f"OAuth for {self.server}: the answer to the {purpose} request to {where} is "
                f"compressed ({encoding[:20]}), though it was asked not to be",
            )
        body = bytearray()
        stream = cast(httpx2.AsyncByteStream, response.stream)
        async for chunk in stream:
            body += chunk
            if len(body) > _BODY_CAP:
                raise AuthorizationError(
                    self.server,
                    "oversized",
                    f"OAuth for {self.server}: the answer to the {purpose} request to {where} "
                    f"is over {_BODY_CAP // 1024} KiB",
                )
        return bytes(body)

    async def aclose(self) -> None:
        await self.inner.aclose()


# -- the provider: the SDK's flow, guarded ------------------------------------------------------


class _Guarded(OAuthClientProvider):
    """What every provider here adds to the SDK's: see the module's docstring."""

    label: str = ""
    """The server, as messages name it."""
    storage: _Storage
    pinned_issuer: str | None = None
    extra_scope: str | None = None
    person: bool = True
    """Whether a person can be taken through an authorization (an authorizer was given, or
    the grant needs none)."""
    fixed_redirect: bool = True
    """The redirect URI was set (by the spec, or by ``login``'s listener)."""
    _last_answer: tuple[str, str, int, str | None] | None = None
    """The last token or registration request: what for, where, its status, its error code."""
    failure: AuthorizationError | None = None
    """Why the flow last failed (cleared by a request it let through): what a call that sees
    only its connection closing failed of."""

    async def _initialize(self) -> None:
        await super()._initialize()
        context = self.context
        if context.current_tokens is not None and self.storage.expires_at is not None:
            context.token_expiry_time = self.storage.expires_at - _EARLY
        self.storage.restore(context)
        client = context.client_info
        wanted = context.client_metadata.redirect_uris
        if client is None or self.storage.fixed_client is not None or not wanted:
            return
        kept = [str(uri) for uri in client.redirect_uris or []]
        if client.client_id == context.client_metadata_url or not kept:
            return
        if not self.fixed_redirect:
            # The registration's own redirect URI, when none was set.
            context.client_metadata.redirect_uris = list(client.redirect_uris or [])
        elif str(wanted[0]) not in kept:
            # Registered for another redirect URI (another port): register again.
            context.client_info = None
            context.clear_tokens()

    def _select_authorization_server(self, advertised: list[str]) -> str:
        if self.pinned_issuer is None:
            return super()._select_authorization_server(advertised)
        for server in advertised:
            if _same_issuer(server, self.pinned_issuer):
                return server
        raise AuthorizationError(
            self.label,
            "issuer_mismatch",
            f"OAuth for {self.label}: the server names authorization server "
            f"{shown_url(advertised[0])}, not {shown_url(self.pinned_issuer)} (the issuer "
            "configured): nothing was sent to it",
        )

    async def _perform_authorization(self) -> httpx2.Request:
        self._check_pinned()
        self._pick_secret_method()
        if self.extra_scope:
            wanted = (self.context.client_metadata.scope or "").split()
            wanted += [s for s in self.extra_scope.split() if s not in wanted]
            self.context.client_metadata.scope = " ".join(wanted)
        return await super()._perform_authorization()

    async def _refresh_token(self) -> httpx2.Request:
        self._pick_secret_method()
        return await super()._refresh_token()

    def _pick_secret_method(self) -> None:
        """A pre-registered client's secret goes the way the server takes it: HTTP Basic
        where it says so (or says nothing: RFC 8414's default), else in the form."""
        fixed = self.storage.fixed_client
        metadata = self.context.oauth_metadata
        if fixed is None or not fixed.client_secret or self.storage.grant != "authorization_code":
            return
        methods = metadata.token_endpoint_auth_methods_supported if metadata else None
        method = (
            "client_secret_post"
            if methods and "client_secret_basic" not in methods and "client_secret_post" in methods
            else "client_secret_basic"
        )
        self.context.client_info = fixed.model_copy(update={"token_endpoint_auth_method": method})

    def _check_pinned(self) -> None:
        metadata = self.context.oauth_metadata
        if self.pinned_issuer is None:
            return
        if metadata is None or not _same_issuer(str(metadata.issuer), self.pinned_issuer):
            found = shown_url(str(metadata.issuer)) if metadata is not None else "none"
            raise AuthorizationError(
                self.label,
                "issuer_mismatch",
                f"OAuth for {self.label}: the authorization server found ({found}) is not "
                f"{shown_url(self.pinned_issuer)} (the issuer configured): nothing was sent to it",
            )

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        if self._initialized and (
            self.context.is_token_valid() or not self.context.can_refresh_token()
        ):
            # The common request, with no token to refresh first: sent outside the SDK's flow,
            # which holds its lock across the whole exchange, so a server's calls would run one
            # at a time (a quick call waited for a slow one to end). Challenged, it goes through
            # the whole flow below, as a new attempt.
            self.context.protocol_version = request.headers.get(MCP_PROTOCOL_VERSION_HEADER)
            if self.context.is_token_valid():
                self._add_auth_header(request)
            response = yield request
            if not _challenged(response):
                self.failure = None
                return
        flow = super().async_auth_flow(request)
        refreshed = False
        try:
            outgoing = await flow.__anext__()
            while True:
                if outgoing is not request:
                    self._guard(outgoing)
                response = yield outgoing
                if outgoing is not request:
                    await self._note(outgoing, response)
                elif not _challenged(response):
                    self.failure = None
                else:
                    # A token refused (expired early, revoked): newer ones another process
                    # kept, or a refresh, first, once.
                    if not refreshed and response.status_code == 401:
                        refreshed = True
                        sent = _bearer(request)
                        renewed = await self._adopt(sent)
                        if not renewed and self.context.can_refresh_token():
                            refresh = await self._refresh_token()
                            self._guard(refresh)
                            answer = yield refresh
                            await self._note(refresh, answer)
                            renewed = await self._handle_refresh_response(answer)
                            renewed = renewed or await self._adopt(sent)
                        if renewed:
                            self._add_auth_header(request)
                            response = yield request
                            if not _challenged(response):
                                return
                    if not self.person:
                        raise self._login_required(response)
                outgoing = await flow.asend(response)
        except StopAsyncIteration:
            return
        except AuthorizationError as exc:
            self.failure = exc
            raise
        except Exception as exc:
            self.failure = self._failed(exc)
            raise self.failure from None
        finally:
            await flow.aclose()

    async def _adopt(self, sent: str | None) -> bool:
        """Take the tokens another process kept since ``sent`` was sent, if any."""
        tokens = await self.storage.newer_tokens(sent)
        if tokens is None:
            return False
        self.context.current_tokens = tokens
        expires_at = self.storage.expires_at
        self.context.token_expiry_time = expires_at - _EARLY if expires_at is not None else None
        return True

    def _guard(self, request: httpx2.Request) -> None:
        """Mark a request of the flow (the transport bounds it) and check where it goes."""
        purpose = _purpose_of(request)
        url = request.url
        if url.scheme != "https" and not (url.scheme == "http" and is_loopback(url.host)):
            raise AuthorizationError(
                self.label,
                "insecure_endpoint",
                f"OAuth for {self.label}: the {purpose} endpoint {shown_url(str(url))} is not "
                "https:// (OAuth 2.1 allows plain http only on loopback): nothing was sent to it",
            )
        if purpose in ("token", "refresh", "registration"):
            self._check_pinned()
        request.extensions = {**request.extensions, _PURPOSE: purpose}
        request.headers["Accept-Encoding"] = "identity"

    async def _note(self, request: httpx2.Request, response: httpx2.Response) -> None:
        """Keep how a token or registration request was answered (for the message if it
        failed: the status and the OAuth error code, never the server's text); a refresh
        token the server refused is forgotten."""
        purpose = request.extensions.get(_PURPOSE)
        if purpose not in ("token", "refresh", "registration"):
            return
        code = None
        if response.status_code >= 400:
            try:
                body = load_json(await response.aread())
            except httpx2.StreamError:
                body = None
            error = body.get("error") if isinstance(body, dict) else None
            if isinstance(error, str) and _ERROR_CODE.fullmatch(error):
                code = error
        self._last_answer = (purpose, shown_url(str(request.url)), response.status_code, code)
        if purpose == "refresh" and response.status_code in (400, 401):
            form = parse_qs(request.content.decode("latin-1"))
            await self.storage.forget_tokens(form.get("refresh_token", [None])[0])

    def _login_required(self, response: httpx2.Response) -> AuthorizationRequired:
        scope = extract_scope_from_www_auth(response)
        if scope is not None and not _SCOPES.fullmatch(scope):
            scope = None  # not a scope list (RFC 6749's characters): not repeated
        step_up = response.status_code == 403
        if step_up:
            what = f"asks for more scopes ({scope})" if scope else "asks for more scopes"
        else:
            what = "needs an authorization"
        return AuthorizationRequired(
            self.label,
            "login_required",
            f"OAuth for {self.label}: the server {what} and no stored one works: run "
            "`toolwire mcp login` for it",
            scope=scope,
        )

    def _failed(self, exc: Exception) -> AuthorizationError:
        """An exception of the SDK's flow as an ``AuthorizationError`` without credentials."""
        while isinstance(exc, ExceptionGroup) and len(exc.exceptions) == 1:
            inner = exc.exceptions[0]
            if not isinstance(inner, Exception):
                break
            exc = inner
        if isinstance(exc, AuthorizationError):
            return exc
        label = self.label
        answer = self._last_answer
        if isinstance(exc, OAuthTokenError | OAuthRegistrationError) and answer is not None:
            purpose, where, status, code = answer
            kind = "registration" if purpose == "registration" else "token_refused"
            if status < 400:
                return AuthorizationError(
                    label,
                    kind,
                    f"OAuth for {label}: the {purpose} request to {where} got a malformed "
                    f"answer ({status})",
                )
            said = f"{status}: {code}" if code else f"{status}"
            return AuthorizationError(
                label, kind, f"OAuth for {label}: the {purpose} request to {where} failed ({said})"
            )
        if isinstance(exc, pydantic.ValidationError):
            errors = exc.errors(include_url=False, include_input=False)
            where = ".".join(str(part) for part in errors[0]["loc"]) if errors else ""
            why = f"{where or 'the answer'}: {errors[0]['msg']}" if errors else "malformed"
            return AuthorizationError(
                label, "metadata", f"OAuth for {label}: a malformed answer ({scrub(why)[:_SHOWN]})"
            )
        text = describe_exception(exc, limit=4 * _SHOWN, named=False)
        if "State parameter mismatch" in text:
            return AuthorizationError(
                label,
                "callback",
                f"OAuth for {label}: the authorization answer's state is not the request's "
                "(a stale or forged answer)",
            )
        shown = scrub(text)
        if len(shown) > _SHOWN:
            shown = shown[: _SHOWN - 3] + "..."
        return AuthorizationError(label, _kind_of(exc, text), f"OAuth for {label}: {shown}")


_ERROR_CODE = re.compile(r"[a-z0-9_.-]{1,64}")
"""An OAuth error code as servers send them (``invalid_grant``): repeated; their text is not."""
_SCOPES = re.compile(r"[\x21\x23-\x5b\x5d-\x7e ]{1,500}")
"""A scope list (RFC 6749's characters), fit to repeat in a message."""


def _kind_of(exc: Exception, text: str) -> str:
    if "does not match expected" in text:
        return "resource_mismatch"
    if "issuer mismatch" in text or "iss parameter" in text:
        return "issuer_mismatch"
    if isinstance(exc, OAuthTokenError):
        return "token_refused"
    if isinstance(exc, OAuthRegistrationError):
        return "registration"
    if "metadata" in text.lower():
        return "metadata"
    return "flow"


class _CodeProvider(_Guarded, OAuthClientProvider):
    """The authorization code grant (with PKCE): a person authorizes."""


class _SecretProvider(_Guarded, ClientCredentialsOAuthProvider):
    """Client credentials, the client authenticated with its secret."""


class _KeyProvider(_Guarded, PrivateKeyJWTOAuthProvider):
    """Client credentials, the client authenticated with a JWT signed by its private key."""


def _challenged(response: httpx2.Response) -> bool:
    """A 401, or a 403 asking for more scopes: the token sent was not enough."""
    return response.status_code == 401 or (
        response.status_code == 403
        and extract_field_from_www_auth(response, "error") == "insufficient_scope"
    )


def _bearer(request: httpx2.Request) -> str | None:
    """The access token ``request`` was sent with, if any."""
    header = request.headers.get("Authorization", "")
    return header[7:] if header[:7].lower() == "bearer " else None


def _purpose_of(request: httpx2.Request) -> str:
    if request.method == "GET":
        return "metadata"
    body = request.content if isinstance(request.stream, httpx2.ByteStream) else b""
    if b"grant_type=refresh_token" in body:
        return "refresh"
    if b"grant_type=" in body:
        return "token"
    return "registration"


def _same_issuer(a: str, b: str) -> bool:
    return a.rstrip("/") == b.rstrip("/")


# -- the person's part: the authorization code coming back ------------------------------------


class _Callback:
    """The SDK's redirect and callback handlers over an [`Authorizer`][toolwire.mcp.Authorizer]:
    the authorizer gets the URL to open and returns where the browser was sent back."""

    def __init__(self, authorize: Authorizer) -> None:
        self.authorize = authorize
        self.provider: _Guarded | None = None
        self._answer: str | None = None

    async def redirect(self, url: str) -> None:
        assert self.provider is not None
        self._answer = None
        answer: object = await self.authorize(url)
        if not isinstance(answer, str):
            label = self.provider.label
            raise AuthorizationError(
                label, "callback", f"OAuth for {label}: the authorizer returned no URL"
            )
        self._answer = answer

    async def callback(self) -> AuthorizationCodeResult:
        assert self.provider is not None
        redirect = self.provider.context.client_metadata.redirect_uris
        assert redirect, "the authorization code grant always has a redirect URI"
        answer, self._answer = self._answer or "", None
        return callback_result(answer, str(redirect[0]), self.provider.label)


_AUTHORIZATION_ERRORS = frozenset(
    {
        "access_denied",
        "invalid_request",
        "invalid_scope",
        "server_error",
        "temporarily_unavailable",
        "unauthorized_client",
        "unsupported_response_type",
        "interaction_required",
        "login_required",
        "consent_required",
        "account_selection_required",
    }
)
"""The error codes an authorization answer may name (OAuth 2.1 and OpenID Connect): only these
are repeated in an error, never the server's own text (it may echo anything, a secret too)."""


def callback_result(url: str, redirect_uri: str, server: str) -> AuthorizationCodeResult:
    """The authorization code (with ``state`` and ``iss``) in the URL an authorization server
    sent the browser back to.

    Raises:
        AuthorizationError: the URL is not the redirect URI; it carries an error, a token
            (the implicit grant, which OAuth 2.1 removed) or a parameter twice; it has no code.
    """
    try:
        parts, expected = urlsplit(url), urlsplit(redirect_uri)
        same = (parts.scheme, parts.hostname, parts.port, parts.path or "/") == (
            expected.scheme,
            expected.hostname,
            expected.port,
            expected.path or "/",
        )
    except ValueError:
        same, parts = False, urlsplit("")

    def refused(why: str) -> AuthorizationError:
        return AuthorizationError(server, "callback", f"OAuth for {server}: {why}")

    if not same:
        raise refused("the authorization answer did not come back to the redirect URI")
    query = parse_qs(parts.query, keep_blank_values=True)
    fragment = parse_qs(parts.fragment, keep_blank_values=True)
    if {"access_token", "id_token", "token"} & (query.keys() | fragment.keys()):
        raise refused(
            "the authorization server sent a token in the URL (the implicit grant, which OAuth "
            "2.1 removed): refused, and the token was not used"
        )
    if any(len(values) > 1 for values in query.values()):
        raise refused("the authorization answer gives a parameter twice")
    if "error" in query:
        error = query["error"][0]
        code = error if error in _AUTHORIZATION_ERRORS else "an unnamed error"
        raise refused(f"the authorization server refused ({code})")
    if not query.get("code", [""])[0]:
        raise refused("the authorization answer has no code")
    code = query["code"][0]
    KNOWN.add(code)
    return AuthorizationCodeResult(
        code=code,
        state=query.get("state", [None])[0],
        iss=query.get("iss", [None])[0],
    )


def free_loopback_uri() -> str:
    """A loopback redirect URI on a port free right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/callback"


# -- building it for a spec ---------------------------------------------------------------------


def http_auth(
    auth: OAuth | ClientCredentials,
    url: str,
    *,
    label: str,
    store: TokenStore | None = None,
    redirect_uri: str | None = None,
    authorize: Authorizer | None = None,
    ignore_tokens: bool = False,
) -> tuple[_Guarded, _Bounded]:
    """The ``httpx2.Auth`` for a server at ``url``, and the transport to send with (which bounds
    the flow's requests).

    Args:
        auth: the spec's.
        url: the server's URL.
        label: how messages name the server.
        store: where tokens go when the spec names none (None: the default file store).
        redirect_uri: overrides the spec's (``login``'s listener).
        authorize: overrides the spec's.
        ignore_tokens: start without the stored tokens (a new login).
    """
    kept = auth.store if auth.store is not None else store or default_token_store()
    key = server_key(url)
    transport = _Bounded(httpx2.AsyncHTTPTransport(), timeout=auth.timeout, server=label)
    provider: _Guarded
    if isinstance(auth, ClientCredentials):
        provider = _client_credentials(auth, url, kept, key)
    else:
        provider = _authorization_code(
            auth, url, kept, key, redirect_uri, authorize or auth.authorize, ignore_tokens
        )
    provider.label = label
    provider.storage.context = provider.context
    transport.provider = provider
    return provider, transport


def _authorization_code(
    auth: OAuth,
    url: str,
    store: TokenStore,
    key: str,
    redirect_uri: str | None,
    authorize: Authorizer | None,
    ignore_tokens: bool,
) -> _Guarded:
    KNOWN.add(auth.client_secret)
    redirect = redirect_uri or auth.redirect_uri or free_loopback_uri()
    fixed = None
    if auth.client_id is not None:
        fixed = OAuthClientInformationFull(
            client_id=auth.client_id,
            client_secret=auth.client_secret,
            redirect_uris=[pydantic.AnyUrl(redirect)],
            token_endpoint_auth_method="client_secret_basic" if auth.client_secret else "none",
            grant_types=["authorization_code", "refresh_token"],
        )
    storage = _Storage(
        store, key, "authorization_code", fixed_client=fixed, ignore_tokens=ignore_tokens
    )
    metadata = OAuthClientMetadata(
        redirect_uris=[pydantic.AnyUrl(redirect)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        client_name=auth.client_name,
        scope=auth.scope,
    )
    callback = _Callback(authorize) if authorize is not None else None
    try:
        provider = _CodeProvider(
            url,
            metadata,
            storage,
            redirect_handler=callback.redirect if callback is not None else None,
            callback_handler=callback.callback if callback is not None else None,
            client_metadata_url=auth.client_metadata_url,
        )
    except ValueError as exc:  # client_metadata_url not an https URL with a path
        raise ConfigurationError(f"OAuth: {scrub(str(exc))}") from None
    if callback is not None:
        callback.provider = provider
    provider.storage = storage
    provider.pinned_issuer = auth.issuer
    provider.extra_scope = auth.scope
    provider.person = authorize is not None
    provider.fixed_redirect = redirect_uri is not None or auth.redirect_uri is not None
    return provider


def _client_credentials(auth: ClientCredentials, url: str, store: TokenStore, key: str) -> _Guarded:
    KNOWN.add(auth.client_secret)
    storage = _Storage(store, key, "client_credentials")
    provider: _SecretProvider | _KeyProvider
    with warnings.catch_warnings():  # the SDK's, on a missing issuer: the hub warns its own
        warnings.simplefilter("ignore")
        if auth.private_key is not None:
            parameters = SignedJWTParameters(
                issuer=auth.client_id,
                subject=auth.client_id,
                signing_key=auth.private_key,
                signing_algorithm=auth.signing_algorithm,
            )
            provider = _KeyProvider(
                url,
                storage,
                auth.client_id,
                parameters.create_assertion_provider(),
                scope=auth.scope,
                issuer=auth.issuer,
            )
        elif auth.client_secret is not None:
            provider = _SecretProvider(
                url,
                storage,
                auth.client_id,
                auth.client_secret,
                token_endpoint_auth_method=auth.token_endpoint_auth_method,
                scope=auth.scope,
                issuer=auth.issuer,
            )
        else:
            raise ConfigurationError("ClientCredentials needs a client_secret or a private_key")
    storage.fixed_client = provider._fixed_client_info
    provider.storage = storage
    provider.pinned_issuer = auth.issuer
    provider.extra_scope = auth.scope
    return provider


def warn_unpinned(label: str, auth: OAuth | ClientCredentials) -> None:
    """A secret with no issuer goes wherever the server's metadata says: say so."""
    key = auth.private_key if isinstance(auth, ClientCredentials) else None
    if (auth.client_secret or key) and auth.issuer is None:
        warnings.warn(
            f"server {label}: a client secret or key without an issuer is sent to whichever "
            "authorization server the server's metadata names; give issuer=",
            ToolwireWarning,
            stacklevel=4,
        )
