"""The two calls most programs need: :func:`tools` and :func:`execute_tool_calls`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal

import anyio

from toolwire import ledger
from toolwire.approval import ApprovalRequest, Approver, Decision
from toolwire.calls import RejectedCall, ToolCall, ToolResult, describe_exception
from toolwire.errors import ConfigurationError
from toolwire.executor import AfterHook, BeforeHook, CallOutcome, Executor
from toolwire.ledger import CallTrail
from toolwire.policy import Policy
from toolwire.providers import get_provider
from toolwire.store import RunStore, default_store
from toolwire.tool import Tool, ToolSet

__all__ = [
    "Listing",
    "Outcome",
    "decide",
    "execute_tool_calls",
    "execute_tool_calls_sync",
    "history",
    "pending",
    "tools",
]

Source = ToolSet | Iterable[Tool | Callable[..., Any]]


@dataclass(frozen=True, slots=True)
class Listing:
    """Tools declared for one provider."""

    tools: Any
    """The request fragment: the value of the request's ``tools`` (None when empty)."""
    toolset: ToolSet
    """The toolset the names were assigned in; pass it back to :func:`execute_tool_calls`."""
    null_paths: Mapping[str, Sequence[tuple[str, ...]]] = field(default_factory=dict)
    """Per exposed name, the argument paths a strict schema made nullable (empty for Gemini)."""


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


def _as_toolset(source: Any) -> ToolSet:
    as_toolset = getattr(source, "as_toolset", None)
    if callable(as_toolset):  # e.g. an MCP hub
        toolset = as_toolset()
        if not isinstance(toolset, ToolSet):
            raise ConfigurationError(f"{source!r}.as_toolset() did not return a ToolSet")
        return toolset
    return ToolSet.of(source)


def tools(source: Source | Any, provider: str, **options: Any) -> Listing:
    """Declare ``source``'s tools to ``provider`` (``"gemini"``, ...).

    ``options`` go to the provider's declare step (Gemini: ``schema``, ``backend``,
    ``native_tools``; OpenAI: ``strict``; Anthropic: ``cache_control``).
    """
    toolset = _as_toolset(source)
    adapter = get_provider(provider)
    return Listing(
        tools=adapter.declare(toolset, **options),
        toolset=toolset,
        null_paths=adapter.null_paths(toolset, **options),
    )


async def execute_tool_calls(
    source: Source | Any,
    provider: str,
    response: Any,
    *,
    toolset: ToolSet | None = None,
    principal: Any = None,
    taint: Iterable[str] = (),
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
    **answer_options: Any,
) -> Outcome:
    """Parse ``response``'s tool calls, run them through the governed pipeline, answer each.

    Args:
        source: the tools (a ToolSet, a list of tools or functions, or an MCP hub).
        provider: the provider name the response comes from.
        response: the provider's response, as a dict or its SDK's object.
        toolset: the toolset of the :class:`Listing` the model saw (so names resolve the
            same); built from ``source`` when None.
        principal: who the turn runs for.
        taint: sources whose output is already in the model's context.
        run_id: names the turn so a retry answers completed calls from the store.
        approver, policy, timeout, on_unknown, before_call, after_call, on_interrupted,
            wait_for_running: see :class:`Executor`.
        store: the run store; the process-wide in-memory store when None.
        executor: a configured executor to use instead of the options above.
        answer_options: passed to the provider's answer step (Gemini: ``structured``,
            ``media``).

    Returns:
        One answer per call in ``outcome.results``, in the model's order, rejected calls
        included.

    Raises:
        ApprovalPending: some calls wait for a decision (see :func:`decide`).
        StoreUnavailable: the run store failed (its ``outcomes`` hold every call's answer when
            it failed after the first call ran).
    """
    adapter = get_provider(provider)
    if executor is None:
        executor = Executor(
            toolset if toolset is not None else _as_toolset(source),
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
    items = adapter.parse(response, toolset if toolset is not None else executor.toolset)
    outcomes = await executor.run(items, run_id=run_id, principal=principal, taint=taint)
    results = [_answer(adapter.answer, outcome, answer_options) for outcome in outcomes]
    halted = any(outcome.halted for outcome in outcomes)
    return Outcome(results=results, halted=halted, calls=outcomes, run_id=run_id)


def _answer(answer: Callable[..., Any], outcome: CallOutcome, options: Mapping[str, Any]) -> Any:
    item = outcome.item
    if isinstance(item, RejectedCall):
        return item.answer
    assert isinstance(item, ToolCall)
    try:
        return answer(item, outcome.result, **options)
    except Exception as exc:  # the call keeps an answer, saying its result could not be shaped
        failure = ToolResult.error(
            "failed",
            f"The call's result could not be shaped for the provider "
            f"({describe_exception(exc)[:300]}).",
        )
        try:
            return answer(item, failure, **options)
        except Exception:  # not the result: the options (or the provider) are wrong
            raise ConfigurationError(
                f"the provider's answer step failed: {describe_exception(exc)}"
            ) from exc


def execute_tool_calls_sync(
    source: Source | Any, provider: str, response: Any, **options: Any
) -> Outcome:
    """:func:`execute_tool_calls` for programs without an event loop.

    Raises:
        ConfigurationError: when called from inside a running event loop (await
            :func:`execute_tool_calls` there instead).
    """
    try:
        anyio.get_current_task()
    except RuntimeError:  # no event loop here: the sync wrapper may run one
        return anyio.run(partial(execute_tool_calls, source, provider, response, **options))
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
    waits in ``run_id`` (see :func:`pending`).

    ``allow(arguments=...)`` approves with edited arguments: they are checked against the
    tool's schema now (invalid ones raise :class:`~toolwire.errors.InvalidArguments` and
    record nothing) and the call runs with them. Uses the process-wide store unless ``store``
    is given (it must be the store the turn ran with).

    Raises:
        InvalidArguments: edited arguments that do not fit the tool's schema.
        ToolwireError: the run has no such call waiting, or its request expired.
        StoreUnavailable: the run store cannot be reached.
    """
    await ledger.decide(_store_or_default(store), run_id, call_id, decision, by=by)


async def pending(
    *,
    store: RunStore | None = None,
    principal: Any = None,
    run_id: str | None = None,
    limit: int = 100,
) -> list[ApprovalRequest]:
    """The calls waiting for a decision, across runs, oldest request first: what an approval
    screen lists. Only ``principal``'s (compared by JSON form), or ``run_id``'s, when given.

    Each request carries what the run kept: exposed name, server and tool name, arguments (as
    the executor's ``redact`` left them), principal, the policy's reason, ``requested_at`` and
    ``expires_at``; its ``tool`` is None. ``request.to_dict()`` is its JSON form.
    """
    return await ledger.pending(
        _store_or_default(store), principal=principal, run_id=run_id, limit=limit
    )


async def history(run_id: str, *, store: RunStore | None = None) -> list[CallTrail]:
    """Each call of ``run_id`` with its trail: requested, decided (by, at, reason, edited or
    not), claimed (worker), finished (state, error kind, duration)."""
    return await ledger.history(_store_or_default(store), run_id)


def _store_or_default(store: RunStore | None) -> RunStore:
    return store if store is not None else default_store()
