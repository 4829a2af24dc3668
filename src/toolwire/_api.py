"""The two calls most programs need: [`tools`][] and [`execute_tool_calls`][]."""

from __future__ import annotations

import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, Literal, cast

import anyio

from toolwire._values import describe_exception
from toolwire.approval import ApprovalPending, ApprovalRequest, Approver, Decision
from toolwire.calls import RejectedCall, ToolCall, ToolResult
from toolwire.errors import ConfigurationError, RunNotFound, ToolwireWarning
from toolwire.inputs import InputAnswer
from toolwire.pipeline.executor import AfterHook, BeforeHook, CallOutcome, Executor
from toolwire.policy import Policy, warn_unmatched_rules
from toolwire.provenance import Provenance, result_output
from toolwire.providers import (
    Declaration,
    Stopped,
    declaration_for,
    get_provider,
    make_options,
)
from toolwire.runs import ledger
from toolwire.runs.ledger import CallTrail
from toolwire.runs.store import QueuePlace, RunStore, default_store
from toolwire.sources import is_tool_source, named_tools
from toolwire.tool import Tool, taints_of
from toolwire.toolset import ToolSet

__all__ = [
    "Listing",
    "Outcome",
    "ParsedTurn",
    "decide",
    "execute_tool_calls",
    "execute_tool_calls_sync",
    "history",
    "parse_turn",
    "pending",
    "tools",
]

