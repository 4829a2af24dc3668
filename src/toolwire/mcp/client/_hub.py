"""A hub of MCP servers: their tools as one toolset, each call governed and fault-tolerant.

Built on the official ``mcp`` SDK (2.x): ``mcp.Client`` reaches each server over stdio, streamable
HTTP, the legacy HTTP+SSE transport or in process. A server that fails to start or dies
contributes no tools and its calls are answered ``unavailable``; the hub reconnects it in the
background with bounded backoff. A server's tool that cannot be used (a bad name, a schema a
provider cannot take, a duplicate) is left out of the listing with its reason and never affects
another tool or server.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging
import math
import sys
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, TextIO, TypeVar

import anyio
import anyio.abc
import anyio.to_thread
import pydantic

from toolwire._limits import acquire
from toolwire._values import describe_exception
from toolwire.calls import ToolResult
from toolwire.context import current_call
from toolwire.errors import (
    AuthorizationError,
    ConfigurationError,
    MissingDependency,
    ToolwireError,
)
from toolwire.inputs import Elicitor, InputDeferred
from toolwire.mcp._relay import let_calls_declare, relaying
from toolwire.mcp.client._accept import accept
from toolwire.mcp.client._answers import (
    exposed,
    failure_of,
    first_error,
    keeping_error,
    output_problem,
    stopped,
)
from toolwire.mcp.client._catalog import Catalog, all_pages, read_catalog
from toolwire.mcp.client._content import result_from_mcp
from toolwire.mcp.client._errors import protocol_error
from toolwire.mcp.client._input import (
    InFlight,
    InputRefused,
    call_with_input,
    calling,
    legacy_callback,
    relayed_callbacks,
)
from toolwire.mcp.client._listen import listen
from toolwire.mcp.client._owners import HUB
from toolwire.mcp.client._progress import CallProgress, ProgressHook
from toolwire.mcp.client._remote import authorization_error, check_remote, remote_transport
from toolwire.mcp.client._specs import (
    HttpServer,
    InProcessServer,
    ServerSpec,
    SseServer,
    StdioServer,
)
from toolwire.mcp.client._state import DESCRIBED, ServerState
from toolwire.mcp.client._tokens import TokenStore
from toolwire.tool import Tool, exposed_name_for
from toolwire.toolset import ToolSet

__all__ = ["HttpServer", "Hub", "InProcessServer", "ServerSpec", "SseServer", "StdioServer"]

_log = logging.getLogger("toolwire")
_T = TypeVar("_T")

_CHECKED_ON_LOOP = 100
"""Listings with more tools than this are checked in a worker thread, off the event loop."""
_DRAIN_SECONDS = 1.0
"""Most seconds a call's answer waits for the ``on_progress`` hook to finish with the reports
received before it."""


def _mcp() -> Any:
    try:
        import mcp
    except ImportError:
        raise MissingDependency("mcp", "mcp") from None
    return mcp


def _target(server: ServerState, token_store: TokenStore | None) -> Any:
    """What ``mcp.Client`` connects to; stdio, HTTP and SSE transports get their listings checked
    tool by tool (an in-process server is the program's own: the SDK checks it as a whole)."""
    mcp = _mcp()
    spec = server.spec
    if isinstance(spec, InProcessServer):
        return spec.server
    from toolwire.mcp.client._listing import CheckedListings

    transport: Any
    if isinstance(spec, StdioServer):
        transport = mcp.stdio_client(
            mcp.StdioServerParameters(
                command=spec.command,
                args=list(spec.args),
                env=dict(spec.env) if spec.env else None,
                cwd=spec.cwd,
            ),
            errlog=_server_stderr(),
        )
    else:
        transport = remote_transport(server, token_store)
    return CheckedListings(transport, server.refused, server.output_schemas)


def _server_stderr() -> TextIO:
    """Where a stdio server's stderr goes: this program's stderr as it is when the server starts
    (the SDK's default is the one it found at import), or the process's own where that one is
    not a file a child can write to (a notebook's, a captured one)."""
    try:
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return sys.__stderr__ or sys.stderr
    return sys.stderr


class Hub:
    """Several MCP servers as one [tool source][toolwire.sources.ToolSource] (an async context
    manager).

    ```python
    async with Hub({"files": StdioServer(command="mcp-files"), "web": HttpServer(url=...)}) as hub:
        listing = toolwire.tools(hub, "gemini")
        outcome = await toolwire.execute_tool_calls(hub, "gemini", response)
    ```

    Tools are exposed as ``server__tool``; a server's tools never shadow another's. Tool
    descriptions from servers are cleaned (invisible characters, 4 KiB cap).

    Each listing is checked tool by tool. A tool is left out, with its reason in
    [`left_out`][], when its name is not a string, is blank, or is longer than 256
    characters; when its definition is malformed or its input schema is not an object schema;
    when a registered provider cannot declare it; when the server lists the name twice with
    different definitions (the same definition twice is one tool); when its exposed name is
    already that of another tool of the same server (names that differ only in characters
    made portable, like ``a.b`` and ``a_b``: the first listed stays); or beyond the first
    1000 tools of a server. A left-out tool never affects another tool or server.

    Trust: the tools of a server's first successful listing are trusted as they are. A tool
    whose description, schema, annotations or title change later (not its icons: they are
    only shown, never fetched), and a tool that first appears later (``search`` replaced by
    ``search_v2``), need approval for every call (``needs_approval``) until
    [`approve_definition`][]. ``trust_new_tools=True`` trusts
    tools that appear later as they are first seen (changed definitions still need approval).

    Protocol revisions: each connection negotiates the newest revision both sides speak (the
    SDK's ``server/discover`` probe, falling back to the ``initialize`` handshake of the
    2024-11-05 to 2025-11-25 revisions; a server that leaves the probe unanswered until its
    ``connect_timeout`` gets the handshake at the next attempt); [`protocol_version`][]
    tells which. A server's changed listing is re-read on its
    ``notifications/tools/list_changed`` (handshake revisions) or on the
    ``subscriptions/listen`` stream the hub holds open (2026-07-28 on); either way changed
    definitions need approval again. A 2026-07-28 server that rejects a
    call's headers (``HEADER_MISMATCH``: its definition changed since it was listed) has that
    call answered ``failed`` and is listed again: the hub never resends a call to a
    definition that was not approved, as the SDK's own client would.

    Long-running calls: every call asks its server for progress. A call may go a server's
    ``timeout`` without progress (each notification restarts the count) and take its
    ``max_total_timeout`` in all; either way it is then cancelled on the server and answered
    ``timeout``. Each notification is passed to ``on_progress`` and recorded as an
    ``mcp.progress`` event (``progress``, ``total``, ``message``) on the current
    OpenTelemetry span (the executor's ``execute_tool`` span, when it traces).

    Args:
        servers: name → server; a name is non-empty and has no ``/`` (policies match
            ``server/tool``).
        max_backoff: the longest wait, in seconds, between reconnection attempts.
        trust_new_tools: trust tools that appear after a server's first listing.
        on_progress: called as ``on_progress(context, progress, total, message)`` for each
            progress notification, in the order the server sent them (a
            [`ProgressContext`][toolwire.mcp.ProgressContext] says which call); a function or
            a coroutine function, run on the event loop, so keep it quick. One that raises is
            logged (logger ``toolwire``); the call goes on.
        elicitor: asked about each question a server asks during a call (MCP elicitation),
            as ``elicitor(request)`` with an [`InputRequest`][toolwire.inputs.InputRequest]
            (a function or a coroutine function): it answers at once with an
            [`InputAnswer`][toolwire.inputs.InputAnswer] or a mapping (the form's content,
            accepted), or returns None to defer. Deferred on a 2026-07-28 connection, the
            call pauses like an approval: the executor raises
            [`ApprovalPending`][toolwire.approval.ApprovalPending] with the question in the
            request's ``input``, and [`toolwire.respond`][toolwire.respond] answers it.
            Older revisions need the answer within the call: a deferred question is cancelled
            and the call answered with an error saying so. The call's idle clock stands still
            while the elicitor decides. An answer is checked against the server's requested
            schema before it is sent. Without an elicitor every question is declined.
        token_store: where OAuth tokens are kept for the remote servers whose ``auth``
            ([`OAuth`][toolwire.mcp.OAuth], [`ClientCredentials`][toolwire.mcp.ClientCredentials])
            names no store: a [`TokenStore`][toolwire.mcp.TokenStore]; None, a file under the
            user's config directory ([`FileTokenStore`][toolwire.mcp.FileTokenStore]).
            [`token_store_for`][toolwire.mcp.token_store_for] makes one in a run store's
            database. A server whose authorization fails is down, its status the
            [`AuthorizationError`][toolwire.errors.AuthorizationError]'s message
            (``toolwire mcp login`` when a person must authorize).
    """

    def __init__(
        self,
        servers: Mapping[str, ServerSpec],
        *,
        max_backoff: float = 30.0,
        trust_new_tools: bool = False,
        on_progress: ProgressHook | None = None,
        elicitor: Elicitor | None = None,
        token_store: TokenStore | None = None,
    ) -> None:
        if on_progress is not None and not callable(on_progress):
            raise ConfigurationError("on_progress must be a function, or None")
        if elicitor is not None and not callable(elicitor):
            raise ConfigurationError("elicitor must be a function, or None")
        if not isinstance(servers, Mapping) or not servers:
            raise ConfigurationError("a hub needs at least one server, as a mapping name → spec")
        for name, spec in servers.items():
            if not isinstance(name, str) or not name.strip() or "/" in name:
                raise ConfigurationError(
                    f"a server's name is a non-empty string without '/', not {name!r}"
                )
            if not isinstance(spec, StdioServer | HttpServer | SseServer | InProcessServer):
                raise ConfigurationError(
                    f"server {name!r}: expected a StdioServer, HttpServer, SseServer or "
                    "InProcessServer"
                )
            if spec.max_concurrency < 1:
                raise ConfigurationError(f"server {name!r}: max_concurrency must be at least 1")
            if spec.timeout is not None and not spec.timeout > 0:
                raise ConfigurationError(f"server {name!r}: timeout must be positive (or None)")
            cap = spec.max_total_timeout
            if cap is not None and not cap > 0:
                raise ConfigurationError(
                    f"server {name!r}: max_total_timeout must be positive (or None)"
                )
            if cap is not None and spec.timeout is not None and spec.timeout > cap:
                raise ConfigurationError(
                    f"server {name!r}: timeout ({spec.timeout:g} s without progress) is longer "
                    f"than max_total_timeout ({cap:g} s in all)"
                )
            if not spec.probe_timeout > 0:
                raise ConfigurationError(f"server {name!r}: probe_timeout must be positive")
            if isinstance(spec, HttpServer | SseServer):
                check_remote(name, spec)
            taints = spec.taints
            if not isinstance(taints, str) and (
                not isinstance(taints, list | tuple | set | frozenset)
                or not all(isinstance(t, str) for t in taints)
            ):
                raise ConfigurationError(
                    f"server {name!r}: taints must be a string or a list of strings"
                )
            if not isinstance(spec.trusted, bool):
                raise ConfigurationError(f"server {name!r}: trusted is true or false")
        self._servers = {
            name: ServerState(name, spec, limiter=anyio.Semaphore(spec.max_concurrency))
            for name, spec in servers.items()
        }
        self.max_backoff = max_backoff
        self.trust_new_tools = trust_new_tools
        self.on_progress = on_progress
        """The progress hook (see above); calls started after it is set report to it."""
        self.elicitor = elicitor
        """Asked about servers' questions (see above); None declines them."""
        self.token_store = token_store
        """Where OAuth tokens are kept for servers whose ``auth`` names no store (None: a file
        under the user's config directory, see [`FileTokenStore`][toolwire.mcp.FileTokenStore])."""
        self._calls = itertools.count(1)
        self._tasks: anyio.abc.TaskGroup | None = None
        self._toolset: ToolSet | None = None
        # The definition each tool was approved with (its server's first listing, first seen
        # with trust_new_tools, or approve_definition): any other needs approval.
        self._approved: dict[tuple[str, str], str] = {}
        self._change: anyio.Event | None = None
        self._watchers: list[Callable[[str, str], Awaitable[None]]] = []

    @classmethod
    def from_config(
        cls,
        config: Mapping[str, Any] | str | Path,
        *,
        trust_new_tools: bool = False,
        on_progress: ProgressHook | None = None,
        elicitor: Elicitor | None = None,
        token_store: TokenStore | None = None,
    ) -> Hub:
        """A hub from an MCP client's config, as Claude Desktop, Claude Code, Cursor, Cline,
        Windsurf, Gemini CLI or VS Code write it: a dict, or the path of a JSON file (comments
        and trailing commas allowed, as in VS Code's ``mcp.json``).

        The servers are the ``mcpServers`` object, or VS Code's ``servers`` (also under ``mcp``
        in its ``settings.json``); VS Code's ``inputs`` and other top-level keys are not read.
        In each server's entry:

        - ``disabled: true`` leaves the server out.
        - ``type``: ``stdio``; ``http``, ``streamable-http`` or ``streamableHttp`` (an
          [`HttpServer`][toolwire.mcp.HttpServer]); ``sse`` (an
          [`SseServer`][toolwire.mcp.SseServer]). Without it, a ``command`` is a stdio server
          and a ``url`` (Windsurf's ``serverUrl``, Gemini CLI's ``httpUrl``) is streamable
          HTTP, or SSE when its path ends in ``/sse``. Cline's ``transportType`` stands in for
          a missing ``type``.
        - ``command``, ``args``, ``env`` (a null value leaves the variable out) and ``cwd``
          for stdio; ``url`` and ``headers`` for HTTP and SSE. Numbers and booleans in
          ``args``, ``env`` and ``headers`` are written out as JSON writes them.
        - ``timeout``: the server's ``timeout``, in seconds (Cline's unit; Gemini CLI writes
          milliseconds: a value over an hour is taken as written, with a warning). A timeout
          longer than the default ``max_total_timeout`` raises it.
        - ``include`` / ``exclude`` (or Gemini CLI's ``includeTools`` / ``excludeTools``):
          glob patterns over the server's tool names.

        ``${NAME}``, ``${env:NAME}`` and ``${NAME:-default}`` (the default when ``NAME`` is
        unset or empty) in ``command``, ``args``, ``env``, ``cwd``, ``url`` and ``headers``
        are read from the environment; in ``command``, ``args`` and ``cwd``, the server's own
        ``env`` first, as its process sees it (``"args": ["--header", "Bearer ${TOKEN}"]``
        with ``TOKEN`` in its ``env``). ``${userHome}``, ``${workspaceFolder}`` (the folder
        holding the file's ``.vscode`` or ``.cursor`` folder, else the file's folder; for a
        dict, the current directory), ``${workspaceFolderBasename}`` and ``${pathSeparator}``
        are expanded as VS Code and Cursor do. ``$${`` is a literal ``${``; a bare ``$NAME``
        is passed as written (with a warning in ``env`` and ``headers``).

        Keys toolwire does not read (``autoApprove``, ``alwaysAllow``, ``trust``,
        ``envFile``...) are ignored with a [`ToolwireWarning`][toolwire.errors.ToolwireWarning]
        naming them.

        Raises:
            ConfigurationError: the file cannot be read; an entry is malformed (the message
                names the server and the key); a variable it uses is not set, or cannot be
                expanded here (VS Code's ``${input:...}`` prompts, ``${command:...}``...).
        """
        from toolwire.mcp.client._config import read_config

        return cls(
            read_config(config),
            trust_new_tools=trust_new_tools,
            on_progress=on_progress,
            elicitor=elicitor,
            token_store=token_store,
        )

    # -- lifecycle -------------------------------------------------------------------------------

    async def __aenter__(self) -> Hub:
        _mcp()
        if self._tasks is not None:
            raise ConfigurationError("the hub is already open")
        self._tasks = anyio.create_task_group()
        await self._tasks.__aenter__()
        for server in self._servers.values():
            self._tasks.start_soon(self._keep_connected, server)
        for server in self._servers.values():
            await server.ready.wait()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        if self._tasks is None:
            return
        self._tasks.cancel_scope.cancel()
        # The body's own exception is not handed to the task group: it propagates as it was,
        # not wrapped in an ExceptionGroup.
        await self._tasks.__aexit__(None, None, None)
        self._tasks = None

    async def _keep_connected(self, server: ServerState) -> None:
        mcp = _mcp()
        failures = 0
        while True:
            # A server that never finishes starting must not hold the hub up.
            deadline = anyio.current_time() + server.spec.connect_timeout
            with anyio.CancelScope(deadline=deadline) as connecting:
                try:
                    async with (
                        mcp.Client(
                            _target(server, self.token_store),
                            mode="legacy" if server.handshake_only else "auto",
                            cache=None,  # every listing is read from the server
                            message_handler=self._notifications(server),
                            # Declares elicitation; without an elicitor, questions are declined.
                            elicitation_callback=legacy_callback(self, server),
                            # Sampling, roots and log messages reach a gateway's client (only).
                            **relayed_callbacks(server),
                        ) as client,
                        anyio.create_task_group() as watching,
                    ):
                        server.broken = False
                        server.protocol_version = client.protocol_version
                        server.owners.reset()  # a new session: no roots given, none asked
                        if client.protocol_version in _modern_versions():
                            # Each call says what its client can answer (see _relay).
                            let_calls_declare(client.session)
                            # Subscribed before the first listing: no change falls between.
                            listening = partial(
                                listen, backoff=self.max_backoff, updated=self._updated
                            )
                            await watching.start(listening, client, server)
                        else:  # a new session: its subscriptions are made again
                            for uri in sorted(server.subscriptions):
                                with contextlib.suppress(mcp.MCPError):  # it refuses it now
                                    await client.subscribe_resource(uri)
                        while True:
                            server.wake = anyio.Event()
                            await self._list(client, server)
                            connecting.deadline = math.inf
                            server.client = client
                            server.error = server.authorization_error = None
                            failures = 0
                            self._changed()
                            server.ready.set()
                            await server.wake.wait()
                            if server.broken:
                                break
                        watching.cancel_scope.cancel()
                except Exception as exc:  # a server that fails in any way is down
                    refused = server.authorization_error = authorization_error(exc, server)
                    server.error = (
                        str(refused)[:DESCRIBED]
                        if refused is not None
                        else describe_exception(exc, limit=DESCRIBED)
                    )
                    server.handshake_only = False  # a modern-only server refuses it: probe again
            if connecting.cancelled_caught:
                server.error = f"did not start within {server.spec.connect_timeout:g} s"
                # An older server may leave the revision probe (server/discover) unanswered
                # instead of refusing it: the next attempt goes straight to the handshake.
                server.handshake_only = not server.handshake_only
            server.client = None
            server.protocol_version = None
            if server.tools:
                server.gone = [entry.tool for entry in server.tools]
            server.tools = []
            server.left_out = {}
            server.catalog = Catalog()
            self._changed()
            server.ready.set()
            failures += 1
            await anyio.sleep(min(self.max_backoff, 0.1 * 2 ** min(failures, 16)))

    def _notifications(self, server: ServerState) -> Any:
        mcp = _mcp()

        relisted = (
            mcp.types.ToolListChangedNotification,
            mcp.types.ResourceListChangedNotification,
            mcp.types.PromptListChangedNotification,
        )

        async def handle(message: Any) -> None:
            if isinstance(message, relisted):
                server.wake.set()
            elif (
                isinstance(message, mcp.types.ResourceUpdatedNotification)
                and server.protocol_version not in _modern_versions()  # else: see _listen
            ):
                await self._updated(server, message.params.uri)

        return handle

    async def _list(self, client: Any, server: ServerState) -> None:
        """Read the server's listing, check it tool by tool and take it as the server's tools."""
        server.refused.clear()
        # A server may offer resources or prompts only: its tools are listed when it has some.
        capabilities = client.server_capabilities
        has_tools = capabilities is None or capabilities.tools is not None
        listed = await all_pages(client.list_tools, "tools") if has_tools else []
        checking = partial(accept, server, listed, dict(server.refused), call=self._call)
        if len(listed) > _CHECKED_ON_LOOP:  # a big listing is checked off the event loop
            listing = await anyio.to_thread.run_sync(checking)
        else:
            listing = checking()
        server.tools, server.left_out = listing.tools, listing.left_out
        server.declarable = listing.declarable
        server.catalog = await read_catalog(client)
        # The first listing is trusted as it is; what appears later is new.
        trusted = not server.listed or self.trust_new_tools
        for entry in listing.tools:
            key = (server.name, entry.tool.name)
            if trusted and key not in self._approved:
                self._approved[key] = entry.fingerprint
        server.listed = True

    def _changed(self) -> None:
        self._toolset = None
        if self._change is not None:
            self._change.set()
            self._change = None

    async def listing_changed(self) -> None:
        """Wait until the hub's tools change: a server listed them again (it said they
        changed), went down or came back, or a definition was approved."""
        if self._change is None:
            self._change = anyio.Event()
        await self._change.wait()

    # -- the tool source -------------------------------------------------------------------------

    @property
    def status(self) -> dict[str, str | None]:
        """Per server, None when it is up, else why it is down."""
        return {name: server.error for name, server in self._servers.items()}

    @property
    def authorization_errors(self) -> dict[str, AuthorizationError]:
        """The servers that are down because their authorization failed, with the error: an
        [`AuthorizationRequired`][toolwire.errors.AuthorizationRequired] when a person must
        log in first (``toolwire mcp login``)."""
        return {
            name: server.authorization_error
            for name, server in self._servers.items()
            if isinstance(server.authorization_error, AuthorizationError)
        }

    @property
    def left_out(self) -> dict[str, dict[str, str]]:
        """Per server, the tools of its last listing that are not offered: name → why.

        A name that is not a string is shown by its ``repr``. Tools hidden by a server's
        ``include``/``exclude`` are not in it; a server that is down has none.
        """
        return {name: dict(server.left_out) for name, server in self._servers.items()}

    @property
    def unavailable(self) -> dict[str, str]:
        """The tools of servers that are down, by exposed name, and why: a listing made now
        leaves them out, and a call to one is answered ``unavailable`` (the model may still
        call what an earlier listing showed it)."""
        return {name: why for name, (_, why) in self.unavailable_tools().items()}

    def unavailable_tools(self) -> dict[str, tuple[Tool, str]]:
        """:attr:`unavailable` with each tool as it was last listed (a listing for a principal
        leaves out the ones its policy denies them, as it does the tools that are up)."""
        gone = {}
        for server in self._servers.values():
            if server.client is None:
                # just down, the listing is still there; once reconnecting, what it was
                lost = [entry.tool for entry in server.tools] or server.gone
                for tool in lost:
                    reason = f"server {server.name!r} is down ({server.error}); try again later"
                    gone[exposed_name_for(tool.name, tool.server_id)] = (tool, reason)
        return gone

    def task_support(self, tool: Tool) -> str | None:
        """What ``tool``'s server declared of running it as a task (``execution.taskSupport``
        in its listing): ``forbidden``, ``optional``, ``required``, or None (it declared
        nothing, or it is not this hub's)."""
        server = self._servers.get(tool.server_id or "")
        return server.task_support.get(tool.name) if server is not None else None

    def listed_meta(self, tool: Tool) -> dict[str, Any] | None:
        """The ``_meta`` ``tool``'s server listed it with (None: none, or not this hub's)."""
        server = self._servers.get(tool.server_id or "")
        return server.tool_meta.get(tool.name) if server is not None else None

    def as_toolset(self) -> ToolSet:
        """The tools of the servers that are up, as ``server__tool``; rebuilt after changes."""
        if self._toolset is None:
            tools: list[Tool] = []
            for server in self._servers.values():
                if server.client is None:
                    continue
                for entry in server.tools:
                    tool = entry.tool
                    if self._approved.get((server.name, tool.name)) != entry.fingerprint:
                        tool = dataclasses.replace(tool, needs_approval=True)
                    tools.append(tool)
            self._toolset = ToolSet(tools, on_collision="suffix")
        return self._toolset

    def protocol_version(self, name: str) -> str | None:
        """The protocol revision server ``name`` speaks on its current connection (e.g.
        ``"2026-07-28"``, or ``"2025-06-18"`` for one that only knows the ``initialize``
        handshake), or None while it is down.

        Raises:
            ConfigurationError: the hub has no server ``name``.
        """
        server = self._servers.get(name)
        if server is None:
            raise ConfigurationError(f"the hub has no server {name!r}")
        return server.protocol_version if server.client is not None else None

    # -- what a gateway passes on besides calls -------------------------------------------------

    def catalogs(self) -> dict[str, Catalog]:
        """Per server that is up, its resources, resource templates and prompts (as its last
        listing gave them)."""
        return {name: s.catalog for name, s in self._servers.items() if s.client is not None}

    async def send(self, name: str, request: Callable[[Any], Awaitable[_T]]) -> _T:
        """``request(client)`` on server ``name``'s connection (an ``mcp.Client``): a resource
        read, a prompt get, a completion or a subscription, within the server's ``timeout``.

        Raises:
            ConfigurationError: the hub has no server ``name``.
            ToolwireError: the server is down, or did not answer in time.
            MCPError: the server's own error, as it said it.
        """
        server = self._servers.get(name)
        if server is None:
            raise ConfigurationError(f"the hub has no server {name!r}")
        client = server.client
        if client is None:
            raise ToolwireError(f"Server {name!r} is unavailable: {server.error}.")
        mcp = _mcp()
        await acquire(server.limiter)
        try:
            with anyio.fail_after(server.spec.timeout):
                return await request(client)
        except TimeoutError:
            raise ToolwireError(
                f"Server {name!r} did not answer within {server.spec.timeout:g} s."
            ) from None
        except (mcp.MCPError, ToolwireError):
            raise
        except mcp.InputRequiredRoundsExceededError:  # this request's, not the connection's
            raise ToolwireError(
                f"Server {name!r} kept asking for input past the rounds a client answers."
            ) from None
        except pydantic.ValidationError as exc:  # a malformed answer on a sound connection
            raise ToolwireError(
                f"Server {name!r} answered with a malformed result: {first_error(exc)}."
            ) from None
        except Exception as exc:  # the connection broke
            if server.client is client:
                raise ToolwireError(
                    self._down(server, describe_exception(exc, limit=DESCRIBED))
                ) from None
            raise ToolwireError(f"Server {name!r} became unavailable.") from None
        finally:
            server.limiter.release()

    async def subscribe(self, name: str, uri: str, *, on: bool = True) -> None:
        """Have server ``name`` tell of updates to resource ``uri`` (``on=False``: no longer),
        passed to the watchers (see [`watch_resources`][]): by ``resources/subscribe`` on a
        handshake-era connection, on the ``subscriptions/listen`` stream on a 2026-07-28 one
        (kept across reconnections there).

        Raises:
            ConfigurationError: the hub has no server ``name``.
            ToolwireError, MCPError: as [`send`][] does.
        """
        server = self._servers.get(name)
        if server is None:
            raise ConfigurationError(f"the hub has no server {name!r}")
        (server.subscriptions.add if on else server.subscriptions.discard)(uri)
        if server.protocol_version in _modern_versions():
            opened = server.listened = anyio.Event()
            server.relisten.set()
            if on:  # subscribed once the stream asking for it is open
                with anyio.move_on_after(server.spec.timeout):
                    await opened.wait()
        elif on:
            await self.send(name, lambda client: client.subscribe_resource(uri))
        else:
            await self.send(name, lambda client: client.unsubscribe_resource(uri))

    def watch_resources(self, watcher: Callable[[str, str], Awaitable[None]]) -> Callable[[], None]:
        """Have ``watcher(server, uri)`` awaited for each resource a server says was updated
        (``notifications/resources/updated``); returns what stops it."""
        self._watchers.append(watcher)
        return lambda: self._watchers.remove(watcher)

    async def _updated(self, server: ServerState, uri: Any) -> None:
        if not isinstance(uri, str):
            return
        for watcher in list(self._watchers):
            try:
                await watcher(server.name, uri)
            except Exception:  # a watcher's failure is its own: the others are told
                _log.exception("a resource watcher failed")

    def approve_definition(self, exposed_name: str) -> None:
        """Accept the current definition of a tool that needs approval because it is new or
        its definition changed (a "rug pull"); its calls then need no approval for that.

        Raises:
            ToolNotFound: no tool of the hub is exposed as ``exposed_name``.
        """
        tool = self.as_toolset()[exposed_name]
        assert tool.server_id is not None
        self._approved[(tool.server_id, tool.name)] = tool.definition_hash
        self._changed()

    async def _call(self, server: ServerState, name: str, /, **arguments: Any) -> ToolResult:
        client = server.client
        if client is None:
            return ToolResult.error(
                "unavailable", f"Server {server.name!r} is unavailable: {server.error}."
            )
        if client.protocol_version in _modern_versions():
            return await self._send(server, client, name, arguments, None)
        # A handshake-era session carries one client's calls at a time (see _owners).
        relay = relaying.get()
        owner = HUB if relay is None else relay.owner or f"call {next(self._calls)}"

        async def roots_changed() -> None:
            from mcp_types import RootsListChangedNotification

            try:
                await client.session.send_notification(RootsListChangedNotification())
            except Exception as exc:  # its connection broke: another client's call waits
                raise _NotTold from exc

        try:
            async with server.owners.turn(owner, roots_changed):
                return await self._send(server, client, name, arguments, owner)
        except _NotTold as exc:
            return self._lost(server, exc.__cause__ or exc)

    async def _send(
        self,
        server: ServerState,
        client: Any,
        name: str,
        arguments: dict[str, Any],
        owner: str | None,
    ) -> ToolResult:
        """One call sent to ``server`` on its connection ``client``, answered; ``owner``: whose
        call it is, on a handshake-era connection."""
        number = next(self._calls)
        relay = relaying.get()
        progress = CallProgress(
            server.spec.timeout,
            self.on_progress,
            server=server.name,
            tool=name,
            arguments=arguments,
            call_number=number,
            forward=relay.progress if relay is not None else None,
        )
        call = current_call.get()
        flight = InFlight(name, arguments, call, progress, relay=relay, owner=owner)
        # A call that waited for input continues its server's call, with the answers kept.
        resume = call.resume if call is not None else None
        await acquire(server.limiter)
        result = None
        server.in_flight[number] = flight
        sending = calling.set(flight)  # what the server's messages on the call's stream belong to
        try:
            with progress:  # the idle clock, from now: cancels the request if the server is quiet
                result = await call_with_input(
                    client,
                    server.name,
                    name,
                    arguments,
                    progress,
                    elicitor=self.elicitor,
                    flight=flight,
                    resume=resume,
                )
        except anyio.get_cancelled_exc_class():
            self._abandoned(server)  # past max_total_timeout, or the turn was cancelled
            raise
        except InputDeferred:
            raise  # the executor keeps the call waiting in its run
        except InputRefused as exc:
            return ToolResult.error("failed", f"Tool {exposed(server, name)!r} stopped: {exc}.")
        except Exception as exc:  # mapped to an answer; nothing leaks to the caller
            if flight.problem is not None and not progress.expired:
                # A question it asked could not be answered: that is why it failed.
                return stopped(server, name, flight.problem, None)
            if not progress.expired:
                failure = self._failure(server, name, exc)
                if relay is not None:  # the gateway answers its client with the same error
                    relay.protocol_error = protocol_error(exc)
                    if relay.keeps_rounds and relay.protocol_error is not None:
                        return keeping_error(failure, relay.protocol_error)
                return failure
        finally:
            calling.reset(sending)
            del server.in_flight[number]
            server.limiter.release()
        if result is None:  # the idle clock ran out
            self._abandoned(server)
            return ToolResult.error("timeout", progress.timed_out())
        # Its progress reports and log messages reach the hook and the gateway's client before
        # its answer does.
        await progress.handlers.drained(_DRAIN_SECONDS)
        answer = result_from_mcp(result)
        if flight.problem is not None:  # a question it asked could not be answered
            return stopped(server, name, flight.problem, answer.text[:DESCRIBED] or "nothing")
        schema = server.output_schemas.get(name)
        if schema is not None and not answer.is_error:
            problem = output_problem(server, name, schema, answer.structured_content)
            if problem is not None:
                return ToolResult.error(
                    "failed", f"Tool {exposed(server, name)!r} failed: {problem}"
                )
        return answer

    async def check(self, name: str) -> bool:
        """Probe server ``name`` with a ``tools/list`` request (every server answers it; the
        protocol's ping is gone from its newest revision): True when it answers within its
        ``probe_timeout``; one that doesn't (hung, or its connection broke) is marked down and
        reconnected.

        The hub checks a server this way by itself after one of its calls is abandoned.

        Raises:
            ConfigurationError: the hub has no server ``name``.
        """
        server = self._servers.get(name)
        if server is None:
            raise ConfigurationError(f"the hub has no server {name!r}")
        client = server.client
        try:
            if client is None:
                return False
            with anyio.fail_after(server.spec.probe_timeout):
                await client.list_tools()
            return True
        except Exception as exc:  # no answer in time, a broken connection, or garbage
            if server.client is client:
                reason = (
                    f"it did not answer a probe within {server.spec.probe_timeout:g} s"
                    if isinstance(exc, TimeoutError)
                    else describe_exception(exc, limit=DESCRIBED)
                )
                self._down(server, reason)
            return False

    def _abandoned(self, server: ServerState) -> None:
        """A call was given up (timed out or cancelled): a slow tool, or a hung server? A
        probe tells, off the call's path."""
        if self._tasks is not None and not server.checking:
            server.checking = True
            self._tasks.start_soon(self._check_after_abandoned_call, server)

    async def _check_after_abandoned_call(self, server: ServerState) -> None:
        try:
            await self.check(server.name)
        finally:
            server.checking = False

    def _failure(self, server: ServerState, name: str, exc: Exception) -> ToolResult:
        """The answer of a call that failed with ``exc``: the server's (see ``failure_of``),
        or, its connection broken, ``unavailable``."""
        answer = failure_of(server, name, exc)
        return answer if answer is not None else self._lost(server, exc)

    def _lost(self, server: ServerState, exc: BaseException) -> ToolResult:
        # A connection the authorization broke (its transport failed with the error the
        # call only sees as a closed connection): say why.
        refused = authorization_error(exc, server) or getattr(server.oauth, "failure", None)
        if isinstance(refused, AuthorizationError):
            server.authorization_error = refused
            return ToolResult.error("unavailable", self._down(server, str(refused)[:DESCRIBED]))
        return ToolResult.error(
            "unavailable", self._down(server, describe_exception(exc, limit=DESCRIBED))
        )

    def _down(self, server: ServerState, reason: str) -> str:
        """The server is down until the connection loop reconnects it; returns what to say."""
        message = f"Server {server.name!r} became unavailable: {reason}."
        server.broken = True
        server.client = None
        server.error = message
        self._changed()
        server.wake.set()
        return message


class _NotTold(Exception):
    """The server could not be told its client's roots changed: no other client's call may
    run on its session."""


def _modern_versions() -> tuple[str, ...]:
    """The revisions without the ``initialize`` handshake (2026-07-28 on), as the SDK has them."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return tuple(MODERN_PROTOCOL_VERSIONS)
