"""A tool raising CancelledError itself, and the application's own code failing (hooks, the
policy, the approver): each is the call's answer; the turn, its other calls and real
cancellations are unaffected."""

from __future__ import annotations

import asyncio
from typing import Any

import anyio
import pytest
from provider_turns import PROVIDERS, answer_text, response_for

from toolwire import (
    CallbackApproval,
    ConfigurationError,
    Executor,
    Policy,
    Rule,
    SQLiteStore,
    Tool,
    ToolSet,
    execute_tool_calls,
    make_call,
)

pytestmark = pytest.mark.anyio


async def _cancels_itself() -> str:
    raise asyncio.CancelledError  # no cancel scope asked for this


def _cancels_itself_in_a_thread() -> str:
    raise asyncio.CancelledError


async def _fine() -> str:
    return "fine"


async def _slow() -> str:
    await anyio.sleep(60)
    return "never"


TOOLS = ToolSet(
    [
        Tool(name="cancels_itself", handler=_cancels_itself),
        Tool(name="cancels_itself_in_a_thread", handler=_cancels_itself_in_a_thread),
        Tool(name="fine", handler=_fine),
        Tool(name="slow", handler=_slow),
    ]
)


@pytest.mark.parametrize("name", ["cancels_itself", "cancels_itself_in_a_thread"])
async def test_a_tool_raising_cancelled_error_alone_fails_as_its_call(name: str) -> None:
    executor = Executor(TOOLS)
    (outcome,) = await executor.run([make_call(TOOLS, name, {}, call_id="c1")])
    assert outcome.result.error_kind == "failed"
    assert "CancelledError" in outcome.result.text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_tool_raising_cancelled_error_does_not_cancel_its_siblings(provider: str) -> None:
    calls = [("fine", {}, "c1"), ("cancels_itself", {}, "c2"), ("fine", {}, "c3")]
    outcome = await execute_tool_calls(TOOLS, provider, response_for(provider, calls))
    assert [c.result.error_kind for c in outcome.calls] == [None, "failed", None]
    assert "fine" in answer_text(outcome.results[2])


