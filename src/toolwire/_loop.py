"""[`loop`][]: the tool-calling loop every program writes, governed, over the user's own client.

toolwire still makes no HTTP call: ``send`` is the user's SDK method with the model and its
options bound (``functools.partial(client.messages.create, model=..., max_tokens=...)``),
sync or async. Each provider module puts the conversation and the declared tools into that
call's keyword arguments (``request``); the loop sends, runs the calls through
[`execute_tool_calls`][toolwire.execute_tool_calls], appends the followup and goes again,
until the model answers without calls, a call waits for a human, a response is blocked or
refused, or the turn bound is reached. [`loop_events`][] does the same over streamed
responses, yielding the provider's events and each call's outcome as it finishes.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pydantic_core

from toolwire._api import Listing, Outcome, execute_tool_calls
from toolwire._values import canonical_json
from toolwire.approval import ApprovalPending
from toolwire.context import CallContext
from toolwire.errors import ConfigurationError, ToolwireError
from toolwire.provenance import Provenance, user_texts
from toolwire.providers import Stopped, get_provider

__all__ = ["LoopEvent", "LoopResult", "TurnLimit", "loop", "loop_events"]

DEFAULT_MAX_TURNS = 10


class TurnLimit(ToolwireError):
    """The model still made calls after ``max_turns`` turns; the conversation so far is in
    ``result``."""

    def __init__(self, max_turns: int, result: LoopResult) -> None:
        self.max_turns = max_turns
        self.result = result
        super().__init__(
            f"the model still called tools after max_turns={max_turns} turns; raise "
            "max_turns, or look at result.conversation"
        )


@dataclass
class LoopResult:
    """Where a [`loop`][] stopped, and everything it said and heard."""

    conversation: list[Any]
    """The messages so far, in the provider's shape: what was given, then each turn's
    followup (the model's turn and the answers). The last response, which made no calls, is
    ``response``: append it as the API wants it to go on talking."""
    response: Any = None
    """The last response."""
    outcomes: list[Outcome] = field(default_factory=list)
    """Each turn's outcome, in order."""
    pending: ApprovalPending | None = None
    """Set when a call waits for a human: decide it (``toolwire.decide``), then pass this
    result back as ``loop(send, listing, result)``; the turn runs again under its run id, in
    the store it was kept in (``pending.store``), the calls that ran answered from it."""
    stopped: Stopped | None = None
    """Set when the last response was blocked, refused or empty (see ``Stopped``)."""
    halted: bool = False
    """An approver answered deny-and-halt: the model was answered, and the loop stopped."""
    taint: frozenset[str] = frozenset()
    """The sources whose output is in the model's context (pass it on with the result)."""
    provider: str | None = None
    provenance: Provenance | None = None
    """What the model has read and was trustingly told (see [`toolwire.provenance`][]):
    carried from turn to turn, and on with the result."""

    @property
    def done(self) -> bool:
        """True when the model answered without calls and nothing stopped it."""
        return self.pending is None and self.stopped is None and not self.halted

    @property
    def text(self) -> str:
        """The last response's text."""
        if self.response is None or self.provider is None:
            return ""
        return str(get_provider(self.provider).text(self.response))


@dataclass(frozen=True)
class LoopEvent:
    """One thing [`loop_events`][] saw, in order:

    - ``"event"``: one of the provider's stream events, as it came (``event``);
    - ``"response"``: a turn's whole response once its stream ended (``response``);
    - ``"call"``: a call that ran, as it finished (``call``, its context; ``result``, its
      ``ToolResult`` before the answer is shaped); not with ``executor=``, whose hooks are
      its own;
    - ``"outcome"``: the turn's [`Outcome`][toolwire.Outcome] once every call is answered
      (denied and invalid ones too) (``result``);
    - ``"done"``: the loop's end (``result``, the [`LoopResult`][]).
    """

    kind: Literal["event", "response", "call", "outcome", "done"]
    turn: int
    event: Any = None
    response: Any = None
    call: CallContext | None = None
    result: Any = None


async def loop(
    send: Callable[..., Any],
    listing: Listing,
    messages: Sequence[Any] | LoopResult,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    conversation: str | None = None,
    run_id: str | Callable[[int], str] | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
    trusted: Iterable[Any] | None = None,
    **options: Any,
) -> LoopResult:
    """Send, run the calls, answer, repeat: the loop of a governed tool-calling program.

    Args:
        send: the SDK method that makes one request, with the model and options bound
            (``functools.partial(client.messages.create, model=..., max_tokens=1024)``),
            sync or async. The loop passes the conversation and the tools as the API names
            them (see each provider module's ``request``); a ``config`` bound to it (Gemini)
            is merged with the tools.
        listing: the declared tools ([`toolwire.tools`][]).
        messages: the conversation to start from, in the provider's shape (for the Gemini
            Interactions API, the steps not sent yet); or a [`LoopResult`][] that stopped
            on a pending approval, to resume it.
        max_turns: the most model responses to act on; a model still calling tools then is
            [`TurnLimit`][] (the conversation is on the error).
        conversation: names the conversation (a chat's id, the same for every user
            message): each turn's run id is made from it and from the request the turn's
            response answers (``{conversation}-{n}-{digest}``), so a new user message, or
            another conversation, never gets an earlier turn's answers, and the same request
            again (a retry) is answered from its run. Without it (and without ``run_id``), a
            turn gets a run only when a call waits (its id is then on ``result.pending``).
        run_id: a callable of the turn number naming each turn's run (a new run for each
            turn: a run is bound to the turn it was started for, and a run id given to
            another turn raises
            [`RunBindingConflict`][toolwire.errors.RunBindingConflict]); a string is taken
            as ``conversation``.
        principal: who the loop runs for (the listing's when None).
        taint: sources whose output is already in the model's context; carried from turn to
            turn.
        trusted: what the loop trusts (texts or JSON values): the texts of the user, system
            and developer messages of ``messages`` when None. Each call's arguments are
            traced to it and to the tools' output the model read (``result.provenance``;
            see [`toolwire.provenance`][]), so a policy can ask where they came from.
        options: anything else [`execute_tool_calls`][toolwire.execute_tool_calls] takes
            (``policy``, ``approver``, ``store``, ``executor``, ``deps``, ``timeout``...).

    Returns:
        Where it stopped: ``result.done`` when the model answered; else ``pending``,
        ``stopped`` or ``halted`` says why.

    A result that stopped on a pending approval resumes under its run id, in the store its
    run was kept in (``result.pending.store``) unless ``store=`` or ``executor=`` is given;
    a run that store no longer keeps is [`RunNotFound`][toolwire.errors.RunNotFound], and
    nothing of it runs again.

    Raises:
        TurnLimit: ``max_turns`` responses, and the model still calls tools.
        RunBindingConflict: a run id named another turn's run.
        RunNotFound: the paused turn's run is gone from its store.
        ConfigurationError: a listing of no known provider, or a bad option.
    """
    naming = _naming(conversation, run_id)
    _own_provenance(options)
    state = _start(listing, messages, max_turns, taint, trusted)
    while True:
        response = state.carried_response()
        if response is None:
            if state.turn >= max_turns:
                raise TurnLimit(max_turns, state.result)
            response = await _call(send, state.kwargs(send))
            state.heard(response)
        outcome = await state.execute(response, naming, principal, options)
        if outcome is None or state.finished(response, outcome):
            return state.result


async def loop_events(
    send: Callable[..., Any],
    listing: Listing,
    messages: Sequence[Any] | LoopResult,
    *,
    max_turns: int = DEFAULT_MAX_TURNS,
    conversation: str | None = None,
    run_id: str | Callable[[int], str] | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
    trusted: Iterable[Any] | None = None,
    **options: Any,
) -> AsyncIterator[LoopEvent]:
    """[`loop`][] over streamed responses: ``send`` returns the SDK's stream of events (an
    async or plain iterable; ``stream=True`` bound, or the SDK's stream method), which the
    provider's accumulator puts together. Yields each event as it comes, each turn's
    response, each call's outcome as it finishes, then a ``"done"`` event with the
    [`LoopResult`][]. Runs on asyncio.

    Raises:
        TurnLimit: as [`loop`][].
    """
    naming = _naming(conversation, run_id)
    _own_provenance(options)
    state = _start(listing, messages, max_turns, taint, trusted)
    adapter = get_provider(listing.provider)
    while True:
        response = state.carried_response()
        if response is None:
            if state.turn >= max_turns:
                raise TurnLimit(max_turns, state.result)
            stream = await _call(send, state.kwargs(send))
            accumulator = adapter.Accumulator()
            async for event in _events(stream):
                accumulator.add(event)
                yield LoopEvent("event", state.turn + 1, event=event)
            response = accumulator.response()
            state.heard(response)
            yield LoopEvent("response", state.turn, response=response)
        calls: asyncio.Queue[tuple[CallContext, Any] | None] = asyncio.Queue()
        turn = asyncio.ensure_future(
            _turn_reporting(state, response, naming, principal, options, calls)
        )
        try:
            while (finished := await calls.get()) is not None:
                context, result = finished
                yield LoopEvent("call", state.turn, call=context, result=result)
            outcome = await turn
        finally:
            if not turn.done():  # the caller stopped listening: the turn stops too
                turn.cancel()
        if outcome is not None:
            yield LoopEvent("outcome", state.turn, result=outcome)
        if outcome is None or state.finished(response, outcome):
            yield LoopEvent("done", state.turn, result=state.result)
            return


async def _turn_reporting(
    state: _Loop,
    response: Any,
    naming: _Naming,
    principal: Any,
    options: Mapping[str, Any],
    calls: asyncio.Queue[tuple[CallContext, Any] | None],
) -> Outcome | None:
    """The turn's calls run, each one put on ``calls`` as it finishes (None once all are)."""

    async def report(context: CallContext, result: Any) -> Any:
        calls.put_nowait((context, result))
        return None  # the result stands

    if options.get("executor") is not None:  # its hooks are its own: the outcome tells
        hooked = dict(options)
    else:
        hooked = {**options, "after_call": (*options.get("after_call", ()), report)}
    try:
        return await state.execute(response, naming, principal, hooked)
    finally:
        calls.put_nowait(None)


# -- one loop's state --------------------------------------------------------------------------


class _Loop:
    """The conversation, the turn count and what the next request sends."""

    def __init__(
        self, listing: Listing, result: LoopResult, turn: int, unsent: Sequence[Any] = ()
    ) -> None:
        self.listing = listing
        self.adapter = get_provider(listing.provider)
        self.result = result
        self.turn = turn
        """Responses acted on so far (the current turn's number, once one is heard)."""
        self.keeps_history = self.adapter.PROFILE.server_history
        self.unsent: list[Any] = list(unsent) if self.keeps_history else []
        """For an API that keeps the conversation: the steps the next request sends."""
        self.resume = result.pending
        self.place: str | None = None
        """The current turn's place: a digest of the request its response answers."""

    def carried_response(self) -> Any:
        """The response a resumed loop acts on again (its turn's calls, under its run id)."""
        return self.result.response if self.resume is not None else None

    def kwargs(self, send: Callable[..., Any]) -> dict[str, Any]:
        if self.keeps_history:
            sent = self.adapter.request(self.listing.declaration, self.unsent, self.result.response)
            self.unsent = []
        else:
            sent = self.adapter.request(self.listing.declaration, self.result.conversation)
        bound = _bound(send)
        merged = _merged(bound, sent)
        # what the model is asked with: the conversation, the tools, and the plain settings
        # bound to send (a previous interaction's id, the model...); objects bound to it may
        # print differently in another process, and would make a retry there another turn
        plain = {key: value for key, value in bound.items() if isinstance(value, _PLAIN)}
        self.place = _place_of({**plain, **merged})
        return merged

    def heard(self, response: Any) -> None:
        self.turn += 1
        self.result.response = response

    async def execute(
        self, response: Any, naming: _Naming, principal: Any, options: Mapping[str, Any]
    ) -> Outcome | None:
        """The turn's calls run; None when the loop stops here (a call waits)."""
        named = options.get("run_id")
        if named is not None or options.get("place") is not None or "resume" in options:
            raise ConfigurationError(
                "loop(conversation=...) names each turn's run and place, and resumes a paused "
                "result itself; not run_id=, place= or resume= here"
            )
        resumed = self.resume
        self.resume = None
        if resumed is not None:  # the paused turn again: its run, place and store
            turn: dict[str, Any] = {"resume": resumed}
        else:
            place = self.place
            turn = {"run_id": naming.run_id(self.turn, place), "place": place}
        try:
            outcome = await execute_tool_calls(
                self.listing,
                response,
                principal=principal,
                taint=self.result.taint,
                provenance=self.result.provenance,
                **turn,
                **options,
            )
        except ApprovalPending as pending:
            self.result.pending = pending
            return None
        self.result.pending = None
        self.result.outcomes.append(outcome)
        self.result.taint = outcome.taint
        self.result.provenance = outcome.provenance
        return outcome

    def finished(self, response: Any, outcome: Outcome) -> bool:
        """Whether the loop ends with this turn's outcome (the followup kept when not)."""
        if not outcome.calls:
            self.result.stopped = outcome.stopped
            return True
        followup = outcome.followup(response)  # the model's turn (where the API wants it
        self.result.conversation.extend(followup)  # back), then the answers
        if self.keeps_history:
            self.unsent.extend(followup)
        if outcome.halted:
            self.result.halted = True
            return True
        return False


def _own_provenance(options: Mapping[str, Any]) -> None:
    if "provenance" in options:
        raise ConfigurationError(
            "loop keeps the conversation's provenance itself (result.provenance); give what "
            "it trusts as trusted="
        )


def _start(
    listing: Listing,
    messages: Sequence[Any] | LoopResult,
    max_turns: int,
    taint: Iterable[str],
    trusted: Iterable[Any] | None = None,
) -> _Loop:
    if not isinstance(listing, Listing):
        raise ConfigurationError("loop takes a listing: toolwire.tools(source, provider)")
    if max_turns.__class__ is not int or max_turns < 1:
        raise ConfigurationError("max_turns is a positive integer")
    if isinstance(messages, LoopResult):
        if messages.pending is None:
            raise ConfigurationError(
                "loop(..., resume): only a result that stopped on a pending approval resumes"
            )
        if messages.provider != listing.provider:
            raise ConfigurationError("this result comes from a loop of another provider")
        return _Loop(listing, messages, len(messages.outcomes) + 1)  # the paused turn's
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ConfigurationError(
            "messages is a list of the provider's messages (e.g. [{'role': 'user', ...}])"
        )
    if trusted is None:
        trusted = user_texts(list(messages))
    elif isinstance(trusted, str | bytes) or not isinstance(trusted, Iterable):
        raise ConfigurationError("trusted is a list of texts or JSON values")
    result = LoopResult(
        conversation=list(messages),
        provider=listing.provider,
        taint=frozenset(taint),
        provenance=Provenance.start().trusting(*trusted),
    )
    return _Loop(listing, result, 0, unsent=messages)


@dataclass(frozen=True)
class _Naming:
    """How a loop names each turn's run: after its conversation, or by the caller's
    callable, or not at all (a run is made only when a call waits)."""

    conversation: str | None = None
    per_turn: Callable[[int], str] | None = None

    def run_id(self, turn: int, place: str | None) -> str | None:
        if self.per_turn is not None:
            return self.per_turn(turn)
        if self.conversation is None:
            return None
        # the place tells this turn from every other of the conversation, retries aside
        return f"{self.conversation}-{turn}-{(place or uuid.uuid4().hex)[:16]}"


def _naming(conversation: str | None, run_id: str | Callable[[int], str] | None) -> _Naming:
    if conversation is not None and run_id is not None:
        raise ConfigurationError("loop takes conversation= or run_id=, not both")
    if isinstance(run_id, str):
        conversation, run_id = run_id, None  # a string names the conversation, not one run
    if conversation is not None and not isinstance(conversation, str):
        raise ConfigurationError(f"a conversation is named by a string, not {conversation!r}")
    if run_id is not None and not callable(run_id):
        raise ConfigurationError("run_id is a callable of the turn number (or a string)")
    return _Naming(conversation, run_id)


_PLAIN = (str, int, float, bool)


def _place_of(request: Mapping[str, Any]) -> str:
    """A digest of what a turn's request asks the model with (the conversation, the tools,
    the settings): the turn's place, which its run is bound to. Media bytes count as base64,
    objects of no JSON form by their text; a request that still cannot be said gets a place
    of its own (its turn then shares a run with no other)."""
    try:
        jsonable = pydantic_core.to_jsonable_python(request, fallback=str, bytes_mode="base64")
        encoded = canonical_json(jsonable).encode("utf-8", "surrogatepass")
    except Exception:  # (e.g. nested past the recursion limit)
        return uuid.uuid4().hex
    return hashlib.sha256(encoded).hexdigest()


def _bound(send: Callable[..., Any]) -> Mapping[str, Any]:
    """The keywords bound to ``send`` by ``functools.partial``."""
    keywords: dict[str, Any] = {}
    while isinstance(send, functools.partial):
        keywords = {**send.keywords, **keywords}
        send = send.func
    return keywords


def _merged(bound: Mapping[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    """``sent``, with a bound value of the same key merged in where both are settings (a
    Gemini ``config`` of the user's, which the tools join)."""
    for key, ours in list(sent.items()):
        theirs = bound.get(key)
        if theirs is None or not isinstance(ours, Mapping):
            continue
        if isinstance(theirs, Mapping):
            sent[key] = {**theirs, **ours}
        elif callable(getattr(theirs, "model_copy", None)):
            sent[key] = theirs.model_copy(update=dict(ours))
    return sent


async def _call(send: Callable[..., Any], kwargs: Mapping[str, Any]) -> Any:
    if inspect.iscoroutinefunction(send) or inspect.iscoroutinefunction(
        getattr(send, "func", None)
    ):
        return await send(**kwargs)
    made = send(**kwargs)
    return await made if inspect.isawaitable(made) else made


async def _events(stream: Any) -> AsyncIterator[Any]:
    """A stream's events, whether the SDK gave an async iterable, a plain one, or an
    awaitable of either."""
    if inspect.isawaitable(stream) and not isinstance(stream, AsyncIterable):
        stream = await stream
    if isinstance(stream, AsyncIterable):
        async for event in stream:
            yield event
        return
    for event in stream:
        yield event
