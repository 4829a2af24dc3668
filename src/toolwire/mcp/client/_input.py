"""Input a server asks for during a call (MCP elicitation), through the hub's ``elicitor``.

Two protocol eras ask differently:

- **2026-07-28 on**, a call is answered ``InputRequiredResult``: questions, and the server's
  ``request_state``. The hub asks the elicitor each question and sends the call again with the
  answers and the state. A question the elicitor defers pauses the call: the executor keeps the
  round in the run (``InputDeferred``), and a later resume sends the answers given meanwhile
  with the kept state, in any process.
- **Before it**, the server sends ``elicitation/create`` while the call runs and waits for the
  answer within the call: only an immediate answer works there. A deferred question is
  cancelled, and the call is answered with an error that says so.

Without an elicitor, every question is declined. An accepted form is checked against the
server's requested schema before it is sent; an answer that does not fit is not sent (the call
is answered with an error).
"""

from __future__ import annotations

import contextvars
import hashlib
import inspect
import logging
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import anyio

from toolwire.calls import canonical_json
from toolwire.context import CallContext
from toolwire.errors import ToolwireError
from toolwire.inputs import (
    Elicitor,
    InputAnswer,
    InputDeferred,
    InputRequest,
    answer_of,
    checked_answer,
    cut_message,
    decline,
)
from toolwire.mcp._relay import Relay, kind_of
from toolwire.tool import exposed_name_for

_log = logging.getLogger("toolwire")

MAX_ROUNDS = 10
"""Rounds of questions in one call (``InputRequiredResult``s, or ``elicitation/create``
requests on older revisions) before the hub gives up on it."""
MAX_QUESTIONS = 20
"""Questions one round may ask."""
MAX_STATE = 256 * 1024
"""Characters of a server's ``request_state`` a run keeps for a call that waits."""
_STATE_ONLY_PAUSE = 0.05
"""Seconds before resending a round that carried only ``request_state`` (doubling, to 0.25)."""
MAX_LOG_DATA = 64 * 1024
"""Characters of a log message's data passed on to a gateway's client."""
LEGACY_KEY = "elicitation"
"""The key of a question asked by ``elicitation/create`` (the request carries none)."""


class InputRefused(ToolwireError):
    """A call cannot go on with its server's questions: it is answered ``failed`` with this
    message (the server is not told anything more)."""


@dataclass(eq=False)
class InFlight:
    """A call the hub has sent and not yet had answered, for questions asked within it."""

    tool: str
    arguments: Mapping[str, Any]
    call: CallContext | None
    progress: Any
    problem: str | None = None
    """Why the call's answer is replaced by an error (a question that could not be answered
    within the call)."""
    asked: int = 0
    """Questions its server asked within the call (older revisions)."""
    relay: Relay | None = None
    """Where the gateway passes the server's requests for this call on to its own client."""
    owner: str | None = None
    """Whose call it is, on a handshake-era connection (see ``_owners``); None on others."""


def question(
    server: str,
    key: str,
    params: Any,
    flight: InFlight | None,
    *,
    deferrable: bool,
) -> InputRequest:
    """The ``InputRequest`` for an elicitation's params, with what is known of its call."""
    call = flight.call if flight is not None else None
    url = getattr(params, "url", None)
    schema = getattr(params, "requested_schema", None)
    return InputRequest(
        key=key,
        message=cut_message(getattr(params, "message", "")),
        mode="url" if url is not None else "form",
        requested_schema=dict(schema) if isinstance(schema, Mapping) else None,
        url=url if isinstance(url, str) else None,
        server=server,
        tool_name=flight.tool if flight is not None else None,
        exposed_name=(
            call.exposed_name
            if call is not None
            else exposed_name_for(flight.tool, server)
            if flight is not None
            else None
        ),
        arguments=dict(flight.arguments) if flight is not None else {},
        run_id=call.run_id if call is not None else None,
        call_id=call.call_id if call is not None else None,
        principal=call.principal if call is not None else None,
        deferrable=deferrable,
    )


