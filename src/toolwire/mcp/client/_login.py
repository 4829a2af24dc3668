"""``login``: the browser flow, once, for a server a hub then reaches with the stored tokens.

A listener on 127.0.0.1 takes the authorization server's answer (the redirect URI is on it);
the authorization URL is printed, and opened in a browser when a person is there. Only an
answer with the request's own ``state`` is taken: another request to the listener (a page's
stray fetch, a forged answer) is turned away and the login goes on waiting.
"""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from contextlib import suppress
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import anyio.abc
import anyio.to_thread

from toolwire._scrub import is_loopback, server_key, shown_url
from toolwire._values import describe_exception
from toolwire.errors import AuthorizationError, ConfigurationError
from toolwire.mcp.client._oauth import http_auth
from toolwire.mcp.client._specs import ClientCredentials, HttpServer, OAuth, SseServer
from toolwire.mcp.client._tokens import TokenStore, bound_entry, default_token_store

__all__ = ["login", "logout"]

_REQUEST_CAP = 16 * 1024
"""Bytes of a request to the listener read at most (its request line and headers)."""
_REQUEST_SECONDS = 10.0
"""Seconds a connection to the listener has to send its request."""
_PAGE = (
    "<!doctype html><meta charset=utf-8><title>toolwire</title>"
    "<p>{}</p><p>You can close this window.</p>"
)


async def login(
    spec: HttpServer | SseServer,
    *,
    label: str | None = None,
    token_store: TokenStore | None = None,
    announce: Callable[[str], None] | None = None,
    open_browser: bool | None = None,
    timeout: float = 300.0,
) -> bool:
    """Authorize toolwire for a server once, and keep the tokens: a listener on 127.0.0.1
    for the answer, the authorization URL given to ``announce`` (and opened in a browser
    when ``open_browser``), the code exchanged for tokens (PKCE), then a ``tools/list`` to
    check them. Stored tokens are not used: this is a new authorization (the client's
    registration is kept, when its redirect URI can be listened on again).

    A server with [`ClientCredentials`][toolwire.mcp.ClientCredentials] needs no person: its
    tokens are had and kept the same way, without a browser.

    Args:
        spec: the server; its ``auth`` an [`OAuth`][toolwire.mcp.OAuth] (None: ``OAuth()``)
            or [`ClientCredentials`][toolwire.mcp.ClientCredentials].
        label: how messages name it (default: its URL).
        token_store: where the tokens go when ``auth`` names no store (default: the file
            store under the user's config directory).
        announce: given each line to show the person (default: printed on stderr).
        open_browser: open the URL with ``webbrowser``; None: when stdin is a terminal and
            the ``CI`` environment variable is not set.
        timeout: seconds the whole login may take.

    Returns:
        Whether the server asked for authorization (False: it let the ``tools/list`` through
        without one; nothing was needed).

    Raises:
        AuthorizationError: the flow failed, or no answer came within ``timeout``.
        ConfigurationError: the spec cannot be logged in to (another kind of ``auth``, a
            redirect URI that is not on loopback).
    """
    auth = spec.auth if spec.auth is not None else OAuth()
    if not isinstance(auth, OAuth | ClientCredentials):
        raise ConfigurationError(
            "login takes a server whose auth is an OAuth or a ClientCredentials"
        )
    shown = label or shown_url(spec.url)
    say = announce or _to_stderr
    if open_browser is None:
        open_browser = _interactive()
    store = auth.store or token_store or default_token_store()
    if isinstance(auth, ClientCredentials):
        with anyio.fail_after(timeout):
            await _connect(spec, auth, shown, store, None)
        return True
    listener = await _Loopback.open(auth.redirect_uri or await _kept_redirect(store, spec.url))
    async with listener:
        listener.say, listener.open_browser, listener.label = say, open_browser, shown
        try:
            with anyio.fail_after(timeout):
                await _connect(spec, auth, shown, store, listener)
        except TimeoutError:
            raise AuthorizationError(
                shown,
                "timeout",
                f"OAuth for {shown}: no authorization came back within {timeout:g} s",
            ) from None
    return listener.asked


async def logout(
    spec: HttpServer | SseServer | str, *, token_store: TokenStore | None = None
) -> None:
    """Forget the tokens (and the client's registration) kept for a server (a spec, or its
    URL). The authorization server may still hold them: revoke them there too."""
    url = spec if isinstance(spec, str) else spec.url
    auth = None if isinstance(spec, str) else spec.auth
    kept = getattr(auth, "store", None) or token_store or default_token_store()
    await kept.delete(server_key(url))


async def _kept_redirect(store: TokenStore, url: str) -> str | None:
    """The loopback redirect URI the client was registered with last time, if any: listened
    on again, the registration stays good."""
    entry = await bound_entry(store, server_key(url))
    client = entry.get("client")
    uris = client.get("redirect_uris") if isinstance(client, dict) else None
    if isinstance(uris, list) and uris and isinstance(uris[0], str):
        parts = urlsplit(uris[0])
        if parts.scheme == "http" and parts.hostname == "127.0.0.1" and parts.port:
            return uris[0]
    return None


