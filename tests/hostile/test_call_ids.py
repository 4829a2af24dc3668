"""Ids are unique per response: a call never gets another call's answer, whatever ids the model
sends (shared, missing, or equal to one toolwire would generate); and on the executor's side a
stored record answers a call only when it is that call's, and a turn never runs two calls under
one id."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_turns import PROVIDERS, answer_text, answered_id, is_error_answer, parse, response_for

from toolwire import (
    Executor,
    MemoryStore,
    RejectedCall,
    ToolCall,
    ToolResult,
    ToolSet,
    execute_tool_calls,
    execute_tool_calls_sync,
    make_call,
    tool,
)
from toolwire.calls import stable_call_id
from toolwire.store import CallRecord

PAID: list[int] = []


@tool
def pay(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


TOOLS = ToolSet([pay])


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    PAID.clear()


def generated(amount: int, occurrence: int = 1) -> str:
    """The id toolwire derives for the n-th id-less ``pay(amount)``."""
    return stable_call_id("pay", {"amount": amount}, occurrence)


# -- the reproduction --------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("run_id", [None, "turn-1"])
async def test_two_tool_use_blocks_sharing_an_id_never_get_each_others_result(
    run_id: str | None,
) -> None:
    response = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_1", "name": "pay", "input": {"amount": 3}},
            {"type": "tool_use", "id": "toolu_1", "name": "pay", "input": {"amount": 4}},
        ],
    }
    outcome = await execute_tool_calls(
        TOOLS, "anthropic", response, store=MemoryStore(), run_id=run_id
    )
    first, second = outcome.results
    assert first == {"type": "tool_result", "tool_use_id": "toolu_1", "content": "paid 3"}
    assert second["tool_use_id"] == "toolu_1"  # the API wants an answer for every block
    assert second["is_error"] is True
    assert "paid" not in second["content"]
    assert "also the id of an earlier call" in second["content"]
    assert PAID == [3]  # pay(4) did not run, and was not told it did


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_shared_id_runs_the_first_call_and_answers_the_later_ones(provider: str) -> None:
    calls = [("pay", {"amount": 1}, "x"), ("pay", {"amount": 2}, "x"), ("pay", {"amount": 3}, "x")]
    outcome = await execute_tool_calls(
        TOOLS, provider, response_for(provider, calls), store=MemoryStore()
    )
    assert [answered_id(a) for a in outcome.results] == ["x", "x", "x"]
    assert "paid 1" in answer_text(outcome.results[0])
    assert [is_error_answer(a) for a in outcome.results] == [False, True, True]
    assert [c.result.error_kind for c in outcome.calls[1:]] == ["invalid_arguments"] * 2
    assert PAID == [1]


# -- generated ids ---------------------------------------------------------------------------------


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("model_id_first", [True, False])
def test_a_model_id_equal_to_a_generated_one_does_not_collide(
    provider: str, model_id_first: bool
) -> None:
    id_less = ("pay", {"amount": 3}, None)
    with_id = ("pay", {"amount": 4}, generated(3))  # the id the first would be given
    calls = [with_id, id_less] if model_id_first else [id_less, with_id]
    items = parse(provider, response_for(provider, calls), TOOLS)
    assert all(isinstance(item, ToolCall) for item in items)
    by_amount = {item.arguments["amount"]: item for item in items if isinstance(item, ToolCall)}
    assert by_amount[4].local_id == generated(3)
    assert by_amount[3].local_id not in (generated(3), None)
    assert by_amount[3].call_id is None
    outcome = execute_tool_calls_sync(
        TOOLS, provider, response_for(provider, calls), store=MemoryStore()
    )
    texts = [answer_text(a) for a in outcome.results]
    expected = ["paid 4", "paid 3"] if model_id_first else ["paid 3", "paid 4"]
    assert [e in t for e, t in zip(expected, texts, strict=True)] == [True, True]
    assert sorted(PAID) == [3, 4]


@pytest.mark.parametrize(
    ("provider", "model_ids"),
    [
        ("anthropic", ["toolu_missing_0", "toolu_missing_1"]),
        ("openai-responses", ["call_0", "call_1"]),
    ],
)
def test_the_old_positional_ids_are_just_ids(provider: str, model_ids: list[str]) -> None:
    calls = [
        ("pay", {"amount": 1}, None),
        ("pay", {"amount": 2}, model_ids[0]),
        ("pay", {"amount": 3}, None),
        ("pay", {"amount": 4}, model_ids[1]),
    ]
    outcome = execute_tool_calls_sync(
        TOOLS, provider, response_for(provider, calls), store=MemoryStore()
    )
    ids = [answered_id(a) for a in outcome.results]
    assert len(set(ids)) == 4
    assert ids[1::2] == model_ids
    assert [answer_text(a) for a in outcome.results] == [f"paid {n}" for n in (1, 2, 3, 4)]
    assert sorted(PAID) == [1, 2, 3, 4]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_many_identical_id_less_calls_get_distinct_ids_that_a_retry_gets_again(
    provider: str,
) -> None:
    response = response_for(provider, [("pay", {"amount": 1}, None)] * 50)
    first = parse(provider, response, TOOLS)
    again = parse(provider, response, TOOLS)
    ids = [item.local_id for item in first if isinstance(item, ToolCall)]
    assert len(set(ids)) == 50
    assert ids == [item.local_id for item in again if isinstance(item, ToolCall)]
    assert ids == [generated(1, n) for n in range(1, 51)]
    outcome = execute_tool_calls_sync(TOOLS, provider, response, store=MemoryStore())
    assert all("paid 1" in answer_text(a) for a in outcome.results)
    assert PAID == [1] * 50
    answer_ids = [answered_id(a) for a in outcome.results]
    if provider == "gemini":  # an id Gemini did not send is never sent back
        assert answer_ids == [None] * 50
    else:
        assert answer_ids == ids


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
def test_a_rejected_id_less_call_answers_with_an_id_of_its_own(provider: str) -> None:
    calls = [("nope", {}, None), ("nope", {}, None), ("pay", {"amount": 1}, None)]
    items = parse(provider, response_for(provider, calls), TOOLS)
    assert [type(item) for item in items] == [RejectedCall, RejectedCall, ToolCall]
    ids = [answered_id(item.answer) for item in items if isinstance(item, RejectedCall)]
    ids.append(items[2].local_id)  # type: ignore[union-attr]
    assert len(set(ids)) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
async def test_a_retried_turn_answers_every_call_from_the_store_without_running_it(
    provider: str,
) -> None:
    calls = [
        ("pay", {"amount": 1}, None),
        ("pay", {"amount": 1}, None),
        ("pay", {"amount": 2}, "dup"),
        ("pay", {"amount": 5}, "dup"),
        ("pay", {"amount": 7}, generated(1, 3)),
    ]
    response = response_for(provider, calls)
    store = MemoryStore()
    first = await execute_tool_calls(TOOLS, provider, response, store=store, run_id="r")
    again = await execute_tool_calls(TOOLS, provider, response, store=store, run_id="r")
    assert again.results == first.results
    assert sorted(PAID) == [1, 1, 2, 7]
    texts = [answer_text(a) for a in first.results]
    for n, text in zip((1, 1, 2, 7), texts[:3] + texts[4:], strict=True):
        assert f"paid {n}" in text
    assert is_error_answer(first.results[3])
    assert "paid" not in texts[3]


# -- any ids at all --------------------------------------------------------------------------------

id_choices = st.sampled_from(["a", "b", None, "generated 1", "generated 2"])
turns = st.lists(st.tuples(st.integers(0, 3), id_choices), max_size=6)


def sent_id(choice: str | None) -> str | None:
    if choice is not None and choice.startswith("generated"):
        return generated(int(choice.split()[1]))  # as toolwire would name pay(n)
    return choice


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PROVIDERS), turns, st.sampled_from([None, "run"]))
def test_every_call_gets_one_answer_of_its_own(
    provider: str, turn: list[tuple[int, str | None]], run_id: str | None
) -> None:
    PAID.clear()
    calls = [("pay", {"amount": amount}, sent_id(choice)) for amount, choice in turn]
    outcome = execute_tool_calls_sync(
        TOOLS, provider, response_for(provider, calls), store=MemoryStore(), run_id=run_id
    )
    assert len(outcome.results) == len(calls)
    seen: set[str] = set()
    generated_ids: list[Any] = []
    ran = []
    for (_, arguments, call_id), answer in zip(calls, outcome.results, strict=True):
        if call_id is not None and call_id in seen:  # a later duplicate: answered, not run
            assert is_error_answer(answer)
            assert answered_id(answer) == call_id
            assert "paid" not in answer_text(answer)
            continue
        if call_id is not None:
            seen.add(call_id)
            assert answered_id(answer) == call_id
        elif provider == "gemini":
            assert answered_id(answer) is None
        else:
            generated_ids.append(answered_id(answer))
        assert not is_error_answer(answer)
        assert f"paid {arguments['amount']}" in answer_text(answer)  # its own result
        ran.append(arguments["amount"])
    sent = {call_id for _, _, call_id in calls if call_id is not None}
    assert len(set(generated_ids)) == len(generated_ids)
    assert not sent & set(generated_ids)
    assert sorted(PAID) == sorted(ran)


# -- the executor's side: a stored record answers a call only when it is that call's ------------


class RecordArrivesAfterPlanning(MemoryStore):
    """A store where another worker writes a call's record between this worker's planning read
    and its claim (the planning read sees nothing)."""

    async def load(
        self, run_id: str, call_ids: Sequence[str]
    ) -> tuple[str | None, list[CallRecord | None]]:
        return None, [None for _ in call_ids]


@pytest.mark.anyio
async def test_a_claim_lost_to_another_calls_record_is_not_answered_from_it() -> None:
    store = RecordArrivesAfterPlanning()
    other = CallRecord(
        call_id="c1",
        tool="pay",
        fingerprint="the fingerprint of pay(3)",
        state="completed",
        result=ToolResult.from_value("paid 3"),
    )
    assert await store.swap("r", None, other) is not None
    executor = Executor(TOOLS, store=store)
    (outcome,) = await executor.run(
        [make_call(TOOLS, "pay", {"amount": 4}, call_id="c1")], run_id="r"
    )
    assert "paid 3" not in outcome.result.text
    assert outcome.result.error_kind == "failed"
    assert "another call" in outcome.result.text
    assert PAID == []  # and it did not run either: the id is taken


@pytest.mark.anyio
async def test_a_record_with_the_same_fingerprint_does_answer() -> None:
    store = MemoryStore()
    executor = Executor(TOOLS, store=store)
    call = make_call(TOOLS, "pay", {"amount": 3}, call_id="c1")
    (first,) = await executor.run([call], run_id="r")
    (again,) = await executor.run([call], run_id="r")
    assert again.from_store
    assert again.result == first.result
    assert PAID == [3]


@pytest.mark.anyio
@pytest.mark.parametrize("run_id", [None, "r"])
async def test_two_calls_with_one_id_in_a_turn_run_once(run_id: str | None) -> None:
    executor = Executor(TOOLS, store=MemoryStore())
    first = make_call(TOOLS, "pay", {"amount": 3}, call_id="c1")
    second = make_call(TOOLS, "pay", {"amount": 4}, call_id="c1")
    outcomes = await executor.run([first, second], run_id=run_id)
    assert outcomes[0].result.text == "paid 3"
    assert outcomes[1].result.error_kind == "invalid_arguments"
    assert "paid" not in outcomes[1].result.text
    assert PAID == [3]