async def ask(elicitor: Elicitor | None, asked: InputRequest, progress: Any) -> InputAnswer | None:
    """The elicitor's answer (checked), None when it defers; declined without an elicitor.
    The call's idle clock stands still while it decides.

    Raises:
        InputRefused: the elicitor failed, or answered with content that does not fit.
    """
    if elicitor is None:
        return decline()
    with progress.paused() if progress is not None else nullcontext():
        try:
            value = elicitor(asked)
            if inspect.isawaitable(value):
                value = await value
            answer = answer_of(value)
        except Exception as exc:  # the application's elicitor: fail closed, the call says why
            _log.exception("the elicitor failed on a question of %s", asked.exposed_name)
            raise InputRefused(
                f"its server asked for input ({asked.message[:200]!r}) and the elicitor failed: "
                f"{type(exc).__name__}: {str(exc)[:200]}"
            ) from None
    if answer is None:
        return None
    try:
        return checked_answer(asked, answer, label="the elicitor's answer")
    except ToolwireError as exc:
        raise InputRefused(
            f"its server asked for input ({asked.message[:200]!r}) and the answer given does "
            f"not fit what it asked for: {str(exc)[:300]}"
        ) from None


def elicit_result(answer: InputAnswer) -> Any:
    from mcp_types import ElicitResult

    return ElicitResult(
        action=answer.action, content=dict(answer.content) if answer.content else None
    )


def kept_answers(resume: Mapping[str, Any]) -> dict[str, Any]:
    """The answers a resumed call sends its server, as the SDK's ``ElicitResult``s."""
    answers = resume.get("answers")
    if not isinstance(answers, Mapping):
        return {}
    sent = {}
    for key, kept in answers.items():
        action, content = (
            (kept.get("action"), kept.get("content")) if isinstance(kept, Mapping) else (None, None)
        )
        if not isinstance(key, str) or action not in ("accept", "decline", "cancel"):
            raise InputRefused("the run keeps an answer it cannot send (its record was altered)")
        if content is not None and not isinstance(content, Mapping):
            raise InputRefused("the run keeps an answer it cannot send (its record was altered)")
        try:
            sent[key] = elicit_result(InputAnswer(action, content))
        except ValueError:  # content the SDK's model refuses
            raise InputRefused(
                "the run keeps an answer it cannot send (its record was altered)"
            ) from None
    return sent


async def call_with_input(
    client: Any,
    server: str,
    name: str,
    arguments: dict[str, Any],
    progress: Any,
    *,
    elicitor: Elicitor | None,
    flight: InFlight,
    resume: Mapping[str, Any] | None,
) -> Any:
    """One ``tools/call`` on a 2026-07-28 connection (or any: an older server never answers
    ``input_required``), its questions answered, and resumed from ``resume`` when given.

    With a relay (the gateway's call), the server's questions go to the gateway's client
    instead of the elicitor, and the call is sent with that client's capabilities and log
    level; a 2026-07-28 client's round is left in ``relay.input_required`` and the call is
    answered with a placeholder.

    Raises:
        InputDeferred: the elicitor deferred a question: the executor keeps the round.
        InputRefused: the call cannot go on (see [`ask`][]), or too many rounds.
    """
    from mcp_types import ElicitRequest, InputRequiredResult
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    session = client.session
    responses: dict[str, Any] | None = None
    state: str | None = None
    sent = arguments_digest(arguments)
    relay = flight.relay
    meta = _relayed_meta(relay, server, client.protocol_version)
    if resume is not None:
        if (resume.get("server"), resume.get("tool")) != (server, name):
            raise InputRefused("the run's answers were given for another server's call")
        if resume.get("sent") != sent:  # e.g. an approver edited them since
            raise InputRefused(
                "its arguments changed since its server asked for input; the answers given "
                "are not sent with other arguments"
            )
        if resume.get("protocol") in MODERN_PROTOCOL_VERSIONS and (
            client.protocol_version not in MODERN_PROTOCOL_VERSIONS
        ):
            raise InputRefused(
                f"its server asked for input on protocol revision {resume.get('protocol')}, "
                f"and now speaks {client.protocol_version}, which cannot continue the call"
            )
        responses = kept_answers(resume) or None
        kept_state = resume.get("state")
        state = kept_state if isinstance(kept_state, str) else None
    elif relay is not None and relay.continuation is not None:
        given, state = relay.continuation
        # Only answers of kinds the server may ask this client: a refused kind's never reaches it.
        passable = relay.passable(server)
        responses = {k: v for k, v in given.items() if _answer_kind(v) in passable} or None
    pause = _STATE_ONLY_PAUSE
    rounds = 0
    while True:
        result = await session.call_tool(
            name,
            arguments,
            progress_callback=progress,
            allow_input_required=True,
            input_responses=responses,
            request_state=state,
            meta=meta,
        )
        if not isinstance(result, InputRequiredResult):
            return result
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise InputRefused(
                f"its server asked for input more than {MAX_ROUNDS} times in one call"
            )
        state = result.request_state
        if not result.input_requests:  # the server is busy: ask again shortly, with its state
            responses = None
            await anyio.sleep(pause)
            pause = min(pause * 2, 0.25)
            continue
        pause = _STATE_ONLY_PAUSE
        if len(result.input_requests) > MAX_QUESTIONS:
            raise InputRefused(
                f"its server asked {len(result.input_requests)} questions at once (at most "
                f"{MAX_QUESTIONS} are taken)"
            )
        if relay is not None and not relay.keeps_rounds:
            relayed = await _relay_round(relay, server, result)
            if relayed is None:  # handed to the gateway's 2026-07-28 client
                return _placeholder()
            responses = relayed
            continue
        questions: list[InputRequest] = []
        answers: dict[str, InputAnswer] = {}
        for key, request in result.input_requests.items():
            if not isinstance(request, ElicitRequest):  # sampling, roots: not offered
                method = getattr(request, "method", "?")
                raise InputRefused(f"its server asked for {method!r}, which the hub does not offer")
            asked = question(server, key, request.params, flight, deferrable=True)
            questions.append(asked)
            # A task's questions wait in its run for its client (tasks/get, tasks/update).
            kept = relay is not None and relay.keeps_rounds
            answer = None if kept else await ask(elicitor, asked, progress)
            if answer is not None:
                answers[key] = answer
        if len(answers) < len(questions):
            if state is not None and len(state) > MAX_STATE:
                raise InputRefused(
                    f"its server's request_state is {len(state):,} characters, more than a run "
                    f"keeps ({MAX_STATE:,})"
                )
            raise InputDeferred(
                questions,
                answered=answers,
                state=state,
                protocol=client.protocol_version,
                sent=sent,
            )
        responses = {key: elicit_result(answer) for key, answer in answers.items()}


