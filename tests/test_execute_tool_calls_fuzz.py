"""Malformed Gemini responses thrown at execute_tool_calls: a documented toolwire error, or
exactly one well-formed answer per functionCall part, in order. Never anything else."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import Executor, MemoryStore, ToolSet, ToolwireError, execute_tool_calls_sync, tool


@tool
def add(a: int, b: int = 0) -> int:
    """Add."""
    return a + b


@tool
def echo(value: Any = None) -> Any:
    """Echo anything back."""
    return {"value": value}


@tool
def fail() -> None:
    """Raise."""
    raise RuntimeError("no")


TOOLSET = ToolSet([add, echo, fail])

json_leaf = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8)
json_value = st.recursive(
    json_leaf,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=25,
)
names = st.sampled_from(["add", "echo", "fail", "default_api.add", "nope", ""]) | json_value
args = (
    st.fixed_dictionaries({"a": json_value}, optional={"b": json_value})
    | st.dictionaries(st.sampled_from(["a", "b", "value", "x"]), json_value, max_size=3)
    | json_value
)
function_call = (
    st.fixed_dictionaries(
        {},
        optional={"name": names, "args": args, "id": st.none() | st.text(max_size=6) | json_value},
    )
    | json_value
)
part = (
    st.fixed_dictionaries(
        {"functionCall": function_call}, optional={"thoughtSignature": json_value}
    )
    | st.fixed_dictionaries({"text": st.text(max_size=5)})
    | json_value
)
parts = st.lists(part, max_size=8)
response = st.one_of(
    parts,
    parts.map(lambda ps: {"parts": ps}),
    parts.map(lambda ps: {"candidates": [{"content": {"role": "model", "parts": ps}}]}),
    st.fixed_dictionaries({"candidates": json_value}),
    json_value,
)


def function_call_parts(data: Any) -> list[Any] | None:
    """The parts a correct parser must answer, or None when the envelope itself is broken."""
    if isinstance(data, dict) and "candidates" in data:
        candidates = data["candidates"] or []
        if not isinstance(candidates, list):
            return None
        if not candidates:
            return []
        if not isinstance(candidates[0], dict):
            return None
        data = candidates[0].get("content") or {}
        if not isinstance(data, dict):
            return None
    if isinstance(data, dict):
        if data.get("parts") is None:
            return [data] if "functionCall" in data and data["functionCall"] is not None else []
        data = data["parts"]
        if not isinstance(data, list):
            return None
    if not isinstance(data, list):
        return None
    return [p for p in data if isinstance(p, dict) and p.get("functionCall") is not None]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(response)
def test_malformed_responses_get_one_answer_per_call_or_a_toolwire_error(data: Any) -> None:
    expected = function_call_parts(data)
    try:
        outcome = execute_tool_calls_sync(TOOLSET, "gemini", data, store=MemoryStore())
    except ToolwireError:
        assert expected is None
        return
    assert expected is not None
    assert len(outcome.results) == len(expected)
    for answer, call_part in zip(outcome.results, expected, strict=True):
        body = answer["functionResponse"]
        assert isinstance(body["name"], str)
        assert set(body["response"]) in ({"output"}, {"error"})
        sent_id = (
            call_part["functionCall"].get("id")
            if isinstance(call_part["functionCall"], dict)
            else None
        )
        if "id" in body:
            assert body["id"] == sent_id


def test_thousands_of_calls_are_all_answered_in_order() -> None:
    calls = [{"functionCall": {"name": "add", "args": {"a": i, "b": 1}}} for i in range(3000)]
    outcome = execute_tool_calls_sync(TOOLSET, "gemini", calls, store=MemoryStore())
    assert [r["functionResponse"]["response"]["output"] for r in outcome.results] == [
        i + 1 for i in range(3000)
    ]  # numbers stay numbers


def test_absurdly_nested_arguments_are_rejected_not_recursed_into() -> None:
    value: Any = "leaf"
    for _ in range(10_000):
        value = {"v": value}
    outcome = execute_tool_calls_sync(
        TOOLSET,
        "gemini",
        [{"functionCall": {"name": "echo", "args": {"value": value}}}],
        store=MemoryStore(),
    )
    assert "nested deeper than" in outcome.results[0]["functionResponse"]["response"]["error"]


def test_huge_arguments_are_handled() -> None:
    big = {"value": ["x" * 1000] * 2000}
    executor = Executor(TOOLSET, max_output_chars=5_000)
    outcome = execute_tool_calls_sync(
        TOOLSET, "gemini", [{"functionCall": {"name": "echo", "args": big}}], executor=executor
    )
    text = outcome.results[0]["functionResponse"]["response"]["output"]
    assert text.endswith("characters shown]")


@pytest.mark.parametrize(
    "garbage",
    [None, 42, "text", b"bytes", {"candidates": "x"}, {"candidates": [None]}, {"parts": {"a": 1}}],
)
def test_a_broken_envelope_is_a_malformed_response_error(garbage: Any) -> None:
    from toolwire import MalformedResponse

    with pytest.raises(MalformedResponse):
        execute_tool_calls_sync(TOOLSET, "gemini", garbage)
