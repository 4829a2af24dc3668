"""What the gateway serves of its hub's servers besides tools: resources, resource templates,
prompts and completions, each read and get governed as a call.

Names. A prompt is served as a tool is: ``server__prompt`` (its own name with ``own_names``).
A resource keeps its URI, which is its identity: the server's own content names it (links,
embedded resources), so a changed URI would point nowhere. A read goes to the server that
lists the URI, else to the one whose template matches it (only for a plain URI: no
percent-encoding, no dot segments, which the SDK's template matching would decode into
another resource than the one judged); a URI two servers offer is refused as ambiguous
rather than guessed, before the policy is asked.

Governance. Each read is a call of a tool of its own, ``Tool(name=uri, server_id=server,
entity="resource")``, and each get one of ``Tool(name=prompt, entity="prompt")`` whose
arguments are the prompt's (strings; the declared ones only): they run through the same two
executors as tool calls, so a policy allows, asks about or denies them by
``Rule(kind="resource")`` or ``Rule(kind="prompt")`` (canonical identity ``server/URI``,
``server/prompt``), an ``ask`` waits in the ledger like a call (decided with
``toolwire decide``, then asked again), a deny is final, and the listing leaves out what the
policy denies the principal outright. Both kinds are read-only by the protocol, so
``destructive="ask"`` asks about neither; a completion only suggests argument values, and is
answered for what the principal may use.

Errors are JSON-RPC errors, as the protocol has them: the server's own error as it said it,
``-32602`` for an unknown URI or prompt and for arguments that do not fit, ``-32600`` for a
read or get denied or waiting for approval (the message says which, with the run to decide),
``-32603`` when the server is down or did not answer.
"""

from __future__ import annotations

import contextlib
import dataclasses
import weakref
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolwire.approval import ApprovalPending
from toolwire.calls import ToolResult
from toolwire.errors import ToolwireError
from toolwire.mcp.client import MAX_URI, Catalog, Hub
from toolwire.mcp.server._forms import Console, waits_for_approval
from toolwire.mcp.server._names import CALL_ID
from toolwire.pipeline.executor import Executor
from toolwire.policy import Policy
from toolwire.runs.store import RunStore, in_process
from toolwire.tool import Entity, Tool, exposed_name_for
from toolwire.toolset import ToolSet, make_call

__all__ = ["Offers"]

_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False}
"""What a read and a get are, by the protocol (so ``destructive="ask"`` spares them)."""
_RESULT = "result"
"""The key the server's whole answer is kept under, in the call's structured content."""
_R = TypeVar("_R", types.ReadResourceResult, types.GetPromptResult)
MAX_PROMPT_NAME = 256
"""Characters of a prompt's name looked up at most."""
_MESSAGE = 1000
"""Characters of an error's message passed on at most."""
MAX_STREAM_URIS = 256
"""Resources one ``subscriptions/listen`` stream is subscribed to at most."""


class Escalate(ToolwireError):
    """The first pass met a call (a tool call, a read, a get) that needs approval: it runs
    again in a run of the ledger."""


Executors = Callable[[ToolSet], tuple[Executor, Executor]]
"""The two executors of a toolset: the one that keeps no run, and the ledgered one."""
RunFor = Callable[[str, Mapping[str, Any], Any], Awaitable[str]]
"""The run a call needing approval belongs to, by its name, arguments and principal."""


@dataclass(frozen=True)
class _Target:
    """Where one read or get goes: the server, the name it knows the thing by, and the tool
    that stands for it."""

    server: str
    name: str
    tool: Tool