_HUB_ANSWERS: dict[str, Any] = {"elicitation": {"form": {}, "url": {}}}
"""What a hub's call can answer itself (its elicitor), without a gateway's client."""


def _relayed_meta(relay: Relay | None, server: str, protocol: str | None) -> dict[str, Any] | None:
    """The ``_meta`` of a call to a 2026-07-28 server: what its client can answer (the hub's
    elicitor, or the gateway's client's capabilities that may pass, and its log level)."""
    from mcp_types import CLIENT_CAPABILITIES_META_KEY, LOG_LEVEL_META_KEY
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    if protocol not in MODERN_PROTOCOL_VERSIONS:
        return None
    if relay is None:
        return {CLIENT_CAPABILITIES_META_KEY: _HUB_ANSWERS}
    meta: dict[str, Any] = {CLIENT_CAPABILITIES_META_KEY: relay.upstream_capabilities(server)}
    if relay.log is not None and relay.log_level is not None:
        meta[LOG_LEVEL_META_KEY] = relay.log_level
    return meta


def _answer_kind(answer: Any) -> str | None:
    """The kind of request ``answer`` answers (``elicitation``, ``sampling``, ``roots``)."""
    from mcp_types import (
        CreateMessageResult,
        CreateMessageResultWithTools,
        ElicitResult,
        ListRootsResult,
    )

    if isinstance(answer, ElicitResult):
        return "elicitation"
    if isinstance(answer, CreateMessageResult | CreateMessageResultWithTools):
        return "sampling"
    return "roots" if isinstance(answer, ListRootsResult) else None


def _placeholder() -> Any:
    """The answer of a call whose round was handed to the gateway's client (the gateway answers
    its client with the round instead)."""
    from mcp_types import CallToolResult, TextContent

    return CallToolResult(
        content=[TextContent(text="The call's server asked the client for input.")],
        is_error=True,
    )


