"""Arguments toolwire cannot carry (lone surrogates, huge integers, NaN and Infinity, deep
nesting, keys that are not strings) are answered as invalid, by every parser, never raised."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_turns import PROVIDERS, answered_id, parse, response_for

from toolwire import (
    MemoryStore,
    RejectedCall,
    Tool,
    ToolCall,
    ToolSet,
    execute_tool_calls,
)
from toolwire.calls import argument_problem

RAN: list[dict[str, Any]] = []


def record(**arguments: Any) -> str:
    RAN.append(arguments)
    return f"ran with {sorted(arguments)}"


TOOLSET = ToolSet([Tool(name="echo", input_schema={"type": "object"}, handler=record)])


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    RAN.clear()


def nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


# (what, arguments as a dict, the same as OpenAI's JSON text or None, what the answer says)
CASES: list[tuple[str, dict[Any, Any] | None, str | None, str]] = [
    ("lone surrogate", {"note": "a\ud800b"}, '{"note": "a\\ud800b"}', "lone UTF-16 surrogate"),
    ("lone surrogate key", {"\udc00": 1}, '{"\\udc00": 1}', "lone UTF-16 surrogate"),
    ("5000 digits", {"n": 10**4999}, '{"n": 1' + "0" * 4999 + "}", "digits"),
    ("4100 digits", {"n": 10**4100}, '{"n": 1' + "0" * 4100 + "}", "more than 4000 digits"),
    ("NaN", {"x": float("nan")}, '{"x": NaN}', "NaN"),
    ("Infinity", {"x": float("inf")}, '{"x": Infinity}', "inf"),
    ("-Infinity", {"x": [float("-inf")]}, '{"x": [-Infinity]}', "-inf"),
    ("overflowing float", None, '{"x": 1e999}', "inf is not a JSON number"),
    ("deep", {"a": nested(100)}, json.dumps({"a": nested(100)}), "nested deeper than 64"),
    (
        "too deep to decode",
        None,
        '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}",
        "nested too deeply",
    ),
    ("non-string key", {1: "x"}, None, "not a string (int)"),
    ("a set", {"x": {1, 2}}, None, "set is not JSON"),
]


def cases_for(provider: str) -> list[tuple[str, Any, str]]:
    wants_text = provider.startswith("openai")
    return [
        (what, text if wants_text else arguments, why)
        for what, arguments, text, why in CASES
        if (text if wants_text else arguments) is not None
    ]


ALL_CASES = [(provider, *case) for provider in PROVIDERS for case in cases_for(provider)]


@pytest.mark.parametrize(
    ("provider", "what", "arguments", "why"),
    ALL_CASES,
    ids=[f"{provider}-{what}" for provider, what, _, _ in ALL_CASES],
)
def test_arguments_that_cannot_be_carried_are_an_invalid_arguments_answer(
    provider: str, what: str, arguments: Any, why: str
) -> None:
    [item] = parse(provider, response_for(provider, [("echo", arguments, "c1")]), TOOLSET)
    assert isinstance(item, RejectedCall)
    assert item.error_kind == "invalid_arguments"
    assert why.lower() in item.message.lower()
    assert answered_id(item.answer) == "c1"
    # the answer itself can be sent: strict JSON, valid UTF-8
    json.dumps(item.answer, allow_nan=False, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_arguments_sent_as_an_object_are_checked_too(provider: str) -> None:
    response = response_for(provider, [("echo", "{}", "c1")])
    if provider == "openai-chat":
        response["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = {
            "x": float("nan")
        }
    else:
        response["output"][0]["arguments"] = {"x": float("nan")}
    [item] = parse(provider, response, TOOLSET)
    assert isinstance(item, RejectedCall)
    assert "nan is not a JSON number" in item.message


@pytest.mark.anyio
@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("run_id", [None, "turn-1"])
async def test_one_answer_per_call_the_bad_ones_invalid_and_the_good_one_run(
    provider: str, run_id: str | None
) -> None:
    bad = [(f"c{i}", arguments) for i, (_, arguments, _) in enumerate(cases_for(provider), 1)]
    calls = [("echo", {"x": 1}, "c0"), *[("echo", arguments, i) for i, arguments in bad]]
    outcome = await execute_tool_calls(
        TOOLSET, provider, response_for(provider, calls), store=MemoryStore(), run_id=run_id
    )
    assert len(outcome.results) == len(calls)
    assert [answered_id(answer) for answer in outcome.results][1:] == [i for i, _ in bad]
    first, *rest = outcome.calls
    assert not first.result.is_error
    assert [c.result.error_kind for c in rest] == ["invalid_arguments"] * len(bad)
    assert RAN == [{"x": 1}]
    for answer in outcome.results:
        json.dumps(answer, allow_nan=False, ensure_ascii=False).encode("utf-8")


def test_gemini_sdk_calls_with_odd_arguments_are_rejected() -> None:
    types = pytest.importorskip("google.genai.types")
    part = types.Part(function_call=types.FunctionCall(id="c1", name="echo", args={"n": 10**4100}))
    [item] = parse("gemini", [part], TOOLSET)
    assert isinstance(item, RejectedCall)
    assert "more than 4000 digits" in item.message


# -- any arguments at all --------------------------------------------------------------------------

odd_leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.just(10**4100)
    | st.floats()
    | st.text(max_size=4)
    | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1, max_size=2)
    | st.just(nested(70))
)
odd_keys = st.text(max_size=3) | st.text(
    st.characters(min_codepoint=0xD7FE, max_codepoint=0xE001), min_size=1, max_size=2
)
odd_values = st.recursive(
    odd_leaves,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(odd_keys, children, max_size=3)
    ),
    max_leaves=10,
)
odd_arguments = st.dictionaries(odd_keys, odd_values, max_size=4)


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(PROVIDERS), odd_arguments, st.sampled_from(["c1", None]))
def test_any_arguments_are_either_carried_unchanged_or_answered_as_invalid(
    provider: str, arguments: dict[str, Any], call_id: str | None
) -> None:
    sent: Any = arguments
    if provider.startswith("openai"):
        sent = json.dumps(arguments)
        arguments = json.loads(sent)  # what a JSON reader makes of it (NaN still NaN)
    [item] = parse(provider, response_for(provider, [("echo", sent, call_id)]), TOOLSET)
    if argument_problem(arguments) is None:
        assert isinstance(item, ToolCall)
        assert item.arguments == arguments
        assert item.call_id == call_id
    else:
        assert isinstance(item, RejectedCall)
        assert item.error_kind == "invalid_arguments"
        if call_id is not None:
            assert answered_id(item.answer) == call_id
        item.message.encode("utf-8")