class Offers:
    """A hub's resources, templates, prompts and completions, for one gateway."""

    def __init__(
        self,
        hub: Hub | None,
        *,
        policy: Policy | None,
        own_names: bool,
        executors: Executors,
        run_for: RunFor,
        store: RunStore,
        bus: InMemorySubscriptionBus,
        console: Console | None = None,
    ) -> None:
        self.hub = hub
        self._policy = policy
        self._own_names = own_names
        self._executors = executors
        self._run_for = run_for
        self._store = store
        self._bus = bus
        self._console = console
        # Who is subscribed to each resource, by (server, URI): each connection (while it
        # lasts), with the session that tells it.
        self._subscribers: dict[tuple[str, str], weakref.WeakKeyDictionary[Any, Any]] = {}

    def serve(self, server: Any, principal_of: Callable[[Any], Any]) -> None:
        """Answer the methods of resources, prompts and completion on the SDK's low-level
        ``server``, for the principal ``principal_of(ctx)`` names (a ``ToolwireError``: the
        request was not authenticated)."""

        def principal(ctx: Any) -> Any:
            try:
                return principal_of(ctx)
            except ToolwireError:
                raise MCPError(
                    code=types.INVALID_REQUEST, message="The request was not authenticated."
                ) from None

        async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
            return types.ListResourcesResult(resources=self.resources(principal(ctx)))

        async def list_templates(ctx: Any, params: Any) -> types.ListResourceTemplatesResult:
            templates = self.templates(principal(ctx))
            return types.ListResourceTemplatesResult(resource_templates=templates)

        async def read(ctx: Any, params: types.ReadResourceRequestParams) -> Any:
            return await self.read(params.uri, principal(ctx), _round(ctx, params))

        async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
            return types.ListPromptsResult(prompts=self.prompts(principal(ctx)))

        async def get(ctx: Any, params: types.GetPromptRequestParams) -> Any:
            round_ = _round(ctx, params)
            return await self.get(params.name, params.arguments, principal(ctx), round_)

        async def complete(ctx: Any, params: types.CompleteRequestParams) -> Any:
            return await self.complete(params, principal(ctx))

        async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
            await self.subscribe(_connection(ctx), ctx.session, params.uri, principal(ctx))
            return types.EmptyResult()

        async def unsubscribe(
            ctx: Any, params: types.UnsubscribeRequestParams
        ) -> types.EmptyResult:
            await self.unsubscribe(_connection(ctx), params.uri)
            return types.EmptyResult()

        for method, params_type, handler in (
            ("resources/list", types.PaginatedRequestParams, list_resources),
            ("resources/templates/list", types.PaginatedRequestParams, list_templates),
            ("resources/read", types.ReadResourceRequestParams, read),
            ("resources/subscribe", types.SubscribeRequestParams, subscribe),
            ("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe),
            ("prompts/list", types.PaginatedRequestParams, list_prompts),
            ("prompts/get", types.GetPromptRequestParams, get),
            ("completion/complete", types.CompleteRequestParams, complete),
        ):
            server.add_request_handler(method, params_type, cast(Any, handler))

    def _catalogs(self) -> dict[str, Catalog]:
        return self.hub.catalogs() if self.hub is not None else {}

    def _shown(self, server: str, name: str) -> str:
        return name if self._own_names else exposed_name_for(name, server)

    def _usable(self, tool: Tool, principal: Any) -> bool:
        policy = self._policy
        return policy is None or policy.denies_outright(tool, principal=principal) is None

    # -- listings ---------------------------------------------------------------------------

    def resources(self, principal: Any) -> list[types.Resource]:
        return [
            resource
            for server, catalog in self._catalogs().items()
            for resource in catalog.resources
            if self._usable(_read_tool(server, resource.uri), principal)
        ]

    def templates(self, principal: Any) -> list[types.ResourceTemplate]:
        return [
            template
            for server, catalog in self._catalogs().items()
            for template in catalog.templates
            if self._usable(_read_tool(server, template.uri_template), principal)
        ]

    def prompts(self, principal: Any) -> list[types.Prompt]:
        return [
            prompt.model_copy(update={"name": self._shown(server, prompt.name)})
            for server, catalog in self._catalogs().items()
            for prompt in catalog.prompts
            if self._usable(_prompt_tool(server, prompt), principal)
        ]

    # -- reads and gets ---------------------------------------------------------------------

    def _resource(self, uri: Any, principal: Any) -> _Target:
        """Where a read of ``uri`` goes.

        Raises:
            MCPError: the URI is malformed, offered by no server (or none the principal may
                read), or by several.
        """
        if not isinstance(uri, str) or not uri or len(uri) > MAX_URI:
            raise MCPError(code=types.INVALID_PARAMS, message="The resource URI is malformed.")
        catalogs = self._catalogs()
        listing = [s for s, c in catalogs.items() if any(r.uri == uri for r in c.resources)]
        if not listing and not _plain(uri):
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"The resource URI {_shown_text(uri)} is not plain: a URI no server "
                "lists is read through a template only without percent-encoding and dot "
                "segments (which a template would read as another resource than the policy "
                "judged).",
            )
        servers = listing or [s for s, c in catalogs.items() if c.offers(uri)]
        if len(servers) > 1:  # judged before the policy: a deny never moves a read elsewhere
            names = ", ".join(sorted(servers))
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"The resource {_shown_text(uri)} is offered by several servers ({names}).",
            )
        targets = [_Target(s, uri, _read_tool(s, uri)) for s in servers]
        targets = [t for t in targets if self._usable(t.tool, principal)]
        if not targets:
            raise MCPError(
                code=types.INVALID_PARAMS,
                message=f"Resource not found: {_shown_text(uri)}.",
                data={"uri": uri},
            )
        return targets[0]

    def _prompt(self, name: Any, principal: Any) -> _Target:
        """Where a get of the prompt shown as ``name`` goes.

        Raises:
            MCPError: no such prompt the principal may get.
        """
        if isinstance(name, str) and 0 < len(name) <= MAX_PROMPT_NAME:
            for server, catalog in self._catalogs().items():
                for prompt in catalog.prompts:
                    if self._shown(server, prompt.name) == name:
                        target = _Target(server, prompt.name, _prompt_tool(server, prompt))
                        if self._usable(target.tool, principal):
                            return target
        shown = _shown_text(name) if isinstance(name, str) else "(not a name)"
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt {shown}.")

    async def read(
        self, uri: Any, principal: Any, round_: Round | None = None
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """``resources/read`` of ``uri`` for ``principal``, governed as a call; with
        ``round_`` (a 2026-07-28 client's request), the server's ``InputRequiredResult`` is
        handed to the client, whose retry continues the server's round.

        Raises:
            MCPError: see the module docstring.
        """
        target = self._resource(uri, principal)

        def request(client: Any) -> Awaitable[Any]:
            if round_ is None:  # the hub's client answers any round itself
                return cast(Awaitable[Any], client.read_resource(target.name))
            return cast(
                Awaitable[Any],
                client.session.read_resource(
                    target.name,
                    input_responses=round_.responses,
                    request_state=round_.state,
                    allow_input_required=True,
                ),
            )

        answer = await self._governed(target, {}, principal, request)
        return _answer(answer, types.ReadResourceResult)

    async def get(
        self,
        name: Any,
        arguments: Mapping[str, Any] | None,
        principal: Any,
        round_: Round | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """``prompts/get`` of the prompt shown as ``name`` for ``principal``, governed as a
        call (``round_`` as for [`read`][]).

        Raises:
            MCPError: see the module docstring.
        """
        target = self._prompt(name, principal)
        given = dict(arguments or {})

        def request(client: Any) -> Awaitable[Any]:
            if round_ is None:
                return cast(Awaitable[Any], client.get_prompt(target.name, given or None))
            return cast(
                Awaitable[Any],
                client.session.get_prompt(
                    target.name,
                    given or None,
                    input_responses=round_.responses,
                    request_state=round_.state,
                    allow_input_required=True,
                ),
            )

        answer = await self._governed(target, given, principal, request)
        return _answer(answer, types.GetPromptResult)

    async def _governed(
        self,
        target: _Target,
        arguments: dict[str, Any],
        principal: Any,
        request: Callable[[Any], Awaitable[Any]],
    ) -> Any:
        """The server's answer to ``request``, sent as the call of ``target.tool`` with
        ``arguments`` through the executors: first without a run, then, when it needs
        approval, in its run of the ledger."""
        assert self.hub is not None
        hub = self.hub
        said: list[MCPError] = []

        async def send(**_: Any) -> ToolResult:
            try:
                answer = await hub.send(target.server, request)
            except MCPError as exc:  # the server's own error, answered as it said it
                said.append(exc)
                return ToolResult.error("failed", str(exc.message))
            return ToolResult(structured_content={_RESULT: _dumped(answer)})

        tool = _with_handler(target.tool, send)
        toolset = ToolSet([tool])
        direct, ledgered = self._executors(toolset)
        call = make_call(toolset, toolset.exposed_name(tool), arguments, call_id=CALL_ID)
        try:
            (outcome,) = await direct.run([call], principal=principal)
        except Escalate:
            run_id = await self._run_for(_run_name(target), arguments, principal)
            try:
                (outcome,) = await ledgered.run([call], run_id=run_id, principal=principal)
            except ApprovalPending as pending:
                raise MCPError(
                    code=types.INVALID_REQUEST, message=self._waits(target, pending.pending[0])
                ) from None
            except ToolwireError as exc:  # the store is down, say
                raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        if said:
            raise said[0]
        result = outcome.result
        if not result.is_error:
            kept = result.structured_content
            if kept is not None and _RESULT in kept:
                return kept[_RESULT]
            raise MCPError(  # the executor's output cap cut it: said, never passed on cut
                code=types.INTERNAL_ERROR,
                message=f"{_subject(target)} answered more than the gateway passes on "
                "(its max_output_chars).",
            )
        code = {
            "denied": types.INVALID_REQUEST,
            "approval_denied": types.INVALID_REQUEST,
            "invalid_arguments": types.INVALID_PARAMS,
        }.get(result.error_kind or "", types.INTERNAL_ERROR)
        named = f"Tool {toolset.exposed_name(tool)!r}"  # the executor's name for it
        message = result.text.replace(named, _subject(target))
        raise MCPError(code=code, message=message[:_MESSAGE])

    # -- completion -------------------------------------------------------------------------

    async def complete(
        self, params: types.CompleteRequestParams, principal: Any
    ) -> types.CompleteResult:
        """``completion/complete`` for a prompt's or a template's argument, asked of the
        server that offers it (nothing suggested when it does not complete).

        Raises:
            MCPError: the reference is to nothing the principal may use.
        """
        ref = params.ref
        if isinstance(ref, types.PromptReference):
            target = self._prompt(ref.name, principal)
            ref = ref.model_copy(update={"name": target.name})
        else:
            target = self._template(ref.uri, principal)
        catalog = self._catalogs().get(target.server)
        if catalog is None or not catalog.completions:
            return types.CompleteResult(completion=types.Completion(values=[]))
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else None
        assert self.hub is not None
        try:
            result: types.CompleteResult = await self.hub.send(
                target.server, lambda client: client.complete(ref, argument, context)
            )
        except ToolwireError as exc:
            raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
        return result

    def _template(self, uri_template: Any, principal: Any) -> _Target:
        if isinstance(uri_template, str) and len(uri_template) <= MAX_URI:
            offering = [
                server
                for server, catalog in self._catalogs().items()
                if catalog.template(uri_template) is not None
            ]
            if len(offering) == 1:  # (two servers offering it: which one is not guessed)
                server = offering[0]
                target = _Target(server, uri_template, _read_tool(server, uri_template))
                if self._usable(target.tool, principal):
                    return target
        shown = _shown_text(uri_template) if isinstance(uri_template, str) else "(not a URI)"
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource template {shown}.")

    def _waits(self, target: _Target, request: Any) -> str:
        again = "read it again" if target.tool.entity == "resource" else "get it again"
        subject = _subject(target)
        text = waits_for_approval(
            request,
            subject,
            again,
            shared_store=not in_process(self._store),
            no_form="reads and gets are approved through the ledger only",
        )
        return text + (self._console.said(request) if self._console is not None else "")

    # -- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, connection: Any, session: Any, uri: Any, principal: Any) -> None:
        """Subscribe ``connection`` to ``uri`` (``session`` tells it of updates): its server
        is asked once, for every client.

        Raises:
            MCPError: as for a read, or the server takes no subscriptions or is down.
        """
        target = self._resource(uri, principal)
        catalog = self._catalogs().get(target.server)
        if catalog is None or not catalog.subscribe:
            raise MCPError(
                code=types.METHOD_NOT_FOUND,
                message=f"The server of {_shown_text(target.name)} takes no subscriptions.",
            )
        key = (target.server, target.name)
        sessions = self._subscribers.get(key)
        if sessions is None:
            assert self.hub is not None
            try:
                await self.hub.subscribe(target.server, target.name)
            except ToolwireError as exc:
                raise MCPError(code=types.INTERNAL_ERROR, message=str(exc)) from None
            sessions = self._subscribers.setdefault(key, weakref.WeakKeyDictionary())
        sessions[connection] = session

    async def unsubscribe(self, connection: Any, uri: Any) -> None:
        """End ``connection``'s subscriptions to ``uri``; its server's, once no client has
        one."""
        for key in [key for key in self._subscribers if key[1] == uri]:
            sessions = self._subscribers[key]
            sessions.pop(connection, None)
            if not sessions and self.hub is not None:
                del self._subscribers[key]
                with contextlib.suppress(Exception):  # it is down: its subscriptions went too
                    await self.hub.subscribe(key[0], key[1], on=False)

    def listening(
        self, handler: Callable[[Any, Any], Awaitable[Any]], principal_of: Callable[[Any], Any]
    ) -> Callable[[Any, Any], Awaitable[Any]]:
        """``handler`` (the SDK's ``ListenHandler``) serving ``subscriptions/listen``, with the
        resources a stream asks updates of subscribed on their servers while it is open (those
        the stream's principal may read; the others are never told of)."""

        async def listen(ctx: Any, params: types.SubscriptionsListenRequestParams) -> Any:
            stream = _Stream()
            wanted = list(params.notifications.resource_subscriptions or ())[:MAX_STREAM_URIS]
            try:
                principal = principal_of(ctx)
            except ToolwireError:  # not authenticated: told of nothing
                wanted = []
            subscribed = []
            for uri in wanted:
                with contextlib.suppress(MCPError):
                    await self.subscribe(stream, stream, uri, principal)
                    subscribed.append(uri)
            # The stream is told of what its principal may read only.
            notifications = params.notifications.model_copy(
                update={"resource_subscriptions": subscribed or None}
            )
            params = params.model_copy(update={"notifications": notifications})
            try:
                return await handler(ctx, params)
            finally:
                with anyio.CancelScope(shield=True):
                    for uri in subscribed:
                        await self.unsubscribe(stream, uri)

        return listen

    async def updated(self, server: str, uri: str) -> None:
        """Tell the clients subscribed to ``uri`` of ``server`` that it was updated."""
        await self._bus.publish(ResourceUpdated(uri))  # 2026-07-28 listen streams
        for session in list(self._subscribers.get((server, uri), {}).values()):
            with contextlib.suppress(Exception):  # a connection gone: the others are told
                await session.send_resource_updated(uri)


@dataclass(frozen=True)
class Round:
    """What a 2026-07-28 client's read or get carries of a server's round: its answers to the
    server's input requests, and the server's state (unsealed by the gateway's boundary)."""

    responses: Any = None
    state: str | None = None


def _round(ctx: Any, params: Any) -> Round | None:
    """The round a request continues, for a 2026-07-28 client (None for a handshake-era one,
    which cannot be handed a round: the hub's client answers it, declining)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return None
    return Round(params.input_responses, params.request_state)


def _answer(answer: Mapping[str, Any], kind: type[_R]) -> _R | types.InputRequiredResult:
    """The server's answer as it was dumped: an ``InputRequiredResult``, or a ``kind``; without
    what the server's SDK says of the server in its ``_meta`` (the gateway is the server)."""
    meta = answer.get("_meta")
    if isinstance(meta, Mapping) and types.SERVER_INFO_META_KEY in meta:
        rest = {k: v for k, v in meta.items() if k != types.SERVER_INFO_META_KEY}
        answer = {**answer, "_meta": rest or None}
    if answer.get("resultType") == "input_required":
        return types.InputRequiredResult.model_validate(answer)
    return kind.model_validate(answer)


def _connection(ctx: Any) -> Any:
    """The connection a request came on (a session object lives as long as its request)."""
    return getattr(ctx.session, "_connection", None) or ctx.session


class _Stream:
    """A ``subscriptions/listen`` stream, as a subscriber: the bus tells it of updates."""

    async def send_resource_updated(self, uri: str) -> None:
        pass


def _read_tool(server: str, uri: str) -> Tool:
    return Tool(name=uri, server_id=server, entity="resource", annotations=_READ_ONLY)


def _prompt_tool(server: str, prompt: Any) -> Tool:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for argument in prompt.arguments or ():
        properties[argument.name] = {"type": "string"}
        if argument.required:
            required.append(argument.name)
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return Tool(
        name=prompt.name,
        server_id=server,
        entity="prompt",
        input_schema=schema,
        annotations=_READ_ONLY,
        description=prompt.description,
    )


def _with_handler(tool: Tool, handler: Callable[..., Awaitable[ToolResult]]) -> Tool:
    return dataclasses.replace(tool, handler=handler)


def _subject(target: _Target) -> str:
    """How messages name a read or get."""
    if target.tool.entity == "resource":
        return f"The read of {_shown_text(target.name)}"
    return f"The get of prompt {_shown_text(target.name)}"


def _plain(uri: str) -> bool:
    """Whether ``uri`` has no percent-encoding and no dot segments: a template reads it as
    the resource it spells (the SDK decodes a template's variables)."""
    after_scheme = uri.split(":", 1)[-1]
    return "%" not in uri and not any(s in (".", "..") for s in after_scheme.split("/"))


def _run_name(target: _Target) -> str:
    kind: Entity = target.tool.entity
    return f"{kind}:{target.server}/{target.name}"


def _dumped(answer: Any) -> Any:
    return answer.model_dump(mode="json", by_alias=True, exclude_none=True)


def _shown_text(text: str, limit: int = 200) -> str:
    """``text`` quoted for a message, cut at ``limit`` characters."""
    return repr(text if len(text) <= limit else text[:limit] + "…")