async def _connect(
    spec: HttpServer | SseServer,
    auth: OAuth | ClientCredentials,
    label: str,
    store: TokenStore,
    listener: _Loopback | None,
) -> None:
    """Connect with a new authorization and list the server's tools."""
    import httpx2
    import mcp

    provider, transport = http_auth(
        auth,
        spec.url,
        label=label,
        store=store,
        redirect_uri=listener.redirect_uri if listener is not None else None,
        authorize=listener.authorize if listener is not None else None,
        ignore_tokens=True,
    )

    def client(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        return httpx2.AsyncClient(
            headers=dict(spec.headers) if spec.headers else None,
            timeout=httpx2.Timeout(30.0, read=300.0),
            auth=provider,
            transport=transport,
        )

    if isinstance(spec, SseServer):
        from mcp.client.sse import sse_client

        target = sse_client(spec.url, httpx_client_factory=client)
    else:
        from mcp.client.streamable_http import streamable_http_client

        target = None
    try:
        if target is not None:
            async with mcp.Client(target, cache=None) as session:
                await session.list_tools()
        else:
            async with client() as http:
                target = streamable_http_client(spec.url, http_client=http)
                async with mcp.Client(target, cache=None) as session:
                    await session.list_tools()
    except Exception as exc:
        from toolwire.mcp.client._remote import authorization_error

        refused = authorization_error(exc)
        if refused is not None:
            raise refused from None
        raise AuthorizationError(
            label,
            "unreachable",
            f"OAuth for {label}: the server could not be reached with the new authorization: "
            f"{describe_exception(exc, limit=200)}",
        ) from None


class _Loopback:
    """An HTTP listener on 127.0.0.1 for one authorization answer."""

    def __init__(self, listener: anyio.abc.Listener[anyio.abc.SocketStream], path: str) -> None:
        self.listener = listener
        self.port = listener.extra(anyio.abc.SocketAttribute.local_port)
        self.path = path
        self.redirect_uri = f"http://127.0.0.1:{self.port}{path}"
        self.say: Callable[[str], None] = _to_stderr
        self.open_browser = False
        self.label = ""
        self.asked = False

    @classmethod
    async def open(cls, redirect_uri: str | None) -> _Loopback:
        """Listen where ``redirect_uri`` says (a loopback ``http://`` URI), else on a free
        port; a port in use is given up for a free one unless the URI was configured.

        Raises:
            ConfigurationError: the redirect URI is not on loopback.
        """
        port, path = 0, "/callback"
        if redirect_uri is not None:
            parts = urlsplit(redirect_uri)
            if parts.scheme != "http" or not is_loopback(parts.hostname) or parts.port is None:
                raise ConfigurationError(
                    "login listens on loopback: the redirect URI must be "
                    f"http://127.0.0.1:PORT/PATH, not {shown_url(redirect_uri)}"
                )
            port, path = parts.port, parts.path or "/"
        try:
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
        except OSError:
            if port == 0:
                raise
            listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=0)
        return cls(listener, path)

    async def __aenter__(self) -> _Loopback:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.listener.aclose()

    async def authorize(self, url: str) -> str:
        """Show (and maybe open) ``url``; return the answer that came back with its state."""
        self.asked = True
        state = parse_qs(urlsplit(url).query).get("state", [""])[0]
        self.say(f"Open this URL to authorize toolwire for {self.label}:")
        self.say(f"  {url}")
        self.say(f"Waiting for the answer on {self.redirect_uri} ...")
        if self.open_browser:
            import webbrowser

            await anyio.to_thread.run_sync(webbrowser.open, url)
        answer: list[str] = []
        async with anyio.create_task_group() as serving:

            async def handle(stream: anyio.abc.SocketStream) -> None:
                async with stream:
                    found = await self._answer(stream, state)
                if found is not None and not answer:
                    answer.append(found)
                    serving.cancel_scope.cancel()

            serving.start_soon(self.listener.serve, handle)
        return answer[0]

    async def _answer(self, stream: anyio.abc.SocketStream, state: str) -> str | None:
        """Read one request; the answer's URL when it is the awaited one, else None."""
        head = b""
        with anyio.move_on_after(_REQUEST_SECONDS):
            try:
                while b"\r\n\r\n" not in head and len(head) <= _REQUEST_CAP:
                    head += await stream.receive(4096)
            except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                return None
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) != 3 or parts[0] != "GET" or len(head) > _REQUEST_CAP:
            await _reply(stream, 400, "This is not an authorization answer.")
            return None
        target = urlsplit(parts[1])
        if target.path != self.path:
            await _reply(stream, 404, "Not found.")
            return None
        given = parse_qs(target.query).get("state", [""])
        if len(given) != 1 or not state or not secrets.compare_digest(given[0], state):
            await _reply(stream, 400, "This answer is not for the login toolwire is waiting for.")
            return None
        await _reply(stream, 200, f"toolwire got the answer for {_html(self.label)}.")
        return f"http://127.0.0.1:{self.port}{parts[1]}"


async def _reply(stream: anyio.abc.SocketStream, status: int, text: str) -> None:
    body = _PAGE.format(text).encode()
    reason = {200: "OK", 400: "Bad Request", 404: "Not Found"}[status]
    head = (
        f"HTTP/1.1 {status} {reason}\r\nContent-Type: text/html; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nCache-Control: no-store\r\n"
        "Referrer-Policy: no-referrer\r\nConnection: close\r\n\r\n"
    )
    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await stream.send(head.encode() + body)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _interactive() -> bool:
    return bool(getattr(sys.stdin, "isatty", lambda: False)()) and not os.environ.get("CI")


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