Source = ToolSet | Tool | Iterable[Tool | Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class Listing:
    """Tools declared for one provider: what the model is shown, and what its calls are
    parsed against (pass the listing to [`execute_tool_calls`][])."""

    declaration: Declaration
    principal: Any = None
    """Who the listing was made for (its tools are those the policy does not deny them); the
    turn's principal when [`execute_tool_calls`][] is given none."""
    policy: Policy | None = None
    """The policy the listing was made under; the turn's when none is given."""
    source: Any = field(default=None, repr=False, compare=False)
    """What the tools came from, when it can change (an MCP hub): a call resolves to the tool
    as it is now, so a definition that changed since the listing is asked about again."""

    @property
    def tools(self) -> Any:
        """The request fragment: the value of the request's ``tools`` (None when empty)."""
        return self.declaration.tools

    @property
    def toolset(self) -> ToolSet:
        """The toolset the names were assigned in."""
        return self.declaration.toolset

    @property
    def provider(self) -> str:
        return self.declaration.provider

    @property
    def null_paths(self) -> Mapping[str, Sequence[tuple[str, ...]]]:
        """Per exposed name, the argument paths a strict schema made nullable (OpenAI only)."""
        return self.declaration.null_paths

    @property
    def left_out(self) -> Mapping[str, str]:
        """Tools not declared to this principal, by exposed name, and why."""
        return self.declaration.left_out

    def tool_choice(
        self,
        allowed: Sequence[str] | None = None,
        *,
        mode: Literal["auto", "required", "none"] = "auto",
    ) -> Any:
        """The request's tool-choice setting for this listing's provider: whether the model
        may call a tool (``auto``), must (``required``) or may not (``none``), over every
        declared tool or only those ``allowed`` (exposed names). Narrowing a turn this way
        leaves the declared tools as they are, so a cached prompt prefix holds.

        Where it goes: OpenAI's ``tool_choice`` (``allowed_tools``), Anthropic's
        ``tool_choice`` (which narrows only to one tool the model must call), Gemini's
        ``tool_config`` (``allowedFunctionNames``, ``VALIDATED`` for ``auto``) and the
        Interactions API's ``generation_config.tool_choice``.

        Raises:
            ConfigurationError: a choice the provider cannot express, or a name not declared.
        """
        return get_provider(self.provider).tool_choice(self.declaration, allowed, mode)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The answers to one turn's calls."""

    results: list[Any]
    """The provider-shaped answers, one per call, in the model's order."""
    halted: bool
    """True when an approver answered deny-and-halt: answer the model, then stop the loop."""
    calls: list[CallOutcome]
    """How each call ended, in the same order as ``results``."""
    run_id: str | None = None
    provider: str | None = None
    """The provider the response came from."""
    taint: frozenset[str] = frozenset()
    """Every source whose output is now in the model's context: the turn's own ``taint``
    and the taints of the tools whose output this turn's answers carry (a server's tools
    taint with the server's name; see ``Tool.taints``). Pass it as the next turn's
    ``taint``."""
    stopped: Stopped | None = None
    """For a response with no calls: why it holds no answer, when it was blocked (a safety
    filter), refused by the model, or empty. None for an ordinary final answer."""
    provenance: Provenance | None = None
    """What the model has read and was trustingly told, this turn's answers included (see
    [`toolwire.provenance`][]); None when the turn kept none. Pass it as the next turn's
    ``provenance``."""

    def followup(self, response: Any) -> list[Any]:
        """What to append to the conversation after ``response`` (the model's turn these
        answers answer): the model's turn, then the answers, in the provider's own shape.

        Gemini: the model content and a user content of ``functionResponse`` parts;
        Anthropic: the assistant message and a user message of ``tool_result`` blocks;
        OpenAI Chat: the assistant message and the ``tool`` messages; Responses: the output
        items and the ``function_call_output`` items.
        """
        if self.provider is None:
            raise ConfigurationError("this outcome does not know its provider")
        ids = [outcome.item.local_id for outcome in self.calls]
        return get_provider(self.provider).followup(response, self.results, ids)


@dataclass(frozen=True, slots=True)
class ParsedTurn:
    """A model response's calls, parsed against what was declared: the first step of a turn
    on every surface (``execute_tool_calls``, ``toolwire.loop``, an engine's workflow). The
    pipeline runs ``items`` (an [`Executor`][toolwire.executor.Executor], or an engine's
    tickets), and [`answer`][toolwire.ParsedTurn.answer] shapes their outcomes for the
    provider."""

    declaration: Declaration
    """What the model was shown, with the answer options of this turn."""
    items: list[ToolCall | RejectedCall]
    """One per call item of the response, in the model's order; a call that can never run
    (an unknown tool, arguments that are not an object, a repeated id) is a
    ``RejectedCall`` carrying its answer."""
    response: Any
    """The response as given."""

    @property
    def provider(self) -> str:
        """The provider the response came from."""
        return self.declaration.provider

    def answer(
        self,
        outcomes: Sequence[CallOutcome],
        *,
        taint: Iterable[str] = (),
        run_id: str | None = None,
        provenance: Provenance | None = None,
    ) -> Outcome:
        """The turn's [`Outcome`][]: each call's outcome shaped for the provider, inside its
        own failure boundary (a result that cannot be shaped is answered as failed).

        Args:
            outcomes: one per item, in order (what the pipeline returned).
            taint: the turn's own taint (what was in the model's context before it).
            run_id: the run the turn's calls are kept in.
            provenance: the turn's own provenance (what the model had read and was told
                before it): the outcome's adds what this turn's answers carry.

        Raises:
            ConfigurationError: not one outcome per item, or the provider's answer step
                itself fails (its options are wrong).
        """
        if len(outcomes) != len(self.items):
            raise ConfigurationError(
                f"{len(outcomes)} outcomes for a turn of {len(self.items)} calls: each call is "
                "answered once"
            )
        adapter = get_provider(self.provider)
        options = self.declaration.options
        return Outcome(
            results=[_answer(adapter.answer, outcome, options) for outcome in outcomes],
            halted=any(outcome.halted for outcome in outcomes),
            calls=list(outcomes),
            run_id=run_id,
            provider=self.provider,
            taint=frozenset(taint) | _taints(outcomes),
            stopped=None if self.items else adapter.stopped(self.response),
            provenance=None if provenance is None else _read(provenance, outcomes),
        )


def parse_turn(listing: Listing, response: Any, **answer_options: Any) -> ParsedTurn:
    """Parse ``response``'s calls against exactly what ``listing`` declared: the first step of
    [`execute_tool_calls`][], for an engine that runs the rest itself (a workflow that plans
    the turn, runs each ticket in a step of its own, then answers with
    [`ParsedTurn.answer`][toolwire.ParsedTurn.answer]). Pure: the same response parses to
    the same items on every replay.

    Raises:
        MalformedResponse: the response is not the provider's shape, or is broken.
        ConfigurationError: ``listing`` is not a listing, or an answer option is unknown or
            was fixed when the tools were declared.
    """
    if not isinstance(listing, Listing):
        raise ConfigurationError(f"parse_turn takes a toolwire.tools listing, not {listing!r}")
    return _parsed(listing, (response,), None, answer_options)


def _parsed(
    source: Any, args: tuple[Any, ...], toolset: ToolSet | None, answer_options: dict[str, Any]
) -> ParsedTurn:
    """The turn's response parsed against its declaration, its calls resolved to the tools as
    they are now."""
    declaration, response = _declaration(source, args, toolset, answer_options)
    items = get_provider(declaration.provider).parse(response, declaration)
    if isinstance(source, Listing) and source.source is not None:
        items = _current(items, source.source)
    return ParsedTurn(declaration, items, response)


def _as_toolset(source: Any) -> ToolSet:
    if is_tool_source(source):  # e.g. an MCP hub
        toolset = source.as_toolset()
        if not isinstance(toolset, ToolSet):
            raise ConfigurationError(f"{source!r}.as_toolset() did not return a ToolSet")
        return toolset
    if isinstance(source, Listing):
        return source.toolset
    return ToolSet.of(source)


def _gone(source: Any, policy: Policy | None = None, principal: Any = None) -> dict[str, str]:
    """Tools ``source`` offered before that are gone now, by exposed name: why (an MCP hub
    knows the tools of its servers that are down). Those ``policy`` denies ``principal``
    outright are not named: they are unknown to them, up or down."""
    if not is_tool_source(source):
        return {}
    return {
        name: why
        for name, (tool, why) in source.unavailable_tools().items()
        if policy is None
        or policy.denies_outright(tool, principal=principal, exposed_name=name) is None
    }


def _current(items: list[ToolCall | RejectedCall], source: Any) -> list[ToolCall | RejectedCall]:
    """The calls resolved to ``source``'s tools as they are now: a tool whose definition
    changed since the listing (an MCP server's "rug pull") is the new one, which needs
    approval again; a tool that is gone keeps the listed one (its server answers
    ``unavailable``)."""
    live = _as_toolset(source)
    current = []
    for item in items:
        if isinstance(item, ToolCall):
            now = live.get(item.exposed_name)
            if (
                now is not None
                and now is not item.tool
                and (now.needs_approval or now.definition_hash != item.tool.definition_hash)
            ):
                item = replace(item, tool=now)
        current.append(item)
    return current


def tools(
    source: Source | Any,
    provider: str,
    *,
    principal: Any = None,
    policy: Policy | None = None,
    deferred: Iterable[str] = (),
    **options: Any,
) -> Listing:
    """Declare ``source``'s tools to ``provider`` (``"gemini"``, ...).

    Args:
        source: the tools (a ToolSet, a tool or function, a list of them, or an MCP hub).
        provider: a registered provider name (see [`toolwire.providers.provider_names`][]).
        principal: who the model works for; with ``policy``, the tools the policy denies
            them outright (whatever the arguments) are left out, in the toolset's order, so
            the list stays the same from turn to turn. Tools that merely ask stay.
        policy: the policy the turn will run under.
        deferred: glob patterns over exposed and qualified names (``"github/*"``: one
            server's tools) of tools to load on demand, beside the toolset's own deferred
            tools: where the provider has tool search they are declared with
            ``defer_loading`` and the provider's search (see ``Tool.deferred``); elsewhere
            every tool is declared in full.
        options: the provider's options (see its ``Options`` dataclass; Gemini: ``schema``,
            ``backend``, ``native_tools``; OpenAI: ``strict``; Anthropic: ``cache_control``).

    A listing above the provider's tool limit warns
    ([`ToolwireWarning`][toolwire.errors.ToolwireWarning]), and so does a rule of ``policy``
    that matches none of the tools (an ``allow`` naming a server's tool by its bare name says
    which ``server/tool`` was probably meant; see
    [`warn_unmatched_rules`][toolwire.policy.warn_unmatched_rules]).

    Raises:
        ConfigurationError: an unknown provider or option, or an option of the wrong type.
        SchemaConversionError: naming the tool whose schema cannot be declared.
    """
    adapter = get_provider(provider)
    settings = make_options(adapter, options)
    offered = toolset = _as_toolset(source).deferring(deferred)
    left_out: dict[str, str] = {}
    if policy is not None:
        for name, tool in zip(toolset.exposed_names, toolset, strict=True):
            reason = policy.denies_outright(tool, principal=principal, exposed_name=name)
            if reason is not None:
                left_out[name] = reason
        if left_out:
            toolset = toolset.without(left_out)
    declaration = adapter.declare(toolset, settings)
    if policy is not None:  # the rules are for the source's tools, and what the listing adds
        named = named_tools(offered, source)
        named += [(n, e.tool) for n, e in declaration.entries.items() if offered.get(n) is None]
        warn_unmatched_rules(policy, named, "listing")
    gone = _gone(source, policy, principal)
    if gone or left_out:
        declaration = replace(declaration, unavailable=gone, left_out=left_out)
    limit = adapter.PROFILE.max_tools
    if limit is not None and len(declaration.entries) > limit:
        warnings.warn(
            f"{len(declaration.entries)} tools are declared to {provider}, which takes at most "
            f"{limit} in one request; leave some out (ToolSet include/exclude)",
            ToolwireWarning,
            stacklevel=2,
        )
    live = source if is_tool_source(source) else None
    return Listing(declaration, principal, policy, live)


def _declaration(
    source: Any, args: tuple[Any, ...], toolset: ToolSet | None, answer_options: dict[str, Any]
) -> tuple[Declaration, Any]:
    """The declaration a turn's response is parsed against, and the response."""
    if isinstance(source, Listing):
        if len(args) == 2 and args[0] == source.provider:  # (listing, provider, response)
            args = args[1:]
        if len(args) != 1:
            raise ConfigurationError(
                "execute_tool_calls(listing, response): the provider is the listing's"
            )
        declaration = source.declaration
        adapter = get_provider(declaration.provider)
        fixed = sorted(set(answer_options) & adapter.PROFILE.declared_options)
        if fixed:
            raise ConfigurationError(
                f"{', '.join(fixed)}: fixed when the tools were declared; pass them to tools()"
            )
        if answer_options:
            declaration = replace(
                declaration,
                options=make_options(adapter, answer_options, declaration.options),
            )
        return declaration, args[0]
    if len(args) != 2:
        raise ConfigurationError(
            "execute_tool_calls takes (listing, response) or (source, provider, response)"
        )
    provider, response = args
    adapter = get_provider(provider)
    settings = make_options(adapter, answer_options)
    declared = toolset if toolset is not None else _as_toolset(source)
    declaration = declaration_for(adapter, declared, settings)
    gone = _gone(source)
    if gone:
        declaration = replace(declaration, unavailable=gone)
    return declaration, response


async def execute_tool_calls(
    source: Listing | Source | Any,
    *args: Any,
    toolset: ToolSet | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
    provenance: Provenance | None = None,
    trusted: Iterable[Any] | None = None,
    run_id: str | None = None,
    approver: Approver | Callable[[ApprovalRequest], Any] | None = None,
    policy: Policy | None = None,
    timeout: float | None = None,
    store: RunStore | None = None,
    executor: Executor | None = None,
    on_unknown: Literal["answer", "raise"] = "answer",
    before_call: Sequence[BeforeHook] = (),
    after_call: Sequence[AfterHook] = (),
    on_interrupted: Literal["error", "rerun_idempotent"] = "error",
    wait_for_running: float | None = None,
    deps: Any = None,
    place: str | None = None,
    resume: ApprovalPending | None = None,
    **answer_options: Any,
) -> Outcome:
    """Parse ``response``'s tool calls, run them through the governed pipeline, answer each.

    Call it as ``execute_tool_calls(listing, response)``: the calls are parsed against
    exactly what the listing declared (names, strictness and null paths per tool, tools
    that are gone answered ``unavailable``), for the listing's provider. The older form
    ``execute_tool_calls(source, provider, response)`` declares ``source`` itself.

    Args:
        source: a [`Listing`][]; or the tools (a ToolSet, a list of tools or functions,
            or an MCP hub).
        *args: after a listing, the provider's response (a dict or its SDK's object); after
            the tools, the provider name and then the response.
        toolset: with ``source``: the toolset the model saw, so names resolve the same
            (built from ``source`` when None).
        principal: who the turn runs for; policies, approvers, hooks and tools see it (the
            listing's principal when None).
        taint: sources whose output is already in the model's context (the previous
            outcome's ``taint``).
        provenance: what the model has read and was trustingly told (the previous
            outcome's ``provenance``; see [`toolwire.provenance`][]): the policy sees where
            each call's arguments came from. None, without ``trusted``: nothing is kept, and
            a rule asking where an argument came from holds for every call.
        trusted: trusted inputs, added to ``provenance`` (or to a new one): the user's
            words, the application's own values (texts or JSON values).
        run_id: names the turn so a retry answers completed calls from the store.
        approver: decides the calls the policy asks about (see [`Executor`][]).
        policy: which calls may run (see [`Policy`][toolwire.policy.Policy]); with a listing
            made under a policy, that one (another is a ``ConfigurationError``).
        timeout: seconds one call may take (see [`Executor`][]).
        store: the run store; the process-wide in-memory store when None.
        executor: a configured executor to use instead of the options above (giving
            both, or an executor whose policy is not the listing's, is a
            ``ConfigurationError``: nothing given is silently dropped).
        on_unknown: ``"raise"`` raises [`ToolNotFound`][toolwire.errors.ToolNotFound] for a
            call to an unknown tool instead of answering it.
        before_call: hooks run before each call (see [`Executor`][]).
        after_call: hooks run after each call (see [`Executor`][]).
        on_interrupted: what a retry does with a call interrupted mid-run (see
            [`Executor`][]).
        wait_for_running: seconds a retry waits for a call another worker runs (see
            [`Executor`][]).
        deps: the application's dependencies, handed to tools that take a
            [`CallContext`][toolwire.CallContext] (never stored).
        place: where the turn stands in its conversation (any string naming it, e.g. a
            digest of the messages the response answers): kept with the run, so its run id
            answers no other turn (see [`Executor.run`][toolwire.executor.Executor.run]).
        resume: the [`ApprovalPending`][toolwire.approval.ApprovalPending] of the turn this call
            resumes: its run id, place and store (when neither ``store`` nor ``executor`` is
            given) are the resume's, and the run must still be in the store. Without
            ``store`` and ``executor``, a ``run_id`` whose turn paused earlier in this process
            is resumed the same way.
        answer_options: the provider's answer options (Gemini: ``structured``, ``media``;
            OpenAI: ``error_prefix``).

    Returns:
        One answer per call in ``outcome.results``, in the model's order, rejected calls
        included; ``outcome.followup(response)`` is what to append to the conversation.

    Raises:
        ApprovalPending: some calls wait for a decision (see [`decide`][]).
        StoreUnavailable: the run store failed (its ``outcomes`` hold every call's answer when
            it failed after the first call ran).
        MalformedResponse: the response is not the provider's shape, or is broken.
        RunBindingConflict: ``run_id`` was started for another principal, response or place.
        RunNotFound: a resume whose run its store no longer keeps: nothing runs again.
        ConfigurationError: an unknown provider or option, or options that conflict (see
            ``executor`` and ``toolset``).
    """
    if isinstance(source, Listing) and toolset is not None:
        raise ConfigurationError(
            "execute_tool_calls(listing, response, toolset=...): the listing's toolset is the "
            "one its calls are parsed against; leave toolset out"
        )
    if executor is not None:
        _check_executor(
            executor,
            source,
            policy=policy,
            approver=approver,
            timeout=timeout,
            store=store,
            on_unknown=on_unknown,
            before_call=before_call,
            after_call=after_call,
            on_interrupted=on_interrupted,
            wait_for_running=wait_for_running,
        )
    if (
        not isinstance(source, Listing)
        and policy is not None
        and answer_options.get("tool_search") == "local"
    ):
        # declared here, the search would index every deferred tool, hidden ones too
        raise ConfigurationError(
            "tool_search='local' under a policy needs a listing: toolwire.tools(..., "
            "policy=..., principal=...), whose search names only the tools it shows"
        )
    turn = _parsed(source, args, toolset, answer_options)
    if isinstance(source, Listing):
        if principal is None:
            principal = source.principal  # the listing was made for them
        policy = _policy_of(source, policy)
    given_store = store is not None or executor is not None
    paused = _paused_turn(run_id, resume, looked_up=not given_store)
    if paused is not None:
        run_id = paused.run_id
        place = place if place is not None else paused.place
        if not given_store:
            store = paused.store()  # where the paused turn kept its run
    if executor is None:
        executor = Executor(
            turn.declaration.toolset,
            policy=policy,
            approver=approver,
            store=store if store is not None else default_store(),
            timeout=timeout,
            on_unknown=on_unknown,
            before_call=before_call,
            after_call=after_call,
            on_interrupted=on_interrupted,
            wait_for_running=wait_for_running,
        )
    taint = frozenset(taint)
    provenance = _provenance(provenance, trusted)
    try:
        outcomes = await executor.run(
            turn.items,
            run_id=run_id,
            principal=principal,
            taint=taint,
            provenance=provenance,
            deps=deps,
            place=place,
            resume=paused is not None,
        )
    except ApprovalPending as exc:
        _PAUSED.keep(exc)
        raise
    if paused is not None:
        _PAUSED.forget(paused.run_id)
    return turn.answer(outcomes, taint=taint, run_id=run_id, provenance=provenance)


def _provenance(given: Provenance | None, trusted: Iterable[Any] | None) -> Provenance | None:
    """The turn's provenance: ``given`` (or a new one), trusting ``trusted`` too."""
    if given is not None and not isinstance(given, Provenance):
        raise ConfigurationError(f"provenance is a toolwire.Provenance, not {given!r}")
    if trusted is None:
        return given
    if isinstance(trusted, str | bytes) or not isinstance(trusted, Iterable):
        raise ConfigurationError("trusted is a list of texts or JSON values")
    if given is None:
        given = Provenance.start()
    return given.trusting(*trusted)


def _read(provenance: Provenance, outcomes: Sequence[CallOutcome]) -> Provenance:
    """``provenance`` after the model reads the turn's answers: every call that ran or was
    answered from its run, of a tool not declared ``trusted``."""
    for call, result in _read_answers(outcomes):
        if not call.tool.trusted:
            provenance = provenance.reading(call.exposed_name, result_output(result.for_model()))
    return provenance


@dataclass(frozen=True, slots=True)
class _Paused:
    """A turn that paused (``ApprovalPending``): its run, its place and where it is kept."""

    run_id: str
    place: str | None
    kept_in: Callable[[], Any] | None
    """The store, by reference (None when the turn did not say)."""

    @classmethod
    def of(cls, pending: ApprovalPending) -> _Paused:
        store = pending.store
        return cls(pending.run_id, pending.place, None if store is None else _reference(store))

    def store(self) -> RunStore | None:
        """The store the run was kept in (None when not known).

        Raises:
            RunNotFound: that store is gone from this process, and the run with it.
        """
        if self.kept_in is None:
            return None
        store = self.kept_in()
        if store is None:
            raise RunNotFound(
                f"run {self.run_id!r} was kept in a store that is gone: nothing of it runs again"
            )
        return cast(RunStore, store)


class _PausedRuns:
    """The runs whose turns paused in this process, most recent last (at most ``most``): a
    turn given one of their run ids is their resume, in the store they were kept in."""

    def __init__(self, most: int = 4096) -> None:
        self.most = most
        self._runs: OrderedDict[str, _Paused] = OrderedDict()
        self._lock = threading.Lock()

    def keep(self, pending: ApprovalPending) -> None:
        kept = _Paused.of(pending)
        with self._lock:
            self._runs.pop(kept.run_id, None)
            self._runs[kept.run_id] = kept
            while len(self._runs) > self.most:
                self._runs.popitem(last=False)

    def get(self, run_id: str) -> _Paused | None:
        with self._lock:
            return self._runs.get(run_id)

    def forget(self, run_id: str) -> None:
        with self._lock:
            self._runs.pop(run_id, None)


_PAUSED = _PausedRuns()


def _reference(store: Any) -> Callable[[], Any]:
    """A weak reference to ``store`` where it takes one (a strong one where not)."""
    try:
        return weakref.ref(store)
    except TypeError:
        return lambda: store


def _paused_turn(
    run_id: str | None, resume: ApprovalPending | None, *, looked_up: bool
) -> _Paused | None:
    """The paused turn a call resumes: ``resume``'s, or (``looked_up``: the call names no
    store of its own) the one that paused under ``run_id`` in this process; None for a turn
    that resumes nothing.

    Raises:
        ConfigurationError: ``resume`` is not an ``ApprovalPending``, or names another run
            than ``run_id``.
    """
    if resume is None:
        return _PAUSED.get(run_id) if run_id is not None and looked_up else None
    if not isinstance(resume, ApprovalPending):
        raise ConfigurationError(
            f"resume is the ApprovalPending of the turn to resume, not {resume!r}"
        )
    if run_id is not None and run_id != resume.run_id:
        raise ConfigurationError(
            f"run_id {run_id!r} is not the run of the turn resumed ({resume.run_id!r})"
        )
    return _Paused.of(resume)


_EXECUTOR_OPTIONS: dict[str, Any] = {
    "policy": None,
    "approver": None,
    "timeout": None,
    "store": None,
    "on_unknown": "answer",
    "before_call": (),
    "after_call": (),
    "on_interrupted": "error",
    "wait_for_running": None,
}
"""The facade's options an executor has its own of, with their defaults."""


def _policy_of(listing: Listing, policy: Policy | None) -> Policy | None:
    """The policy a listing's calls run under: the listing's, which binds them.

    Raises:
        ConfigurationError: ``policy`` is another one.
    """
    if policy is None or listing.policy is None or policy is listing.policy:
        return policy if policy is not None else listing.policy
    raise ConfigurationError(
        "execute_tool_calls(listing, ..., policy=...): the listing was made under another "
        "policy, which binds every call parsed against it; leave policy out, or declare the "
        "tools again with tools(..., policy=...)"
    )


def _check_executor(executor: Executor, source: Any, **options: Any) -> None:
    """Refuse an ``executor=`` beside what it would ignore: options of its own, given to the
    facade too, and a listing made under a policy the executor does not apply (the listing's
    policy binds every call parsed against it).

    Raises:
        ConfigurationError: naming each conflict.
    """
    given = [
        name
        for name, value in options.items()
        # (a hook list given empty is no hook)
        if value is not None and value != _EXECUTOR_OPTIONS[name] and value != []
    ]
    if given:
        raise ConfigurationError(
            f"execute_tool_calls: {', '.join(given)} given beside executor=, which has its "
            "own; configure the Executor with them, or leave executor out"
        )
    listed_under = source.policy if isinstance(source, Listing) else None
    if listed_under is not None and executor.policy is not listed_under:
        raise ConfigurationError(
            "execute_tool_calls: the listing was made under a policy the executor does not "
            "apply; build the executor with Executor(..., policy=listing.policy), or leave "
            "executor out"
        )


def _taints(outcomes: Sequence[CallOutcome]) -> frozenset[str]:
    """The taints of the tools whose output this turn's answers carry (``_read_answers``)."""
    found: set[str] = set()
    for call, _ in _read_answers(outcomes):
        found.update(taints_of(call.tool))
    return frozenset(found)


def _read_answers(outcomes: Sequence[CallOutcome]) -> Iterator[tuple[ToolCall, ToolResult]]:
    """Each call whose tool's output the turn's answers carry, with its result: every call
    the turn ran, whatever its answer says (a tool's own error can quote what it read), and
    every answer the run had kept."""
    for outcome in outcomes:
        item = outcome.item
        if isinstance(item, ToolCall) and (outcome.ran or outcome.from_store):
            yield item, outcome.result


def _answer(answer: Callable[..., Any], outcome: CallOutcome, options: Any) -> Any:
    item = outcome.item
    if isinstance(item, RejectedCall):
        return item.answer
    assert isinstance(item, ToolCall)
    try:
        return answer(item, outcome.result.for_model(), options)
    except Exception as exc:  # the call keeps an answer, saying its result could not be shaped
        failure = ToolResult.error(
            "failed",
            f"The call's result could not be shaped for the provider "
            f"({describe_exception(exc)[:300]}).",
        )
        try:
            return answer(item, failure, options)
        except Exception:  # not the result: the options (or the provider) are wrong
            raise ConfigurationError(
                f"the provider's answer step failed: {describe_exception(exc)}"
            ) from exc


def execute_tool_calls_sync(source: Listing | Source | Any, *args: Any, **options: Any) -> Outcome:
    """[`execute_tool_calls`][] for programs without an event loop.

    Raises:
        ConfigurationError: when called from inside a running event loop (await
            [`execute_tool_calls`][] there instead).
    """
    try:
        anyio.get_current_task()
    except RuntimeError:  # no event loop here: the sync wrapper may run one
        return anyio.run(partial(execute_tool_calls, source, *args, **options))
    raise ConfigurationError(
        "execute_tool_calls_sync was called inside an event loop; await execute_tool_calls instead"
    )


async def decide(
    run_id: str,
    call_id: str,
    decision: Decision,
    *,
    store: RunStore | None = None,
    by: Any = None,
) -> None:
    """Record a decision, who made it (``by``, any JSON value) and when, for a call that
    waits in ``run_id`` (see [`pending`][]).

    ``allow(arguments=...)`` approves with edited arguments: they are checked against the
    tool's schema now (invalid ones raise [`InvalidArguments`][toolwire.errors.InvalidArguments] and
    record nothing) and the call runs with them. Uses the process-wide store unless ``store``
    is given (it must be the store the turn ran with).

    Raises:
        InvalidArguments: edited arguments that do not fit the tool's schema.
        ToolwireError: the run has no such call waiting, or its request expired.
        StoreUnavailable: the run store cannot be reached.
    """
    await ledger.decide(_store_or_default(store), run_id, call_id, decision, by=by)


async def respond(
    run_id: str,
    call_id: str,
    content: Mapping[str, Any] | None = None,
    *,
    action: Literal["accept", "decline", "cancel"] = "accept",
    key: str | None = None,
    round: str | None = None,
    store: RunStore | None = None,
    by: Any = None,
) -> None:
    """Answer a question the MCP server of a waiting call asked (its request's ``input``, see
    [`pending`][]): accept with the form's ``content``, or ``action="decline"`` /
    ``"cancel"``. ``key`` names the question when the call waits on several; ``round`` (the
    question's) makes sure the answer goes to the question shown, not to one the server asked
    again since (with the same key) after an earlier answer resumed the call. Once every
    question is answered, running the same calls again with the same run id continues the
    server's call with the answers, in any process using the same store.

    The content is checked against the server's requested schema now: content that does not
    fit raises and records nothing. Uses the process-wide store unless ``store`` is given.

    Raises:
        InvalidArguments: the content does not fit the requested schema.
        ToolwireError: the run has no such call waiting for input, the question is already
            answered otherwise, or the request expired.
        StoreUnavailable: the run store cannot be reached.
    """
    answer = InputAnswer(action, dict(content) if content is not None else None)
    await ledger.respond(
        _store_or_default(store), run_id, call_id, answer, key=key, round=round, by=by
    )


async def pending(
    *,
    store: RunStore | None = None,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
    newest_first: bool = False,
    after: QueuePlace | None = None,
) -> list[ApprovalRequest]:
    """The calls waiting for a decision, across runs, oldest request first (newest first with
    ``newest_first``): what an approval screen lists. Only ``principal``'s (compared by JSON
    form), or ``run_id``'s, when given. The next page starts after the last request of this
    one: ``after=QueuePlace.of(requests[-1])`` (keyset pagination, one range of the store's
    index however deep; a page may be shorter than ``limit`` when requests in it expired).

    Each request carries what the run kept: exposed name, server and tool name, arguments (as
    the executor's ``redact`` left them), principal, the policy's reason, ``requested_at`` and
    ``expires_at``; its ``tool`` is None. ``request.to_dict()`` is its JSON form.
    """
    return await ledger.pending(
        _store_or_default(store),
        principal=principal,
        run_id=run_id,
        limit=limit,
        newest_first=newest_first,
        after=after,
    )


async def history(run_id: str, *, store: RunStore | None = None) -> list[CallTrail]:
    """Each call of ``run_id`` with its trail: requested, decided (by, at, reason, edited or
    not), claimed (worker), finished (state, error kind, duration)."""
    return await ledger.history(_store_or_default(store), run_id)


def _store_or_default(store: RunStore | None) -> RunStore:
    return store if store is not None else default_store()
