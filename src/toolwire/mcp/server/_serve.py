"""``serve``: a tool source served as a governed MCP server, over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import socket
import warnings
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import asynccontextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import anyio

from toolwire._net import is_loopback, tcp_socket
from toolwire.approval import ApprovalRequest, Approver
from toolwire.errors import (
    ConfigurationError,
    MissingDependency,
    StoreUnavailable,
    ToolwireWarning,
)
from toolwire.mcp.client import Hub, TokenStore, tokens_beside
from toolwire.mcp.server._auth import Authentication, guarded, metadata_routes
from toolwire.mcp.server._gateway import Gateway
from toolwire.mcp.server._shapes import served_kind
from toolwire.policy import ALLOW_ALL, Policy, destructive_by_name, may_ask
from toolwire.runs.store import RunStore, check_reachable, in_process
from toolwire.sources import OpenedSource, opened_source
from toolwire.tool import Tool
from toolwire.toolset import ToolSet

__all__ = ["open_served", "serve"]

Source = ToolSet | Hub | ModuleType | str | Path | Iterable[Tool | Callable[..., Any]]

_SHUTDOWN_SECONDS = 10.0
"""The most seconds a cancelled HTTP gateway's shutdown may take (its open requests are
ended at once, so it takes a fraction of a second unless its lifespan hangs)."""
_ANSWERS_SECONDS = 2.0
"""The most seconds a stopping HTTP gateway waits for the answers to its ended calls to be
sent before it ends the sessions they are in."""
_SHOWN_TOOLS = 3
"""How many tools the no-store warning names."""
_SHOWN_DESTRUCTIVE = 10
"""How many tools the warning about destructive names without a policy names."""


async def serve(
    source: Source,
    *,
    policy: Policy | str | Path | None = None,
    store: RunStore | str | None = None,
    approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    principal: Any = None,
    timeout: float | None = None,
    approve_by: Literal["ledger", "client"] = "ledger",
    name: str = "toolwire",
    own_names: bool = False,
    server_name: str | None = None,
    on_listening: Callable[[str], Any] | None = None,
    auth: Authentication | None = None,
    **executor_options: Any,
) -> None:
    """Serve ``source``'s tools as an MCP server until the client (stdio) or the process
    (HTTP) stops, or it is cancelled (then it stops quietly: open HTTP requests, calls in
    progress included, are ended); every call goes through the governed executor (see
    [`Gateway`][toolwire.mcp.Gateway]).

    Over HTTP without ``auth`` the gateway authenticates nobody, so it listens on loopback
    only (every local process reaching the port calls the tools as its principal). With
    ``auth`` it is an OAuth 2.1 resource server (see
    [`Authentication`][toolwire.mcp.Authentication]): each request needs a bearer token, its
    calls run for the principal the token names, and it may listen on any address.

    A call the policy asks about is decided by a person through the run store (``toolwire
    decide``, the inbox), never by the client that made it, unless ``approve_by="client"``.
    Without a store, such a call waits in this process's memory, where nothing outside it can
    decide it: serving tools the policy may ask about that way is refused (nothing could
    approve them), unless ``approve_by="client"`` (then only a client answering the approval
    form, elicitation, can approve them, and it warns,
    [`ToolwireWarning`][toolwire.errors.ToolwireWarning], once at start) or an ``approver``
    decides.

    With no policy, serving tools whose names say they delete, send or pay and whose
    annotations do not declare them harmless warns at start, naming them (see
    [`destructive_by_name`][toolwire.policy.destructive_by_name]); so does a rule of the
    policy that matches no served tool (see [`Gateway`][toolwire.mcp.Gateway]).

    Args:
        source: a ToolSet, a [`Hub`][toolwire.mcp.Hub] (opened here), a module holding
            tools, tools, or a SOURCE string as the ``toolwire`` command takes it (a ``.py`` file,
            ``module:attribute``, a JSON tool file, ``stdio:CMD``, an MCP URL, an
            ``mcp.json``).
        policy: a [`Policy`][toolwire.Policy], or the path of a policy file (see
            ``toolwire.policy_file``). A Python module's own policy (a ``Policy`` it names
            ``policy`` or ``POLICY``, when ``source`` is a module or a SOURCE string naming
            one) applies with it: a deny of either denies, an ask of either asks (see
            [`Policy.all_of`][toolwire.policy.Policy.all_of]).
        store: the run store, or its URL (``sqlite:///runs.db``...). A SQLite store's
            database also keeps the OAuth tokens of the remote servers of a SOURCE string
            (where ``toolwire mcp login --store`` keeps them), when ``TOOLWIRE_TOKEN_KEY`` is
            set; other stores leave them in the default file store.
        transport: ``"stdio"``, or ``"http"`` (streamable HTTP at ``/mcp``).
        host: where HTTP listens: a loopback address (``127.0.0.1``, the default, ``::1``)
            or ``localhost``, with DNS-rebinding protection (the ``Host`` and ``Origin``
            headers checked); any other address only with ``auth``.
        port: the HTTP port; 0 picks a free one (``on_listening`` is told the URL).
        on_listening: called with the URL once HTTP listens.
        principal: see [`Gateway`][toolwire.mcp.Gateway].
        timeout: see [`Gateway`][toolwire.mcp.Gateway].
        approve_by: who decides a call the policy asks about: ``"ledger"`` (a person,
            through the store) or ``"client"`` (also the client that made it, by a form); see
            [`Gateway`][toolwire.mcp.Gateway].
        name: see [`Gateway`][toolwire.mcp.Gateway].
        auth: how HTTP clients are authenticated (see
            [`Authentication`][toolwire.mcp.Authentication]); not for stdio, nor with
            ``principal``.
        own_names: serve the tools of the source's one server under their own names (no
            ``server__`` prefix); see [`Gateway`][toolwire.mcp.Gateway].
        server_name: the name of a ``stdio:`` or URL SOURCE string's server (see
            ``toolwire.sources.opened_source``).
        executor_options: see [`Gateway`][toolwire.mcp.Gateway].

    Raises:
        ConfigurationError: a bad option, a policy file that cannot be read, a bad
            ``TOOLWIRE_TOKEN_KEY``, a ``host`` that is not loopback without ``auth``, tools
            the policy may ask about that nothing could approve, or ``own_names`` for a
            source of several servers.
        MissingDependency: HTTP without ``uvicorn``.
        StoreUnavailable: the store cannot be reached at start.
    """
    if transport not in ("stdio", "http"):
        raise ConfigurationError(f"transport is 'stdio' or 'http', not {transport!r}")
    _check_auth(transport, host, auth, principal)
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]  # [::1] → ::1, as a socket takes it
    if isinstance(policy, str | Path):
        from toolwire.policy_file import load_policy

        policy = load_policy(policy)
    owned_store = isinstance(store, str)
    if isinstance(store, str):
        from toolwire.runs.store import from_url

        store = from_url(store)
    # A store of this process's memory that only the gateway holds: no one else can decide
    # what waits in it (a MemoryStore passed in is the caller's, who can; sqlite:///:memory: is
    # such a store too).
    unreachable = store is None or (owned_store and in_process(store))
    try:
        if store is not None:
            await _check_store(store)
        # The hub of a SOURCE string finds the tokens `toolwire mcp login --store` kept there.
        tokens = tokens_beside(store)
        async with open_served(source, token_store=tokens, server_name=server_name) as opened:
            toolset = opened.toolset
            # The source module's own policy and the one given, together (see Policy.all_of).
            applied = [own for own in (opened.policy, policy) if own is not None]
            policy = Policy.all_of(*applied) if applied else None
            if policy is None:
                _warn_destructive_names(toolset)
            if unreachable and approver is None:
                _check_approvable(toolset, policy, principal, approve_by)
            hub = opened.hub
            # Followed only when the toolset is the hub's own: a filtered one stays as it is.
            own = hub if hub is not None and hub.as_toolset() is toolset else None
            gateway = Gateway(
                toolset,
                policy=policy,
                store=store,
                approver=approver,
                principal=principal,
                timeout=timeout,
                approve_by=approve_by,
                name=name,
                hub=own,
                auth=auth,
                own_names=own_names,
                **executor_options,
            )
            if transport == "stdio":
                await _serve_stdio(gateway)
            else:
                await _serve_http(gateway, host, port, on_listening)
    finally:
        if owned_store and store is not None:
            await _close(store)


async def _check_store(store: RunStore) -> None:
    """Refuse to start on a store that cannot be reached: otherwise the first call the
    policy asks about would fail, and every one after it.

    Raises:
        StoreUnavailable: one line, naming the store without its password.
    """
    try:
        await check_reachable(store)
    except StoreUnavailable as exc:
        raise StoreUnavailable(f"the gateway does not start: its run store: {exc}") from None


@asynccontextmanager
async def open_served(
    source: Source, *, token_store: TokenStore | None = None, server_name: str | None = None
) -> AsyncIterator[OpenedSource]:
    """``source`` opened (see ``serve``): its tools, with its MCP servers connected while
    open, the hub they come from, and a Python module's own policy. ``token_store``: where
    the hub made for a SOURCE string keeps OAuth tokens (a given Hub keeps its own)."""
    if isinstance(source, Hub):
        async with source:
            yield OpenedSource(source.as_toolset(), hub=source)
    elif isinstance(source, str | Path):
        # Containers start in any order: upstreams all down at start are waited for.
        async with opened_source(
            str(source), token_store=token_store, server_name=server_name, all_down="wait"
        ) as opened:
            yield opened
    elif isinstance(source, ModuleType):
        async with opened_source(source.__name__, token_store=token_store) as opened:
            yield opened
    else:
        yield OpenedSource(ToolSet.of(source))


_NOT_LOOPBACK = (
    "the MCP gateway has no authentication configured, so it listens on loopback only "
    "(127.0.0.1, ::1, localhost), not {host!r}: anyone reaching the port would call the "
    "tools as the gateway's principal; authenticate its clients (--auth-jwks or "
    "--auth-tokens, or auth=) to serve the network"
)


def _check_auth(transport: str, host: str, auth: Authentication | None, principal: Any) -> None:
    """Refuse a gateway that would serve the network without authenticating, or options
    that do not go together."""
    if auth is not None and not isinstance(auth, Authentication):
        raise ConfigurationError("auth is a toolwire.mcp.Authentication")
    if transport == "http" and auth is None and not is_loopback(host):
        raise ConfigurationError(_NOT_LOOPBACK.format(host=host))
    if auth is None:
        return
    if transport != "http":
        raise ConfigurationError(
            "auth is for HTTP: over stdio the client is the process that started the gateway"
        )
    if principal is not None:
        raise ConfigurationError(
            "principal and auth cannot both be given: with auth, each client's token names "
            "the principal its calls run for"
        )
    if auth.resource is None and auth.authorization_servers and not is_loopback(host):
        raise ConfigurationError(
            "a gateway listening beyond loopback names its public URL in its metadata: give it "
            "(--auth-resource https://..., or Authentication(resource=...))"
        )


def _check_approvable(
    toolset: ToolSet, policy: Policy | None, principal: Any, approve_by: str
) -> None:
    """Refuse (or warn, when the client may approve) when calls of served tools may need
    approval and nothing outside this process can decide them."""
    asking: list[str] = []
    for name, tool in zip(toolset.exposed_names, toolset, strict=True):
        # Several policies applied at once (Policy.all_of) ask each of them.
        if may_ask(policy or ALLOW_ALL, tool, principal=principal, exposed_name=name):
            asking.append(name)
    if not asking:
        return
    shown = ", ".join(asking[:_SHOWN_TOOLS]) + (
        f" and {len(asking) - _SHOWN_TOOLS} more" if len(asking) > _SHOWN_TOOLS else ""
    )
    if approve_by != "client":
        raise ConfigurationError(
            f"calls of {shown} may need approval, and with no store nothing could approve "
            "them: give a shared store (--store sqlite:///runs.db) to decide them with "
            "`toolwire decide` or the inbox, or let the client that makes a call approve it "
            "in a form (--approve-by client)"
        )
    warnings.warn(
        f"calls of {shown} may need approval, and with no store only a client that answers "
        "approval forms (elicitation) can approve them; give a shared store (--store "
        "sqlite:///runs.db) to decide them with `toolwire decide` or the inbox",
        ToolwireWarning,
        stacklevel=3,
    )


def _warn_destructive_names(toolset: ToolSet) -> None:
    """Warn when, with no policy, tools whose names say they delete, send or pay (see
    [`destructive_by_name`][toolwire.policy.destructive_by_name]) are served: each call of
    theirs would run as the client makes it."""
    named = [
        name
        for name, tool in zip(toolset.exposed_names, toolset, strict=True)
        if served_kind(tool) and destructive_by_name(tool) is not None
    ]
    if not named:
        return
    shown = ", ".join(named[:_SHOWN_DESTRUCTIVE]) + (
        f" and {len(named) - _SHOWN_DESTRUCTIVE} more" if len(named) > _SHOWN_DESTRUCTIVE else ""
    )
    warnings.warn(
        f"no policy: every call of {shown} runs as the client makes it, though their names "
        "say they may delete, send or pay and their annotations do not say otherwise; give a "
        'policy (--policy FILE) that asks about them or denies them (destructive = "ask" '
        "asks about every tool not declared harmless)",
        ToolwireWarning,
        stacklevel=3,
    )


async def _serve_stdio(gateway: Gateway) -> None:
    from mcp.server.stdio import stdio_server

    server = gateway.server()
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


async def _serve_http(
    gateway: Gateway, host: str, port: int, on_listening: Callable[[str], Any] | None
) -> None:
    try:
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings
    except ImportError as exc:
        raise MissingDependency("uvicorn", "mcp") from exc
    # The socket is bound here, so port 0 works and the URL is known before serving.
    sock = tcp_socket(host)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ConfigurationError(f"cannot listen on {host}:{port}: {exc}") from None
    address, bound = sock.getsockname()[:2]
    loopback = is_loopback(address)
    if not loopback and gateway.auth is None:
        # A name (`localhost`) resolved elsewhere: never serve it unauthenticated.
        sock.close()
        raise ConfigurationError(_NOT_LOOPBACK.format(host=f"{host} ({address})"))
    sock.listen(128)  # before the URL is told: a client connecting at once is queued, not refused
    shown = f"[{host}]" if sock.family == socket.AF_INET6 else host
    url = f"http://{shown}:{bound}/mcp"
    if loopback:
        # DNS-rebinding protection for every loopback address, not only the SDK's three: a
        # web page whose name resolves to 127.0.0.2 must not reach the tools.
        names = ["127.0.0.1", "localhost", "[::1]", shown]
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=[f"{name}:*" for name in names],
            allowed_origins=[f"http://{name}:*" for name in names],
        )
    else:
        # Reached by names only its operator knows (behind a proxy, most often): each
        # request's token is what lets it in, and a web page cannot send one it lacks.
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
    auth = gateway.auth
    resource = (auth.resource or url) if auth is not None else url
    app = gateway.server().streamable_http_app(
        host=host,
        transport_security=security,
        custom_starlette_routes=metadata_routes(auth, resource, gateway.name) if auth else None,
    )
    requests = _Requests(guarded(app, auth, resource=resource) if auth is not None else app)
    # The app's lifespan (the MCP sessions) is run here, not by uvicorn, so that a stopping
    # gateway ends it in order (see _serve_until_stopped).
    config = uvicorn.Config(requests, log_level="warning", lifespan="off")
    if on_listening is not None:
        on_listening(url)
    try:
        await _serve_until_stopped(gateway, uvicorn.Server, config, app, requests, sock)
    finally:
        sock.close()


class _Requests:
    """The gateway's ASGI app with each request in a cancel scope of its own: a stopping
    gateway ends the requests still open itself (an MCP client's event stream never ends on
    its own), each with a complete HTTP answer, so the server has nothing left to cancel."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.refusing = False
        self._open: set[anyio.CancelScope] = set()
        self._answering = 0
        self._answered = anyio.Event()
        self._answered.set()

    def refuse(self) -> None:
        """Answer new requests 503."""
        self.refusing = True

    async def answered(self) -> None:
        """Wait until no request but event streams (``GET``) is open."""
        await self._answered.wait()

    def end(self) -> None:
        """End the requests still open."""
        for scope in list(self._open):
            scope.cancel()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self.refusing:
            await _send_stopping(send)
            return
        started = complete = False

        async def tracked(message: Any) -> None:
            nonlocal started, complete
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                complete = True
            await send(message)

        answering = scope.get("method") != "GET"
        if answering:
            self._answering += 1
            if self._answering == 1:
                self._answered = anyio.Event()
        with anyio.CancelScope() as request:
            self._open.add(request)
            try:
                await self.app(scope, receive, tracked)
            finally:
                self._open.discard(request)
                if answering:
                    self._answering -= 1
                    if not self._answering:
                        self._answered.set()
        if (request.cancelled_caught or self.refusing) and not complete:
            # Ended by the stop (or its session was): the answer is closed, not left open.
            with anyio.CancelScope(shield=True), contextlib.suppress(OSError):
                if started:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                else:
                    await _send_stopping(send)