async def _relay_round(relay: Relay, server: str, result: Any) -> dict[str, Any] | None:
    """The answers of the gateway's client to a server's round (asked at once of a
    handshake-era client), or None when the round is handed to a 2026-07-28 client
    (``relay.input_required``).

    Raises:
        InputRefused: a request the client cannot be asked (not declared, or refused by the
            policy), or one it failed to answer.
    """
    for request in result.input_requests.values():
        kind = kind_of(request)
        if kind is None or kind not in relay.passable(server):
            why = relay.why_not(server, kind) if kind is not None else "it is no known request"
            relay.refused[kind or "?"] = why
            raise InputRefused(f"its server asked for {getattr(request, 'method', '?')}: {why}")
    if relay.modern or relay.ask is None:
        if not relay.pass_back:
            raise InputRefused(
                f"its server asked for input ({', '.join(result.input_requests)}), which a "
                "call kept waiting in a run cannot hand to a 2026-07-28 client"
            )
        relay.input_required = result
        return None
    answers: dict[str, Any] = {}
    for key, request in result.input_requests.items():
        try:
            answers[key] = await relay.ask(request)
        except Exception as exc:  # the client's error: the call cannot go on
            raise InputRefused(
                f"its server asked for {request.method} and the client failed to answer: "
                f"{str(exc)[:200]}"
            ) from None
    return answers


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """What identifies the arguments a call's questions were asked about."""
    encoded = canonical_json(dict(arguments)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(encoded).hexdigest()[:32]


def legacy_callback(hub: Any, server: Any) -> Any:
    """The client's ``elicitation_callback``: a question a handshake-era server asks within a
    call, passed on to the gateway's client of the call (see [`relayed_callbacks`][]), or
    answered by the elicitor at once (a deferred one is cancelled). A question that cannot be
    answered fails the call that asked, saying why; when the request does not say which call
    asked, every call it may belong to."""
    from mcp_types import ElicitRequest, ElicitResult

    async def answer(context: Any, params: Any) -> Any:
        flights = _candidates(server)
        relayed = _relayed_by(flights)
        if relayed is not None:  # a gateway's client answers, or nobody may
            request = ElicitRequest(params=params)
            return await _relay_or_refuse(relayed, flights, server.name, request)
        flight = flights[0] if len(flights) == 1 else None
        if flight is not None:
            flight.asked += 1
            if flight.asked > MAX_ROUNDS:
                flight.problem = (
                    f"its server asked for input more than {MAX_ROUNDS} times in one call"
                )
                return ElicitResult(action="cancel")
        asked = question(server.name, LEGACY_KEY, params, flight, deferrable=False)
        try:
            given = await ask(hub.elicitor, asked, flight.progress if flight else None)
        except InputRefused as exc:
            _fail(flights, str(exc), server.name)
            return ElicitResult(action="cancel")
        if given is None:
            reason = (
                f"its server asked for input ({asked.message[:200]!r}); on its protocol "
                "revision the answer must be given within the call, and the elicitor deferred "
                "it, so the question was cancelled"
            )
            _fail(flights, reason, server.name)
            return ElicitResult(action="cancel")
        return elicit_result(given)

    return answer


def _fail(flights: list[InFlight], reason: str, server: str) -> None:
    """Have the calls a server's request may belong to answered with an error saying
    ``reason``: the one that asked is among them. With several in flight, which one asked is
    not known, so each of them is answered so (never one left answered as if nothing was
    asked); with none (a request outside any call), it is logged."""
    if not flights:
        _log.warning("server %s: %s", server, reason)
        return
    if len(flights) > 1:
        reason = (
            f"{reason}; the request came while {len(flights)} calls to the server were in "
            "flight and does not say which one asked, so each of them is answered so"
        )
    for flight in flights:
        if flight.problem is None:
            flight.problem = reason


calling: contextvars.ContextVar[InFlight | None] = contextvars.ContextVar(
    "toolwire_hub_call", default=None
)
"""The hub's call being sent (set by the hub around it)."""


def _asking(server: Any) -> InFlight | None:
    """The call a server's request or notification within a call belongs to.

    The message does not say. Over streamable HTTP it came on the call's own response stream,
    and the SDK runs its handler in the context of the task that sent the call: the call is
    the one ``calling`` names there. Otherwise (stdio, say) only with one call in flight is it
    that one's."""
    flights = server.in_flight
    sent = calling.get()
    if sent is not None and any(flight is sent for flight in flights.values()):
        return sent
    return next(iter(flights.values())) if len(flights) == 1 else None


def _candidates(server: Any) -> list[InFlight]:
    """The calls a server's request within a call may belong to: the one it is known to be
    of (see [`_asking`][]), else every call to the server in flight (none: it came outside
    any call)."""
    flight = _asking(server)
    return [flight] if flight is not None else list(server.in_flight.values())


_MIXED = "calls of several clients"


def _relayed_by(flights: list[InFlight]) -> InFlight | str | None:
    """The call whose gateway client a server's request goes to: one of ``flights`` when all
    of them are a gateway's calls of one client (its owner, see ``_owners``); None when they
    are the hub's own calls (its elicitor answers), or none; ``_MIXED`` when they are calls of
    several clients (nobody may be asked: it could be any one's request)."""
    if all(flight.relay is None for flight in flights):
        return None
    owners = {flight.owner for flight in flights}
    return flights[0] if len(owners) == 1 and flights[0].relay is not None else _MIXED


async def _relay_or_refuse(
    relayed: InFlight | str, flights: list[InFlight], server: str, request: Any
) -> Any:
    """The gateway's client's answer to a handshake-era server's request within a call; an
    error for the server when the client cannot be asked. Nobody answers in its place: a
    question (elicitation) that cannot reach the client fails the call that asked, saying
    why; a sampling or roots request is refused to the server, which decides what follows."""
    from mcp_types import INVALID_REQUEST, ErrorData

    kind = kind_of(request) or "?"
    if isinstance(relayed, InFlight):
        answer, why = await _relay_request(relayed, server, request)
        if answer is not None:
            return answer
    else:
        why = (
            "the request came while calls of several clients were in flight to the server, "
            "and does not say which call it belongs to"
        )
    if kind == "elicitation":
        _fail(flights, f"its server asked for input (elicitation), and {why}", server)
    return ErrorData(code=INVALID_REQUEST, message=f"{kind} is not available to this client")


async def _relay_request(flight: InFlight, server: str, request: Any) -> tuple[Any, str]:
    """The gateway's client's answer to a request a handshake-era server sent within the call,
    asked at once of a handshake-era client, or bridged to a 2026-07-28 one (``relay.bridge``),
    with the call's idle clock stopped meanwhile; None and why when it cannot be asked (not
    declared, refused by the policy, a 2026-07-28 client whose call is kept in a run) or failed
    to answer."""
    relay = flight.relay
    assert relay is not None
    kind = kind_of(request)
    asker = None
    if kind is None:
        why = "it is no request a client answers"
    elif kind not in relay.passable(server):
        why = relay.why_not(server, kind)
    elif not relay.modern:
        asker = relay.ask
        why = "the gateway's client takes no requests on its connection"
    else:
        asker = relay.bridge
        why = (
            "the gateway's client speaks the 2026-07-28 revision, which is asked only in the "
            "answer to its call, and this call's answer is kept in a run (it needed approval, "
            "or is a task)"
        )
    if asker is not None:
        with flight.progress.paused() if flight.progress is not None else nullcontext():
            try:
                return await asker(request), ""
            except Exception as exc:  # the client's failure, or no answer in time
                why = f"the client did not answer it: {str(exc)[:200]}"
    relay.refused[kind or "?"] = why
    return None, why


def relayed_callbacks(server: Any) -> dict[str, Any]:
    """The client callbacks that pass a handshake-era server's sampling and roots requests, and
    any server's log messages, on to the gateway's client of the call they belong to (an
    error, or nothing, when no such client can take them)."""
    from mcp_types import INVALID_REQUEST, CreateMessageRequest, ErrorData, ListRootsRequest

    async def relayed(request: Any, kind: str) -> Any:
        flights = _candidates(server)
        relayed = _relayed_by(flights)
        if kind == "roots" and server.protocol_version is not None:
            # A server that asks for roots may keep them for its session: from now on, it
            # carries one client's calls at a time, and none may get roots another's call
            # overlapping this one could be answered with (see _owners).
            server.owners.exclusive = True
            if isinstance(relayed, InFlight) and server.owners.others_running(relayed.owner):
                return ErrorData(code=INVALID_REQUEST, message="roots are not available now")
        if relayed is None:  # the hub's own calls, or none: no client to ask
            return ErrorData(code=INVALID_REQUEST, message=f"{kind} is not available")
        answer = await _relay_or_refuse(relayed, flights, server.name, request)
        given = kind == "roots" and not isinstance(answer, ErrorData)
        if given and isinstance(relayed, InFlight) and relayed.owner is not None:
            server.owners.gave_roots(relayed.owner)  # the server now has this client's roots
        return answer

    async def sampling(context: Any, params: Any) -> Any:
        return await relayed(CreateMessageRequest(params=params), "sampling")

    async def roots(context: Any) -> Any:
        return await relayed(ListRootsRequest(), "roots")

    async def log(params: Any) -> None:
        flight = _asking(server)
        relay = flight.relay if flight is not None else None
        if flight is None or relay is None or relay.log is None:
            return
        if relay.wants_log(params.level):
            if len(repr(params.data)) > MAX_LOG_DATA:  # bounded, as a result is
                params = params.model_copy(update={"data": "(a log message too long to pass on)"})
            try:
                with flight.progress.handlers.running():  # the call's answer waits for it
                    await relay.log(params)
            except Exception:  # a client gone is no failure of the call
                _log.debug("a log message of server %s was not passed on", server.name)

    return {"sampling_callback": sampling, "list_roots_callback": roots, "logging_callback": log}
