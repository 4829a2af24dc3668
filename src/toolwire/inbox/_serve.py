"""``toolwire inbox``: the console served on its own, behind a random token (the URL printed at
start carries it once; a cookie carries it after)."""

from __future__ import annotations

import getpass
import hmac
import importlib
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

import anyio
import anyio.abc

from toolwire._net import is_loopback, tcp_socket
from toolwire.errors import ConfigurationError, MissingDependency, StoreUnavailable
from toolwire.runs import ledger
from toolwire.runs.store import RunStore, check_reachable

__all__ = ["COOKIE", "Served", "TokenGate", "is_loopback", "load_authorize", "serve"]

COOKIE = "toolwire_inbox"


class TokenGate:
    """Lets in whoever shows ``token``: as ``?token=`` once (answered by a redirect that sets
    the cookie and drops the token from the URL), then by the cookie, or as a bearer token.

    Wraps the console (an ASGI app); [`authorize`][] is the console's ``authorize``.

    Raises:
        ConfigurationError: ``identity`` names nobody (see
            [`ledger.identity_json`][toolwire.ledger.identity_json]).
    """

    def __init__(self, token: str, identity: Any) -> None:
        if ledger.identity_json(identity) is None:  # the console would let nobody in
            raise ConfigurationError(f"the token gate's identity names nobody: {identity!r}")
        self.token = token
        self.identity = identity
        self.inner: Any = None

    def _shown(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())

    def authorize(self, request: Any) -> Any:
        header = request.headers.get("authorization", "")
        bearer = header[7:] if header.lower().startswith("bearer ") else None
        if self._shown(request.cookies.get(COOKIE)) or self._shown(bearer):
            return self.identity
        return None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if self._shown(query.pop("token", None)):
                await _sign_in(scope, send, self.token, urlencode(query))
                return
        await self.inner(scope, receive, send)


async def _sign_in(scope: Any, send: Any, token: str, rest: str) -> None:
    where = quote(scope.get("root_path", "") + scope.get("path", "/"), safe="/")
    if not where.startswith("/") or where.startswith("//"):
        where = "/"  # never a redirect to another host
    if rest:
        where += "?" + rest
    cookie = f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"
    await send(
        {
            "type": "http.response.start",
            "status": 303,
            "headers": [
                (b"location", where.encode("ascii")),
                (b"set-cookie", cookie.encode()),
                (b"referrer-policy", b"no-referrer"),
                (b"cache-control", b"no-store"),
                (b"content-length", b"0"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": b""})


def load_authorize(spec: str) -> Any:
    """``module:function`` as a function.

    Raises:
        ConfigurationError: no such module or function.
    """
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name or not name:
        raise ConfigurationError(f"--authorize is module:function, not {spec!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r}: {exc}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise ConfigurationError(f"{module_name!r} has no function {name!r}")
    return function


def _user() -> str:
    try:
        user = getpass.getuser()
    except Exception:  # no user name in this environment
        return "local"
    return "local" if ledger.identity_json(user) is None else user


@dataclass(frozen=True, slots=True)
class Served:
    """A console being served: where, and how to stop it."""

    url: str
    """Its address (with the token, when it lets in by token)."""
    server: Any

    def stop(self) -> None:
        self.server.should_exit = True


async def serve(
    store: RunStore,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    authorize: str | None = None,
    announce: Any = print,
    task_status: anyio.abc.TaskStatus[Served] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Serve the console until stopped (``Served.stop``, given to ``task_status``) or
    interrupted.

    Without ``authorize`` (``module:function``) it binds only to a loopback ``host`` and lets
    in whoever has the token of the URL it announces.

    Raises:
        ConfigurationError: a non-loopback ``host`` without ``authorize``.
        MissingDependency: uvicorn or Starlette is not installed (extra ``toolwire[inbox]``).
        StoreUnavailable: ``store`` cannot be reached (checked before listening).
    """
    from toolwire.inbox._asgi import app

    try:
        import uvicorn
    except ImportError:
        raise MissingDependency("uvicorn", "inbox") from None
    if authorize is None and not is_loopback(host):
        raise ConfigurationError(
            f"the inbox serves {host!r} (not loopback) only with --authorize module:function"
        )
    try:  # a console of a store it cannot reach would answer every page 503: refused now
        await check_reachable(store)
    except StoreUnavailable as exc:
        raise StoreUnavailable(f"the inbox does not start: its run store: {exc}") from None
    token = secrets.token_urlsafe(32)
    gate: TokenGate | None = None
    served: Any
    if authorize is None:
        gate = TokenGate(token, _user())
        gate.inner = app(store, authorize=gate.authorize)
        served = gate
    else:
        served = app(store, authorize=load_authorize(authorize))
    sock = tcp_socket(host)
    try:
        sock.bind((host, port))
        sock.listen(128)  # before the URL is shown: a browser opening it at once waits
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from None
    bound_port = sock.getsockname()[1]
    shown_host = f"[{host}]" if ":" in host else host
    url = f"http://{shown_host}:{bound_port}/" + (f"?token={token}" if gate is not None else "")
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", lifespan="off"))
    announce(f"toolwire inbox: {url}")
    task_status.started(Served(url, server))
    try:
        await server.serve(sockets=[sock])
    finally:
        sock.close()