async def _send_stopping(send: Any) -> None:
    body = b"the MCP gateway is stopping"
    await send(
        {
            "type": "http.response.start",
            "status": 503,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode("ascii")),
                (b"connection", b"close"),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _serve_until_stopped(
    gateway: Gateway,
    server_class: Any,
    config: Any,
    app: Any,
    requests: _Requests,
    sock: socket.socket,
) -> None:
    """Serve ``app`` on ``sock`` with uvicorn (``server_class``, ``config``) until the server
    stops (a signal) or this is cancelled, then stop in order: new requests refused, the
    calls in progress answered that the gateway stopped (and those answers sent), the MCP
    sessions ended, the requests still open (event streams) ended, then the server's own
    shutdown, which finds nothing left to wait for.
    (Cancelling uvicorn midway instead leaves its tasks to die at the loop's close, each
    with a traceback on stderr.)"""
    sessions_end, sessions_over = anyio.Event(), anyio.Event()

    async def before_shutdown() -> None:
        requests.refuse()
        gateway.end_calls()  # each call in progress is answered that the gateway stopped
        with anyio.move_on_after(_ANSWERS_SECONDS):
            await requests.answered()  # those answers sent before the sessions end
        sessions_end.set()
        await sessions_over.wait()
        requests.end()

    class Server(server_class):  # type: ignore[misc]
        async def shutdown(self, sockets: Any = None) -> None:
            await before_shutdown()
            await super().shutdown(sockets=sockets)

    server = Server(config)
    stopping = anyio.Event()
    shield = anyio.CancelScope(shield=True)
    failed: list[BaseException] = []

    async def sessions(*, task_status: Any) -> None:
        try:
            async with app.router.lifespan_context(app):
                task_status.started()
                await sessions_end.wait()
        finally:
            sessions_over.set()

    async def serving() -> None:
        with shield:
            try:
                async with anyio.create_task_group() as tasks:
                    await tasks.start(sessions)
                    try:
                        await server.serve(sockets=[sock])
                    finally:
                        sessions_end.set()  # when it never got to its shutdown
            except anyio.get_cancelled_exc_class():
                raise
            except BaseException as exc:  # re-raised below as it was raised, not in a group
                failed.append(_unwrapped(exc))
            finally:
                stopping.set()

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(serving)
        try:
            await stopping.wait()
        finally:
            server.should_exit = True  # as a signal does: uvicorn shuts itself down
            # A bound on the whole stop, in case a session or the server does not end.
            shield.deadline = anyio.current_time() + _SHUTDOWN_SECONDS
    if failed:
        raise failed[0]


def _unwrapped(exc: BaseException) -> BaseException:
    """The one exception a task group wrapped, or ``exc``."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


async def _close(store: Any) -> None:
    if hasattr(store, "aclose"):
        await store.aclose()
    elif hasattr(store, "close"):
        store.close()
