"""An upstream server's requests passed on to the gateway's own client, for one call.

The gateway makes a [`Relay`][] for each ``tools/call`` it serves and sets it as the current
relay while the call runs; the hub reads it where the call reaches the upstream server:

- **Capabilities and log level.** On a 2026-07-28 connection each request says what its client
  can do: the hub sends the upstream the capabilities of the gateway's client that may pass
  (see [`Relay.passable`][]), and the log level it asked for, instead of its own.
- **Questions.** The upstream's elicitation, sampling and roots requests (asked within the
  call on the handshake revisions, or returned in an ``InputRequiredResult`` on 2026-07-28)
  go to the gateway's client when it declared the capability and the policy does not refuse
  that kind from that server: asked at once of a handshake-era client, or handed back to a
  2026-07-28 client as an ``InputRequiredResult`` of the gateway's own (the upstream's
  ``requestState`` sealed inside the gateway's, or, for a handshake-era upstream, the call
  kept waiting in this process: see ``toolwire.mcp._bridge``), which its retry continues.
  Nothing is answered for the client that it did not answer: a request that cannot reach it
  is refused to the upstream with an error saying why.
- **Log messages** the upstream sends for the call go to the gateway's client.
- **Protocol errors.** An upstream's JSON-RPC error for the call is kept, so that the gateway
  answers its client with that error rather than with a tool failure.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "PROTOCOL_ERROR", "Relay", "kept_error", "kind_of", "relaying"]

_log = logging.getLogger("toolwire")

KINDS = {
    "elicitation/create": "elicitation",
    "sampling/createMessage": "sampling",
    "roots/list": "roots",
}
"""The requests a server may send its client within a call, by method: the kind of each (the
name of the client capability it needs)."""

relaying: contextvars.ContextVar[Relay | None] = contextvars.ContextVar(
    "toolwire_relay", default=None
)
"""The relay of the call being run (set by the gateway around the executor's run)."""

PROTOCOL_ERROR = "toolwire/protocolError"
"""The key of a task's answer's structured content that keeps the upstream's JSON-RPC error
(``code``, ``message``, ``data``): a task's answer is kept in its run, an exception is not."""


def kept_error(result: Any) -> dict[str, Any] | None:
    """The upstream's JSON-RPC error a task's answer (a ``ToolResult``) keeps, or None."""
    structured = getattr(result, "structured_content", None)
    if not getattr(result, "is_error", False) or not isinstance(structured, Mapping):
        return None
    error = structured.get(PROTOCOL_ERROR)
    if not isinstance(error, Mapping) or not isinstance(error.get("code"), int):
        return None
    return dict(error)


LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")


def kind_of(request: Any) -> str | None:
    """The kind of a server's request (``elicitation``, ``sampling``, ``roots``), by method;
    None for any other."""
    return KINDS.get(getattr(request, "method", None) or "")


@dataclass(eq=False)
class Relay:
    """What the gateway's client of one call can answer, and what the upstream did."""

    capabilities: Mapping[str, Any]
    """The client's declared capabilities (``ClientCapabilities`` as JSON)."""
    modern: bool
    """The client speaks 2026-07-28: questions go back to it as an ``InputRequiredResult``."""
    refuses: Callable[[str, str], str | None]
    """``refuses(server, kind)``: why the policy refuses that kind of request from that
    server, or None."""
    owner: str | None = None
    """Whose call it is: its client's principal and session (see [`owner_of`][]). A
    handshake-era server's requests within a call go to the client of that call only, and once
    such a server asks for roots, the hub sends it one owner's calls at a time (see
    ``_owners``)."""
    ask: Callable[[Any], Awaitable[Any]] | None = None
    """Sends a request to a handshake-era client within the call, and returns its result."""
    bridge: Callable[[Any], Awaitable[Any]] | None = None
    """Hands a handshake-era server's request within the call to a 2026-07-28 client, in the
    answer to its call, and returns the answer its retry brings (see ``toolwire.mcp._bridge``);
    None where the call cannot be kept waiting for it."""
    log: Callable[[Any], Awaitable[None]] | None = None
    """Passes a log message's params on to the client."""
    progress: Callable[[float, float | None, str | None], Awaitable[None]] | None = None
    """Reports the upstream's progress for the call to the client that made it."""
    log_level: str | None = None
    """The least severe level the client wants log messages at (None: none, on 2026-07-28)."""
    continuation: tuple[dict[str, Any], str | None] | None = None
    """A 2026-07-28 client's retry: the answers it gave, and the upstream's state to send back."""
    input_required: Any = None
    """An upstream's ``InputRequiredResult`` to hand to a 2026-07-28 client."""
    protocol_error: Exception | None = None
    """The upstream's JSON-RPC error for the call (an ``MCPError``)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Kinds the upstream asked for that could not pass, and why."""
    pass_back: bool = True
    """A 2026-07-28 client may be handed the upstream's round (not when the call is kept in a
    run: see the gateway)."""
    keeps_rounds: bool = False
    """The call is a task's: the upstream's elicitation rounds wait in its run, for the
    client to answer with ``tasks/update``, and its protocol error is kept in its answer."""

    def passable(self, server: str) -> frozenset[str]:
        """The kinds of request from ``server`` that may reach the client: those it declared
        a capability for and the policy does not refuse."""
        return frozenset(
            kind
            for kind in ("elicitation", "sampling", "roots")
            if self.capabilities.get(kind) is not None and self.refuses(server, kind) is None
        )

    def upstream_capabilities(self, server: str) -> dict[str, Any]:
        """The capabilities to declare to ``server`` for this call: the client's, for the
        kinds that may pass."""
        return {kind: self.capabilities[kind] for kind in sorted(self.passable(server))}

    def why_not(self, server: str, kind: str) -> str:
        """Why a request of ``kind`` from ``server`` cannot reach the client."""
        reason = self.refuses(server, kind)
        if reason is not None:
            return f"the policy refuses {kind} requests from server {server!r} ({reason})"
        return f"the gateway's client did not declare the {kind} capability"

    def wants_log(self, level: str) -> bool:
        """Whether the client asked for log messages at ``level``."""
        if self.log is None or self.log_level not in LOG_LEVELS:
            return False
        return level in LOG_LEVELS and LOG_LEVELS.index(level) >= LOG_LEVELS.index(self.log_level)


def let_calls_declare(session: Any) -> None:
    """Make a 2026-07-28 client session send the capabilities a call's own ``_meta`` gives
    (the SDK stamps the session's on every request): the hub's calls then tell the upstream
    what the gateway's client can do. Other requests keep the session's."""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY

    stamp = getattr(session, "_stamp", None)
    if stamp is None or getattr(stamp, "toolwire_per_call", False):
        return

    def per_call(data: dict[str, Any], options: Any) -> None:
        params = data.get("params")
        meta = params.get("_meta") if isinstance(params, dict) else None
        wanted = meta.get(CLIENT_CAPABILITIES_META_KEY) if isinstance(meta, dict) else None
        stamp(data, options)
        if wanted is not None:
            data["params"]["_meta"][CLIENT_CAPABILITIES_META_KEY] = wanted

    per_call.toolwire_per_call = True  # type: ignore[attr-defined]
    session._stamp = per_call


# -- the gateway's side -------------------------------------------------------------------------

_STATE_KEY = "toolwire_relay"
"""The key of the gateway's ``requestState`` that carries an upstream's round."""
_LEVEL = "toolwire.log_level"
"""Where a handshake-era connection's ``logging/setLevel`` is kept (its ``state``)."""
_OWNER = "toolwire.owner"
"""Where a handshake-era connection's random name, part of its calls' owner, is kept."""


def _connection(ctx: Any) -> Any:
    """The client connection a request came on (per connection state lives there), or None."""
    return getattr(ctx.session, "_connection", None)


def owner_of(ctx: Any, principal_key: str) -> str:
    """Whose call a request makes: its principal (``principal_key``) and its client's session,
    whose roots and answers are its own: on a handshake-era connection, that connection; a
    2026-07-28 request has none (its client says what it can answer, and gives its roots, in
    each request), so it is a session of its own."""
    import secrets

    connection = _connection(ctx)
    if connection is not None and ctx.protocol_version not in _modern():
        session = connection.state.setdefault(_OWNER, secrets.token_urlsafe(16))
    else:
        session = f"request {secrets.token_urlsafe(16)}"
    return owner_key(principal_key, session)


def owner_key(principal_key: str, session: str) -> str:
    """The owner of the calls of a principal (``principal_key``) made in ``session``."""
    from toolwire.calls import canonical_json

    return canonical_json([principal_key, session])


def _modern() -> frozenset[str]:
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return frozenset(MODERN_PROTOCOL_VERSIONS)


def relay_for(
    ctx: Any,
    refuses: Callable[[str, str], str | None],
    *,
    pass_back: bool = True,
    owner: str | None = None,
) -> Relay:
    """The relay of one ``tools/call`` the gateway serves (``ctx``: the request's context),
    made by ``owner`` (see [`owner_of`][]).

    ``pass_back``: a 2026-07-28 client may be handed the upstream's rounds (not for a call kept
    in a run: its answer would be the placeholder)."""
    from mcp.shared.message import ServerMessageMetadata
    from mcp_types import (
        LOG_LEVEL_META_KEY,
        CreateMessageRequest,
        CreateMessageResult,
        CreateMessageResultWithTools,
        ElicitRequest,
        ElicitResult,
        ListRootsResult,
        LoggingMessageNotification,
    )
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    session = ctx.session
    declared = session.client_capabilities
    capabilities = (
        declared.model_dump(by_alias=True, mode="json", exclude_none=True) if declared else {}
    )
    modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def ask(request: Any) -> Any:
        if isinstance(request, ElicitRequest):
            result_type: Any = ElicitResult
        elif isinstance(request, CreateMessageRequest):
            tools = request.params.tools is not None or request.params.tool_choice is not None
            result_type = CreateMessageResultWithTools if tools else CreateMessageResult
        else:
            result_type = ListRootsResult
        metadata = ServerMessageMetadata(related_request_id=ctx.request_id)
        return await session.send_request(request, result_type, metadata=metadata)

    async def log(params: Any) -> None:
        # On the call's own stream, whatever the revision (the level was checked already).
        notification = LoggingMessageNotification(params=params)
        await session.send_notification(notification, related_request_id=ctx.request_id)

    if modern:
        level = (ctx.meta or {}).get(LOG_LEVEL_META_KEY)
    else:  # what logging/setLevel asked for on this connection; every level until then
        connection = _connection(ctx)
        level = connection.state.get(_LEVEL, "debug") if connection is not None else "debug"
    return Relay(
        capabilities=capabilities,
        modern=modern,
        refuses=refuses,
        owner=owner,
        ask=None if modern or not session.can_send_request else ask,
        log=log,
        progress=session.report_progress,  # a no-op unless the client asked for progress
        log_level=level if isinstance(level, str) else None,
        pass_back=pass_back,
    )


def set_level(ctx: Any, level: str) -> None:
    """Keep a handshake-era client's ``logging/setLevel`` for its connection's calls."""
    connection = _connection(ctx)
    if connection is not None:
        connection.state[_LEVEL] = level


def continuation_of(
    params: Any, digest: str, *, own_keys: frozenset[str] = frozenset()
) -> tuple[dict[str, Any], str | None] | None:
    """What a 2026-07-28 client's call carries for the upstream: its input responses (but
    those for the gateway's own questions, ``own_keys``) and, when its (unsealed)
    ``requestState`` is that of a round the gateway handed it for the same tool and arguments
    (``digest``), the upstream's state; None when it carries neither."""
    from toolwire._json import load_json

    answers = {k: v for k, v in (params.input_responses or {}).items() if k not in own_keys}
    upstream = None
    if params.request_state is not None:
        state = load_json(params.request_state)
        kept = state.get(_STATE_KEY) if isinstance(state, dict) else None
        if isinstance(kept, dict) and kept.get("call") == [params.name, digest]:
            found = kept.get("up")
            upstream = found if isinstance(found, str) else None
    if not answers and upstream is None:
        return None
    return answers, upstream


def round_for_client(relay: Relay, name: str, digest: str) -> Any:
    """The ``InputRequiredResult`` that hands the upstream's round to a 2026-07-28 client: the
    same requests, and a state of the gateway's carrying the upstream's (sealed by the
    gateway's request-state boundary on the way out)."""
    from mcp_types import InputRequiredResult

    from toolwire.calls import canonical_json

    upstream = relay.input_required
    state = canonical_json({_STATE_KEY: {"call": [name, digest], "up": upstream.request_state}})
    return InputRequiredResult(input_requests=upstream.input_requests, request_state=state)