async def test_a_tool_cancelling_itself_in_a_stored_run_leaves_no_claim(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        executor = Executor(TOOLS, store=store)
        await executor.run([make_call(TOOLS, "cancels_itself", {}, call_id="c1")], run_id="r")
        record = await store.get("r", "c1")
        assert record is not None
        assert record.state == "failed"
    finally:
        store.close()


@pytest.mark.parametrize("calls", [["slow"], ["slow", "fine"]])
async def test_a_real_cancellation_of_the_caller_still_cancels(calls: list[str]) -> None:
    executor = Executor(TOOLS)
    items = [make_call(TOOLS, n, {}, call_id=f"c{i}") for i, n in enumerate(calls)]
    with anyio.move_on_after(0.05) as scope:
        await executor.run(items)
    assert scope.cancelled_caught  # the cancellation reached the caller, not turned into answers


# -- the application's own code failing ------------------------------------------------------


def _boom(*_: Any) -> Any:
    raise RuntimeError("hook bug")


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("turn", [["fine"], ["fine", "fine", "fine"]])
async def test_an_after_hook_that_raises_withholds_only_its_calls_result(
    provider: str, turn: list[str]
) -> None:
    calls = [(n, {}, f"c{i}") for i, n in enumerate(turn)]

    def redact_first(context: Any, result: Any) -> Any:
        if context.call.call_id == "c0":
            raise RuntimeError("redactor down")
        return None

    outcome = await execute_tool_calls(
        TOOLS, provider, response_for(provider, calls), after_call=[redact_first]
    )
    assert len(outcome.results) == len(turn)
    first = answer_text(outcome.results[0])
    assert "withheld" in first
    assert "redactor down" in first
    assert "fine" not in first  # the unredacted result never reaches the model
    for answer in outcome.results[1:]:
        assert "fine" in answer_text(answer)


async def test_a_before_hook_that_raises_stops_only_its_call() -> None:
    ran: list[str] = []

    async def record(name: str) -> str:
        ran.append(name)
        return name

    toolset = ToolSet(
        [
            Tool(
                name="record",
                handler=record,
                input_schema={"type": "object", "properties": {"name": {"type": "string"}}},
            )
        ]
    )

    def hook(context: Any) -> Any:
        if context.arguments["name"] == "b":
            raise ValueError("nope")
        return None

    outcome = await execute_tool_calls(
        toolset,
        "anthropic",
        response_for("anthropic", [("record", {"name": n}, n) for n in "abc"]),
        before_call=[hook],
    )
    assert ran == ["a", "c"]
    assert outcome.calls[1].result.error_kind == "failed"
    assert "before-call hook" in outcome.calls[1].result.text


async def test_a_before_hook_returning_garbage_stops_only_its_call() -> None:
    outcome = await execute_tool_calls(
        TOOLS,
        "anthropic",
        response_for("anthropic", [("fine", {}, "a"), ("fine", {}, "b")]),
        before_call=[lambda context: 42 if context.call.call_id == "a" else None],
    )
    assert [c.result.error_kind for c in outcome.calls] == ["failed", None]


async def test_a_policy_that_raises_denies() -> None:
    class Broken(Policy):
        def evaluate(self, context: Any) -> Any:
            raise KeyError("rules table")

    outcome = await execute_tool_calls(
        TOOLS,
        "anthropic",
        response_for("anthropic", [("fine", {}, "a")]),
        policy=Broken(Rule("allow", "*")),
    )
    assert outcome.calls[0].result.error_kind == "denied"
    assert "could not be evaluated" in outcome.calls[0].result.text


async def test_a_rule_condition_that_raises_fails_closed() -> None:
    policy = Policy(Rule("deny", "fine", when=lambda context: 1 / 0))  # type: ignore[arg-type, return-value]
    outcome = await execute_tool_calls(
        TOOLS, "anthropic", response_for("anthropic", [("fine", {}, "a")]), policy=policy
    )
    assert outcome.calls[0].result.error_kind == "denied"


async def test_an_approver_that_raises_denies_and_the_turn_goes_on() -> None:
    policy = Policy(Rule("ask", "slow"))

    def approver(request: Any) -> Any:
        raise ConnectionError("approval service down")

    outcome = await execute_tool_calls(
        TOOLS,
        "anthropic",
        response_for("anthropic", [("slow", {}, "a"), ("fine", {}, "b")]),
        policy=policy,
        approver=approver,
    )
    assert [c.result.error_kind for c in outcome.calls] == ["approval_denied", None]
    assert "approver failed" in outcome.calls[0].result.text


async def test_an_approver_returning_garbage_is_a_configuration_error() -> None:
    policy = Policy(Rule("ask", "fine"))
    for approver in (lambda request: "yes", CallbackApproval(lambda request: "yes")):
        with pytest.raises(ConfigurationError):
            await execute_tool_calls(
                TOOLS,
                "anthropic",
                response_for("anthropic", [("fine", {}, "a")]),
                policy=policy,
                approver=approver,
            )


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_only_toolwire_errors_leave_a_turn_whose_code_all_fails(provider: str) -> None:
    """Every piece of the application's code raising at once: still one answer per call."""

    def bad_tool() -> None:
        raise MemoryError("pretend")

    toolset = ToolSet([Tool(name="bad", handler=bad_tool), *TOOLS])
    calls = [("bad", {}, "a"), ("cancels_itself", {}, "b"), ("fine", {}, "c")]
    outcome = await execute_tool_calls(
        toolset,
        provider,
        response_for(provider, calls),
        before_call=[lambda context: None],
        after_call=[_boom],
    )
    assert len(outcome.results) == 3
    assert all(c.result.is_error for c in outcome.calls)
