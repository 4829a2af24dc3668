"""toolwire as an MCP server: any ToolSet (or Hub, or tool source) served with the governed
executor in front.

``tools/list`` gives the visible function tools (exposed names, cleaned descriptions, the
original input schemas, annotations); ``tools/call`` runs through an
[`Executor`][toolwire.Executor] (validation, policy, approval, timeouts, output caps) and
answers with the result's content, structured content and ``isError``.

Approval of a call the policy asks about:

1. The call first runs without a run: a call the policy allows or denies never touches the run
   store (but the calls of a client that takes tasks: any of them may become a task, so each
   is kept in a run of its own; see ``toolwire.mcp.server._tasks``).
2. A call that needs approval runs again in a run of the ledger (``store``) whose id is
   derived from the principal, the tool and the arguments (``mcp-<digest>``), so the same
   call made again, from any connection or after a restart, finds the same run. Once that
   run's call is answered, the next identical call is a new call: it goes to the next
   generation of the run (``mcp-<digest>.2``, ``.3``...) and is asked about again.
3. Who decides is the operator's choice (``approve_by``). By default (``"ledger"``) a person
   decides it through the ledger (``toolwire decide``, the inbox): the client that made the
   call, whose model may be what answers its forms, is never asked to approve it. With
   ``approve_by="client"``, the decision is asked of the connected client by elicitation when
   it declared that capability (a yes/no form): pushed as an ``elicitation/create`` request on
   a handshake-era session, returned as an ``InputRequiredResult`` on a 2026-07-28 session (its
   ``requestState`` is sealed by the SDK's ``RequestStateBoundary``). The client's answer is
   recorded in the run as decided by the request's authenticated principal (``by="mcp-client"``
   when the gateway authenticates nobody), and the call runs.
4. Otherwise (or when the client dismisses the form, or the call's arguments are too long
   for a form to show them whole: a form never shows a cut call) the call is answered with
   an error that says it waits, with its run id and call id: decide it with
   ``toolwire.decide`` (or ``toolwire decide`` / the inbox) on the same store, and call the
   tool again with the same arguments to learn the decision (it runs once allowed). With a
   [`MemoryStore`][toolwire.store.MemoryStore] (the default) no other process can reach the
   run (nor with a SQLite ``:memory:`` database): the answer says so, and names only the form
   (if the client answers forms) or a shared store.

``tools/list`` leaves out the tools the policy denies outright for the principal (as
``toolwire.tools(policy=)`` does), and a call to one of them is answered as an unknown tool.

The principal is the gateway's own (``principal``), or, when it authenticates its clients
(``auth``, served over HTTP), each request's: the one its bearer token names. Then each client
is listed what its policy lets it call, its calls run for it, and its calls needing approval
are kept in runs of its own (the run id is derived from the principal too), so one client's
approved call is never completed by another's identical call.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import anyio

from toolwire._json import load_json
from toolwire.approval import (
    ApprovalPending,
    ApprovalRequest,
    Approver,
    Decision,
    DeferredApproval,
)
from toolwire.calls import ToolResult, canonical_json
from toolwire.errors import (
    ConfigurationError,
    MissingDependency,
    StoreUnavailable,
    ToolwireError,
)
from toolwire.mcp._bridge import Bridges, bridged_state
from toolwire.mcp._relay import (
    Relay,
    continuation_of,
    kept_error,
    owner_key,
    owner_of,
    relay_for,
    relaying,
    set_level,
)
from toolwire.mcp.client import Hub, arguments_digest
from toolwire.mcp.server._auth import Authentication, request_principal
from toolwire.mcp.server._forms import (
    FORM_SCHEMA,
    Console,
    decide_by_form,
    decision_of,
    fits_a_form,
    form_message,
    takes_urls,
    task_form,
    waits_for_approval,
)
from toolwire.mcp.server._names import CALL_ID, check_one_server, run_base, run_for
from toolwire.mcp.server._offers import Escalate, Offers
from toolwire.mcp.server._shapes import (
    GatewayServer,
    client_answer,
    error_result,
    gateway_version,
    mcp_result,
    mcp_tool,
    named_as_shown,
    served_kind,
)
from toolwire.mcp.server._tasks import (
    EXTENSION,
    TaskMethods,
    Tasks,
    TaskSettings,
    continued_task,
    declares_tasks,
    new_task_id,
    task_relay,
)
from toolwire.pipeline.executor import Executor
from toolwire.policy import Policy, warn_unmatched_rules
from toolwire.runs import ledger
from toolwire.runs.store import MemoryStore, RunStore, in_process
from toolwire.sources import named_tools
from toolwire.toolset import ToolSet, make_call

try:
    import mcp_types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
    from mcp.server.subscriptions import (
        InMemorySubscriptionBus,
        ListenHandler,
        PromptsListChanged,
        ResourcesListChanged,
        ToolsListChanged,
    )
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS
except ImportError as exc:  # pragma: no cover - the extra is installed in development
    raise MissingDependency("mcp", "mcp") from exc

__all__ = ["MCP_CLIENT", "Gateway", "run_base"]

_log = logging.getLogger("toolwire")

MCP_CLIENT = "mcp-client"
"""Who a decision answered by the client's elicitation form is recorded as made by when the
gateway authenticates nobody (an authenticating one records the client's principal)."""

APPROVERS = ("ledger", "client")
"""Who may decide a call the policy asks about (``approve_by``): a person through the ledger
only, or also the client that made the call."""

_INPUT_KEY = "toolwire_approval"
"""The key of the approval form in an ``InputRequiredResult``."""
_OWN: Any = object()
"""The gateway's own principal, as ``list_tools``' default."""
_BACKGROUND = "toolwire.background"
"""The key of the serving lifespan's task group in its state (``ctx.lifespan_context``)."""
_MAX_PRINCIPALS = 1024
"""How many principals' served toolsets (and executors) are kept; the oldest is made again
when it is needed."""


_Escalate = Escalate
"""The first pass met a call that needs approval: it runs again in a run of the ledger."""


class _Unauthenticated(ToolwireError):
    """A request to a gateway that authenticates its clients carries no principal (its
    server was reached around the HTTP layer that checks the tokens)."""


@dataclass(frozen=True)
class _Served:
    """What one principal is served: the toolset its policy lets it call, and the two
    executors its calls run through (see ``Gateway._build``)."""

    toolset: ToolSet
    names: dict[str, str]
    """Each tool's name for the client (its own, or its exposed name), to its exposed name."""
    direct: Executor
    ledgered: Executor


def _escalate(request: ApprovalRequest) -> Decision:
    raise _Escalate(request.exposed_name)


class Gateway:
    """A ToolSet served as an MCP server, every call through the governed executor.

    Args:
        toolset: the tools to serve (only function tools are listed).
        policy: which calls may run; every call may when None. A tool it denies outright
            for ``principal`` is not served (neither listed nor callable). A rule that matches
            none of the tools warns (``ToolwireWarning``, see ``warn_unmatched_rules``).
        store: the run ledger deferred approvals wait in; a bounded in-memory store by
            default (then only this process can decide them, and a waiting call's answer
            does not point the client at ``toolwire decide``).
        approver: asked first about a call the policy marks ``ask``; returning None (or no
            approver) defers to the ledger (and to the client's form, with
            ``approve_by="client"``).
        principal: who the gateway's calls run for (policies see it; runs are bound to it);
            with ``auth``, each client's token says instead.
        timeout: seconds a call may run (a tool's own ``timeout`` wins).
        approve_by: who decides a call the policy asks about: ``"ledger"`` (the default), a
            person through the run store (``toolwire decide``, the inbox), never the client
            that made the call; ``"client"``, also that client, by an approval form
            (elicitation), when it declared that capability.
        name: the server's name in the MCP handshake.
        hub: the [`Hub`][toolwire.mcp.Hub] ``toolset`` comes from, if any: the gateway then
            serves the hub's current tools (re-read on each request, so a tool whose
            definition changed upstream needs approval again, as the hub marks it), and tells
            its clients when the hub lists them again. Whatever the toolset, a hub's server's
            progress, log messages and questions for a call reach the client that made it
            (see ``toolwire.mcp._relay``).
        state_keys: the secrets that seal the ``requestState`` of a 2026-07-28 approval form
            (the first seals, every one unseals: a ring to rotate through). Gateways given the
            same keys (several workers behind one URL, or one restarted) take each other's
            forms' answers; without keys, a key of this process only.
        auth: how clients served over HTTP are authenticated: each request's calls then run
            for the principal its token names (see [`Authentication`][toolwire.mcp.Authentication]);
            a request that reaches the server without passing that check is refused.
        own_names: serve each tool under its own name (``search``), not its exposed name
            (``server__search``): a client sees the one server behind the gateway as that
            server names its tools. Only for tools of one server (or none): tools of several
            servers could share a name.
        tasks: how calls are served as MCP tasks to 2026-07-28 clients that declare the
            ``io.modelcontextprotocol/tasks`` extension (see ``toolwire.mcp.server._tasks``): a call
            the policy asks about, one still running after ``TaskSettings.after`` seconds, or
            one of a tool its server requires tasks for, kept in ``store``; None serves no
            tasks.
        console: the URL of the approval console (``toolwire inbox``) on ``store``: a call
            waiting for a person's decision is answered with its page there, sent as a
            URL-mode elicitation to a client that declared those (an ``InputRequiredResult``
            on a 2026-07-28 session, the ``URL_ELICITATION_REQUIRED`` error on an older one),
            else in the text of its answer, and a task waiting names it in its status. The
            console asks who decides: following the URL approves nothing by itself.
        executor_options: more [`Executor`][toolwire.Executor] options (``max_output_chars``,
            ``approval_ttl``, ``redact``...).

    Raises:
        ConfigurationError: a bad option, or both ``principal`` and ``auth``.
    """

    def __init__(
        self,
        toolset: ToolSet,
        *,
        policy: Policy | None = None,
        store: RunStore | None = None,
        approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
        principal: Any = None,
        timeout: float | None = None,
        approve_by: Literal["ledger", "client"] = "ledger",
        name: str = "toolwire",
        hub: Hub | None = None,
        state_keys: Sequence[str | bytes] | None = None,
        auth: Authentication | None = None,
        own_names: bool = False,
        tasks: TaskSettings | None = TaskSettings(),  # noqa: B008 - frozen, never changed
        console: str | None = None,
        **executor_options: Any,
    ) -> None:
        if auth is not None and principal is not None:
            raise ConfigurationError(
                "principal and auth cannot both be given: with auth, each client's token names "
                "the principal its calls run for"
            )
        if approve_by not in APPROVERS:
            raise ConfigurationError(f"approve_by is 'ledger' or 'client', not {approve_by!r}")
        if "elicit" in executor_options:  # what chose whether the client approved, before
            raise ConfigurationError(
                "elicit is replaced by approve_by: 'ledger' (the default: a person decides) or "
                "'client' (the client that made the call may approve it in a form)"
            )
        if tasks is not None and not isinstance(tasks, TaskSettings):
            raise ConfigurationError("tasks is a toolwire.mcp.TaskSettings, or None")
        if own_names:
            check_one_server(toolset, hub)
        self.own_names = own_names
        self.console = Console(console) if console is not None else None
        if state_keys is not None and (
            isinstance(state_keys, str | bytes)
            or not state_keys
            or not all(isinstance(key, str | bytes) and key for key in state_keys)
        ):
            raise ConfigurationError("state_keys is a non-empty list of non-empty secrets")
        self._state_keys = list(state_keys) if state_keys is not None else None
        self.store: RunStore = store if store is not None else MemoryStore()
        self.principal = principal
        self.auth = auth
        self.approve_by = approve_by
        self.name = name
        # Followed only when serving the hub's own toolset: a filtered one stays as it is.
        self._hub = hub if hub is not None and hub.as_toolset() is toolset else None
        self._upstreams = hub  # whose servers' revisions say how their questions are asked
        self._bridges = Bridges()
        self._approver = approver or DeferredApproval()
        self._policy = policy
        self._options = {"policy": policy, "timeout": timeout, **executor_options}
        self._use(ToolSet.of(toolset))
        if policy is not None:  # a rule written for these tools that names none of them says so
            warn_unmatched_rules(policy, named_tools(self._source, self._hub), "gateway")
        self._calls: set[anyio.CancelScope] = set()
        self._bus = InMemorySubscriptionBus()
        self._tasks = (
            Tasks(
                self.store,
                tasks,
                form=functools.partial(task_form, asks=approve_by == "client"),
                answer=mcp_result,
                decide=functools.partial(decide_by_form, self.store),
                resume=self._resumed,
                keys=self._state_keys,
                console=self.console.page if self.console is not None else None,
            )
            if tasks is not None
            else None
        )
        # The handshake-era connections served, told when the listing changes (by connection).
        self._sessions: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()
        self._offers = Offers(
            hub,
            policy=policy,
            own_names=own_names,
            executors=self._executors,
            run_for=functools.partial(run_for, self.store),
            store=self.store,
            bus=self._bus,
            console=self.console,
        )

    @property
    def elicit(self) -> bool:
        """Whether the client that made a call may approve it by a form (``approve_by``)."""
        return self.approve_by == "client"

    def _use(self, toolset: ToolSet) -> None:
        self._source = toolset
        own = self._build(self.principal)
        self._by_principal: dict[str, _Served] = {ledger.principal_key(self.principal): own}
        self.toolset = own.toolset  # what the gateway's own principal is served

    def _build(self, principal: Any) -> _Served:
        # What the policy lets the principal call, as toolwire.tools(policy=) declares it: a
        # tool it denies outright is neither listed nor callable (a call to it is unknown).
        toolset, policy = self._source, self._policy
        denied = [
            name
            for name, tool in zip(toolset.exposed_names, toolset, strict=True)
            if policy is not None
            and policy.denies_outright(tool, principal=principal, exposed_name=name) is not None
        ]
        toolset = toolset.without(denied)
        # The name each served tool goes by for the client, and back.
        names = {
            (t.name if self.own_names else toolset.exposed_name(t)): toolset.exposed_name(t)
            for t in toolset
            if served_kind(t)
        }
        return _Served(toolset, names, *self._executors(toolset))

    def _executors(self, toolset: ToolSet) -> tuple[Executor, Executor]:
        """Two executors of ``toolset``, one policy: the first never keeps a run, the second
        keeps calls that need approval in the ledger."""
        return (
            Executor(toolset, approver=_escalate, store=MemoryStore(), **self._options),
            Executor(toolset, approver=self._approver, store=self.store, **self._options),
        )

    def _for(self, principal: Any) -> _Served:
        """What ``principal`` is served now (the hub's current tools, when it changed)."""
        if self._hub is not None:
            latest = self._hub.as_toolset()
            if latest is not self._source:
                self._use(latest)
        key = ledger.principal_key(principal)
        served = self._by_principal.get(key)
        if served is None:
            if len(self._by_principal) >= _MAX_PRINCIPALS:
                del self._by_principal[next(iter(self._by_principal))]
            served = self._by_principal[key] = self._build(principal)
        return served

    def principal_of(self, ctx: ServerRequestContext[Any]) -> Any:
        """Who a request's calls run for: the gateway's ``principal``, or, with ``auth``,
        the principal the request's token names.

        Raises:
            ToolwireError: with ``auth``, a request that was not authenticated.
        """
        if self.auth is None:
            return self.principal
        authenticated, principal = request_principal(ctx.request)
        if not authenticated:
            raise _Unauthenticated("the request was not authenticated")
        return principal

    # -- the MCP server ---------------------------------------------------------------------

    def server(self) -> Server[Any]:
        """A low-level MCP ``Server`` answering ``tools/list`` and ``tools/call`` (and, with a
        hub, its servers' resources, prompts and completions: see ``_offers``)."""

        async def list_tools(
            ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
        ) -> types.ListToolsResult:
            try:
                principal = self.principal_of(ctx)
            except _Unauthenticated:
                return types.ListToolsResult(tools=[])
            modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
            return types.ListToolsResult(tools=self.list_tools(principal, modern=modern))

        async def call_tool(
            ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
        ) -> Any:
            return await self.call_tool(ctx, params)

        async def set_logging_level(
            ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
        ) -> types.EmptyResult:
            set_level(ctx, params.level)
            return types.EmptyResult()

        server: Server[Any] = GatewayServer(
            self.name,
            version=gateway_version(),
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            # 2026-07-28 clients hear of a changed listing on subscriptions/listen streams.
            on_subscriptions_listen=self._offers.listening(
                ListenHandler(self._bus), self.principal_of
            )
            if self._upstreams is not None
            else ListenHandler(self._bus),
            lifespan=self._announcing,
        )
        # Handshake-era clients set the level of the log messages they get (2026-07-28 ones
        # ask per request: the SDK serves the method to the older revisions only).
        server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, set_logging_level
        )
        if self._upstreams is not None:
            self._offers.serve(server, self.principal_of)
        if self._tasks is not None:
            self._serve_tasks(server)
        server.middleware.append(self._remember_session)
        # requestState round-trips through the client: sealed, so it cannot be forged.
        security = (
            RequestStateSecurity(keys=self._state_keys)
            if self._state_keys is not None
            else RequestStateSecurity.ephemeral()
        )
        if self.auth is not None:  # a form's state is answered only by the client it went to
            security.bind_principal = self._bound_principal
        server.middleware.append(RequestStateBoundary(security, default_audience=self.name))
        return server

    def _bound_principal(self, ctx: ServerRequestContext[Any]) -> str | None:
        authenticated, principal = request_principal(ctx.request)
        return ledger.principal_key(principal) if authenticated else None

    @contextlib.asynccontextmanager
    async def _announcing(self, server: Any) -> AsyncIterator[dict[str, Any]]:
        """While a server made by [`server`][] runs: tell its clients when the hub's listing
        changes (``notifications/tools/list_changed``), run its tasks, and the calls kept
        waiting for their clients' answers (``_BACKGROUND``)."""
        async with contextlib.AsyncExitStack() as running:
            if self._tasks is not None:
                await running.enter_async_context(self._tasks.running())
            if self._upstreams is not None:
                running.callback(self._upstreams.watch_resources(self._offers.updated))
            async with anyio.create_task_group() as tasks:
                if self._hub is not None:
                    tasks.start_soon(self._announce_changes, self._hub)
                try:
                    yield {_BACKGROUND: tasks}
                finally:
                    tasks.cancel_scope.cancel()

    async def _announce_changes(self, hub: Hub) -> None:
        while True:
            await hub.listing_changed()
            for event in (ToolsListChanged(), ResourcesListChanged(), PromptsListChanged()):
                await self._bus.publish(event)  # 2026-07-28 listen streams
            for connection, session in list(self._sessions.items()):
                try:
                    await session.send_tool_list_changed()
                    await session.send_resource_list_changed()
                    await session.send_prompt_list_changed()
                except Exception:  # a connection gone: it is not told again
                    self._sessions.pop(connection, None)

    async def _remember_session(self, ctx: ServerRequestContext[Any], call_next: Any) -> Any:
        """Middleware: keep each handshake-era connection's session, to tell it of changes."""
        connection = getattr(ctx.session, "_connection", None)
        if connection is not None and ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._sessions[connection] = ctx.session
        return await call_next(ctx)

    def _refusals(self, principal: Any) -> Callable[[str, str], str | None]:
        """Why the policy refuses ``kind`` requests from ``server``, for ``principal``."""
        policy = self._policy

        def refuses(server: str, kind: str) -> str | None:
            if policy is None:
                return None
            return policy.refuses_request(server, kind, principal=principal)

        return refuses

    def list_tools(self, principal: Any = _OWN, *, modern: bool = True) -> list[types.Tool]:
        """The served tools as MCP tools, in the toolset's order: those the policy does not
        deny ``principal`` (by default the gateway's own) outright, as a client of a
        2026-07-28 session (``modern``) or a handshake-era one is shown them."""
        if principal is _OWN:
            principal = self.principal
        served = self._for(principal)
        shown = {exposed: name for name, exposed in served.names.items()}
        hub = self._upstreams
        return [
            mcp_tool(
                shown[name],
                t,
                meta=hub.listed_meta(t) if hub is not None else None,
                task_support=hub.task_support(t) if hub is not None else None,
                modern=modern,
            )
            for name, t in zip(served.toolset.exposed_names, served.toolset, strict=True)
            if name in shown
        ]

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> Any:
        """Answer one ``tools/call`` (see the module docstring for approvals and tasks): a
        ``CallToolResult``, an ``InputRequiredResult``, or a task's CreateTaskResult."""
        try:
            principal = self.principal_of(ctx)
        except _Unauthenticated:
            return error_result("The call was refused: the request was not authenticated.")
        served = self._for(principal)
        exposed = served.names.get(params.name)
        tool = served.toolset.get(exposed) if exposed is not None else None
        if tool is None or exposed is None:
            return error_result(f"Unknown tool {params.name!r}.")
        shown, params = params.name, params.model_copy(update={"name": exposed})
        arguments = dict(params.arguments or {})
        required = self._hub is not None and self._hub.task_support(tool) == "required"
        if self._tasks is not None and self._tasks.available and declares_tasks(ctx):
            return await self._call_as_task(ctx, params, arguments, served, principal, required)
        if required and self._tasks is not None:
            raise MCPError(
                code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
                message=f"the tool {shown} runs only as a task: declare {EXTENSION}",
                data={"requiredCapabilities": {"extensions": {EXTENSION: {}}}},
            )
        with anyio.CancelScope() as call:
            self._calls.add(call)
            try:
                answer = await self._call(ctx, params, arguments, served, principal)
                return named_as_shown(answer, exposed, shown)
            except StoreUnavailable as exc:  # its run's store failed: said, never a traceback
                return error_result(f"The call could not run: {exc}")
            finally:
                self._calls.discard(call)
        return error_result(  # ended by end_calls: the gateway stops
            f"The gateway stopped before the call {params.name} finished: it may or may not "
            "have taken effect."
        )

    def end_calls(self) -> None:
        """End the calls in progress (the gateway stops): each is answered that it was
        interrupted, while its client can still be answered."""
        for call in list(self._calls):
            call.cancel()

    async def _call(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        arguments: dict[str, Any],
        served: _Served,
        principal: Any,
    ) -> types.CallToolResult | types.InputRequiredResult:
        direct = served.direct  # this request's, if the hub changes
        call = make_call(direct.toolset, params.name, arguments, call_id=CALL_ID)
        digest = arguments_digest(arguments)
        key = ledger.principal_key(principal)
        owner = owner_of(ctx, key)
        same_call = [params.name, digest]
        relay = relay_for(ctx, self._refusals(principal), owner=owner)
        relay.continuation = continuation_of(params, digest, own_keys=frozenset({_INPUT_KEY}))
        background = self._background(ctx)
        try:
            if bridged_state(params) is not None:  # its answer to a kept call's request
                answer: Any = await self._bridges.resume(params, key, same_call)
            elif background is not None and relay.modern and self._asks_within(call.tool):
                # Its server asks within the call, and this client can be asked only in the
                # answer to it: the call runs on while it is (see toolwire.mcp._bridge).
                work = functools.partial(self._run, direct, call, relay, principal, digest)
                answer = await self._bridges.call(background, work, key, same_call, self._track)
            else:
                answer = await self._run(direct, call, relay, principal, digest, None)
            return cast("types.CallToolResult | types.InputRequiredResult", answer)
        except _Escalate:
            pass
        except ToolwireError as exc:
            return error_result(f"The call could not run: {exc}")
        # Kept in a run: its answer is stored, so a round is not handed back to the client.
        relay = relay_for(ctx, self._refusals(principal), pass_back=False, owner=owner)
        token = relaying.set(relay)
        try:
            return await self._call_approved(ctx, params, call, relay, served, principal)
        finally:
            relaying.reset(token)

    async def _run(
        self,
        direct: Executor,
        call: Any,
        relay: Relay,
        principal: Any,
        digest: str,
        bridge: Callable[[Any], Awaitable[Any]] | None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A call run without a run of the ledger, its upstream's requests passed on by
        ``relay`` (and ``bridge``, for a 2026-07-28 client asked in the answer to its call).

        Raises:
            _Escalate: the call needs approval.
            ToolwireError: it could not run.
            MCPError: the upstream's error for the call.
        """
        relay.bridge = bridge
        token = relaying.set(relay)  # what the hub's call of an upstream server reads
        try:
            (outcome,) = await direct.run([call], principal=principal)
            return client_answer(outcome.result, relay, call.exposed_name, digest)
        finally:
            relaying.reset(token)

    def _asks_within(self, tool: Any) -> bool:
        """Whether ``tool``'s server may ask within the call (an upstream of the hub that speaks
        a handshake-era revision)."""
        hub, server = self._upstreams, getattr(tool, "server_id", None)
        if hub is None or server is None or server not in hub.status:
            return False
        version = hub.protocol_version(server)
        return version is not None and version not in MODERN_PROTOCOL_VERSIONS

    def _background(self, ctx: ServerRequestContext[Any]) -> Any:
        """The task group calls kept waiting for their client run in (the serving lifespan's),
        or None."""
        state = ctx.lifespan_context
        return state.get(_BACKGROUND) if isinstance(state, dict) else None

    def _track(self, scope: anyio.CancelScope) -> Callable[[], None]:
        """End ``scope`` with the calls in progress when the gateway stops."""
        self._calls.add(scope)
        return lambda: self._calls.discard(scope)

    async def _call_approved(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        call: Any,
        relay: Relay,
        served: _Served,
        principal: Any,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The call the policy asks about, kept in its run: decided, then run."""
        ledgered = served.ledgered
        arguments = dict(call.arguments)
        digest = arguments_digest(arguments)
        run_id = await run_for(self.store, params.name, arguments, principal)
        answered = await self._answer_from_input(ctx, params, run_id, principal)
        try:
            (outcome,) = await ledgered.run([call], run_id=run_id, principal=principal)
            return client_answer(outcome.result, relay, params.name, digest)
        except ApprovalPending as pending:
            request = pending.pending[0]
        except ToolwireError as exc:  # e.g. the store is down: the client is told, not crashed
            return error_result(f"The call could not run: {exc}")
        if not answered and self.elicit:
            asked = await self._ask_client(ctx, request)
            if isinstance(asked, types.InputRequiredResult):
                return asked
            if asked is not None and await self._record(request, asked, principal):
                try:
                    (outcome,) = await ledgered.run([call], run_id=run_id, principal=principal)
                    return client_answer(outcome.result, relay, params.name, digest)
                except ApprovalPending:
                    pass
                except ToolwireError as exc:
                    return error_result(f"The call could not run: {exc}")
        return self._waiting(ctx, request)

    # -- runs -------------------------------------------------------------------------------

    async def _record(self, request: ApprovalRequest, decision: Decision, principal: Any) -> bool:
        """Record the client's decision, as made by the authenticated ``principal`` of the
        request that answered (``MCP_CLIENT`` without authentication, when nobody is known);
        False when the call no longer waits for one."""
        by = self._answerer(principal)
        try:
            await ledger.decide(self.store, request.run_id, request.call_id, decision, by=by)
        except ToolwireError:  # decided meanwhile (e.g. from the inbox): the run knows
            return False
        return True

    def _waiting(
        self, ctx: ServerRequestContext[Any], request: ApprovalRequest
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The answer to a call left waiting for a decision (see ``waits_for_approval``): with
        a console, its page, sent as a URL-mode elicitation to a client that takes them.

        Raises:
            MCPError: ``URL_ELICITATION_REQUIRED``, for a handshake-era client that takes them.
        """
        if not self.elicit:
            no_form: str | None = (
                "the gateway asks no client approval forms (elicitation): its calls are "
                "approved through the ledger"
            )
        elif not self._can_elicit(ctx):
            no_form = "this client does not answer approval forms (elicitation)"
        elif not fits_a_form(request):
            no_form = "its arguments are too long for an approval form to show them whole"
        else:
            no_form = None
        subject, again = f"The call {request.exposed_name}", "make the same call again"
        console = self.console
        if console is not None and takes_urls(ctx.session.client_capabilities):
            if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
                raise console.required(request, subject)
            url = types.ElicitRequest(params=console.elicitation(request, subject))
            state = canonical_json({"run": request.run_id, "call": request.call_id})
            return types.InputRequiredResult(input_requests={_INPUT_KEY: url}, request_state=state)
        shared = not in_process(self.store)
        text = waits_for_approval(request, subject, again, shared_store=shared, no_form=no_form)
        return error_result(text + (console.said(request) if console is not None else ""))

    # -- asking the client ------------------------------------------------------------------

    def _can_elicit(self, ctx: ServerRequestContext[Any]) -> bool:
        capabilities = ctx.session.client_capabilities
        return self.elicit and capabilities is not None and capabilities.elicitation is not None

    async def _ask_client(
        self, ctx: ServerRequestContext[Any], request: ApprovalRequest
    ) -> Decision | types.InputRequiredResult | None:
        """The client's decision by its elicitation form, an ``InputRequiredResult`` carrying
        the form (2026-07-28 sessions), or None when it cannot or will not decide."""
        if not self._can_elicit(ctx) or not fits_a_form(request):
            return None
        message = form_message(request)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            form = types.ElicitRequest(
                params=types.ElicitRequestFormParams(message=message, requested_schema=FORM_SCHEMA)
            )
            state = canonical_json({"run": request.run_id, "call": request.call_id})
            return types.InputRequiredResult(input_requests={_INPUT_KEY: form}, request_state=state)
        if not ctx.session.can_send_request:
            return None
        try:
            answer = await ctx.session.elicit_form(
                message, FORM_SCHEMA, related_request_id=ctx.request_id
            )
        except Exception:  # the client failed to answer: the call waits in the ledger
            return None
        return decision_of(answer)

    async def _answer_from_input(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        run_id: str,
        principal: Any,
    ) -> bool:
        """Record the answer a 2026-07-28 client retried the call with; True when it carried
        one for this run (a dismissed form included). A gateway that lets no client approve
        (``approve_by="ledger"``) takes no form's answer, whatever the request carries."""
        if not self.elicit or params.request_state is None or not params.input_responses:
            return False
        state = load_json(params.request_state)
        if state != {"run": run_id, "call": CALL_ID}:
            return False  # another call's state, or an older generation's
        answer = params.input_responses.get(_INPUT_KEY)
        if not isinstance(answer, types.ElicitResult):
            return False
        decision = decision_of(answer)
        if decision is not None:
            request = ApprovalRequest(
                run_id=run_id,
                call_id=CALL_ID,
                tool=None,
                exposed_name=params.name,
                arguments={},
                principal=principal,
                reason=None,
            )
            await self._record(request, decision, principal)
        return True

    # -- tasks (see toolwire.mcp.server._tasks) -----------------------------------------------

    def _serve_tasks(self, server: Server[Any]) -> None:
        """Declare the tasks extension and serve its methods (to 2026-07-28 clients that
        declare it: others are told it is a capability they lack)."""
        assert self._tasks is not None
        TaskMethods(self._tasks, self.principal_of, self._can_elicit, self._answerer).serve(server)

    async def _call_as_task(
        self,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        arguments: dict[str, Any],
        served: _Served,
        principal: Any,
        required: bool,
    ) -> Any:
        assert self._tasks is not None
        form = self._can_elicit(ctx)
        continued = continued_task(params.request_state)
        try:
            if continued is not None and self._tasks.live(continued, principal) is not None:
                answer = await self._tasks.answered(
                    continued,
                    params.input_responses or {},
                    principal,
                    by=self._answerer(principal),
                    required=required,
                    form=form,
                )
            elif (busy := self._tasks.refusal(principal)) is not None:
                return error_result(f"The call was refused: {busy}; try again once some end.")
            else:
                task_id = new_task_id(principal)
                call = make_call(served.ledgered.toolset, params.name, arguments, call_id=CALL_ID)
                owner = owner_of(ctx, ledger.principal_key(principal))
                relay = task_relay(
                    relay_for(ctx, self._refusals(principal), pass_back=False, owner=owner)
                )
                answer = await self._tasks.call(
                    task_id,
                    call,
                    principal,
                    served.ledgered,
                    relay,
                    required=required,
                    form=form,
                    # A tool that needs a task gathers its input first, in the call (MRTR);
                    # any other call's question makes it a task, the question kept in its run.
                    hand_back=required and "elicitation" in relay.capabilities,
                )
        except ToolwireError as exc:  # the store is down, say
            return error_result(f"The call could not run: {exc}")
        if isinstance(answer, ToolResult):
            error = kept_error(answer)
            if error is not None:
                raise MCPError(code=error["code"], message=error["message"], data=error.get("data"))
            return mcp_result(answer)
        return answer

    def _answerer(self, principal: Any) -> Any:
        """Who a client's answer (a decision, a question's answer) is recorded as given by:
        its authenticated principal, or ``MCP_CLIENT`` when the gateway authenticates
        nobody."""
        return principal if self.auth is not None else MCP_CLIENT

    def _resumed(self, task_id: str, request: ApprovalRequest) -> Any:
        """A kept task's call, rebuilt from its kept request to run it again in its run."""
        principal = request.principal
        served = self._for(principal)
        if served.toolset.get(request.exposed_name) is None:
            return None
        call = make_call(
            served.ledgered.toolset, request.exposed_name, dict(request.arguments), call_id=CALL_ID
        )
        relay = Relay(
            capabilities={"elicitation": {"form": {}}},
            modern=True,
            refuses=self._refusals(principal),
            owner=owner_key(ledger.principal_key(principal), f"task {task_id}"),
            pass_back=False,
            keeps_rounds=True,
        )
        return call, principal, served.ledgered, relay
