"""Results a tool may return that cannot be sent as they are: each call still gets one answer of
its own, the turn's other calls are untouched, nothing is left claimed, and every answer is
strict JSON that the providers' SDKs take."""

from __future__ import annotations

import datetime
import decimal
import enum
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from provider_turns import PROVIDERS, answer_text, is_error_answer, response_for, strict_json

from toolwire import (
    EmbeddedResource,
    ImageContent,
    MemoryStore,
    SQLiteStore,
    TextContent,
    Tool,
    ToolResult,
    ToolSet,
    execute_tool_calls,
    tool,
)
from toolwire.providers import get_provider

pytestmark = pytest.mark.anyio


def _cycle() -> dict[str, Any]:
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    return loop


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels):
        value = {"a": value}
    return value


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for you")


class Colour(enum.Enum):
    RED = "red"


# (what the tool returns, whether the answer must say the result could not be sent)
ODD_RESULTS: dict[str, tuple[Callable[[], Any], bool]] = {
    "non-string keys": (lambda: {1: "one", None: "none", 2.5: "x"}, False),
    "a cycle": (_cycle, True),
    "a 5,000-digit integer": (lambda: {"n": 10**5000}, True),
    "5,000 levels of nesting": (lambda: _nested(5000), True),
    "bytes": (lambda: {"blob": b"\x00\xff\xfe"}, False),
    "bare bytes": (lambda: b"\x00\x01", False),
    "a lone surrogate": (lambda: "broken \ud800 text", False),
    "a lone surrogate key": (lambda: {"k\udfff": "v"}, False),
    "NaN": (lambda: {"x": float("nan")}, True),
    "bare Infinity": (lambda: float("inf"), True),
    "an object whose str() raises": (lambda: {"o": Unprintable()}, True),
    "rich values": (
        lambda: {
            "when": datetime.datetime(2026, 12, 1, 9, 30, tzinfo=datetime.UTC),
            "day": datetime.date(2026, 12, 1),
            "amount": decimal.Decimal("12.50"),
            "id": uuid.UUID(int=7),
            "tags": {"b", "a"},
            "frozen": frozenset({3}),
            "colour": Colour.RED,
            "path": Path("a/b"),
        },
        False,
    ),
    "a ToolResult with a list as structured content": (
        lambda: ToolResult(structured_content=[1, 2]),  # type: ignore[arg-type]
        True,
    ),
    "a ToolResult with a surrogate text part": (
        lambda: ToolResult(content=(TextContent("x\ud800"),)),
        False,
    ),
}


def _toolset(odd: Callable[[], Any]) -> ToolSet:
    def produce() -> Any:
        return odd()

    async def echo(text: str) -> str:
        return f"echo {text}"

    return ToolSet(
        [
            Tool(name="odd", handler=produce),
            Tool(
                name="echo",
                handler=echo,
                input_schema={
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            ),
        ]
    )


@pytest.mark.parametrize("provider", PROVIDERS)
@pytest.mark.parametrize("case", sorted(ODD_RESULTS))
async def test_an_odd_result_is_answered_alone_and_as_strict_json(
    provider: str, case: str, tmp_path: Path
) -> None:
    odd, unsendable = ODD_RESULTS[case]
    toolset = _toolset(odd)
    calls = [("echo", {"text": "one"}, "c1"), ("odd", {}, "c2"), ("echo", {"text": "two"}, "c3")]
    store = SQLiteStore(tmp_path / "runs.db")
    try:
        outcome = await execute_tool_calls(
            toolset, provider, response_for(provider, calls), run_id="r", store=store
        )
        assert [c.call_id for c in outcome.calls] == ["c1", "c2", "c3"]
        assert answer_text(outcome.results[0]).count("echo one") == 1
        assert answer_text(outcome.results[2]).count("echo two") == 1
        assert not is_error_answer(outcome.results[0])
        odd_answer = outcome.results[1]
        assert is_error_answer(odd_answer) is unsendable
        if unsendable:
            assert "cannot be sent as JSON" in answer_text(odd_answer)
            assert outcome.calls[1].result.error_kind == "failed"
        for answer in outcome.results:
            strict_json(answer)  # no NaN, no lone surrogate, nothing json can't write
        # Nothing is left claimed: every call's record is answered.
        for call_id in ("c1", "c2", "c3"):
            record = await store.get("r", call_id)
            assert record is not None
            assert record.state in ("completed", "failed")
        # And the run replays the same answers.
        again = await execute_tool_calls(
            toolset, provider, response_for(provider, calls), run_id="r", store=store
        )
        assert again.results == outcome.results
        assert all(c.from_store for c in again.calls)
    finally:
        store.close()


async def test_rich_values_reach_gemini_as_json_not_as_python_objects() -> None:
    from google.genai import types

    odd, _ = ODD_RESULTS["rich values"]
    outcome = await execute_tool_calls(
        _toolset(odd), "gemini", response_for("gemini", [("odd", {}, "c1")])
    )
    (answer,) = outcome.results
    output = dict(answer["functionResponse"]["response"]["output"])
    assert sorted(output.pop("tags")) == ["a", "b"]  # a set has no order
    assert output == {
        "when": "2026-12-01T09:30:00Z",
        "day": "2026-12-01",
        "amount": "12.50",
        "id": "00000000-0000-0000-0000-000000000007",
        "frozen": [3],
        "colour": "red",
        "path": "a/b",
    }
    part = types.Part.model_validate(answer)  # the SDK takes it, and can send it
    assert part.function_response is not None
    part.model_dump_json()


@pytest.mark.parametrize("provider", ["anthropic", "openai-chat", "openai-responses"])
async def test_other_providers_get_json_text_not_python_reprs(provider: str) -> None:
    outcome = await execute_tool_calls(
        _toolset(lambda: {"s": {1}, "b": b"\x00", "t": datetime.datetime(2026, 1, 2, 3, 4)}),
        provider,
        response_for(provider, [("odd", {}, "c1")]),
    )
    text = answer_text(outcome.results[0])
    assert "{1}" not in text
    assert "b'" not in text
    assert '"s":[1]' in text
    assert '"b":"AA=="' in text
    assert "2026-01-02T03:04:00" in text


@pytest.mark.parametrize("provider", PROVIDERS)
async def test_an_exception_whose_str_raises_is_named_by_its_type(provider: str) -> None:
    class Mute(Exception):
        def __str__(self) -> str:
            raise ValueError("not this either")

    def fails() -> None:
        raise Mute

    async def fine() -> str:
        return "fine"

    toolset = ToolSet([Tool(name="fails", handler=fails), Tool(name="fine", handler=fine)])
    outcome = await execute_tool_calls(
        toolset, provider, response_for(provider, [("fails", {}, "c1"), ("fine", {}, "c2")])
    )
    assert outcome.calls[0].result.error_kind == "failed"
    assert "Mute" in answer_text(outcome.results[0])
    assert "fine" in answer_text(outcome.results[1])
    assert not is_error_answer(outcome.results[1])


async def test_an_after_hook_returning_an_odd_value_is_made_safe_too() -> None:
    @tool
    def plain() -> str:
        """Plain."""
        return "plain"

    outcome = await execute_tool_calls(
        [plain],
        "gemini",
        response_for("gemini", [("plain", {}, "c1")]),
        after_call=[lambda context, result: {"x": float("nan")}],
    )
    assert outcome.calls[0].result.error_kind == "failed"
    strict_json(outcome.results)


async def test_the_default_store_takes_odd_results_too() -> None:
    store = MemoryStore()
    odd, _ = ODD_RESULTS["bytes"]
    toolset = _toolset(odd)
    response = response_for("anthropic", [("odd", {}, "c1")])
    first = await execute_tool_calls(toolset, "anthropic", response, run_id="r", store=store)
    again = await execute_tool_calls(toolset, "anthropic", response, run_id="r", store=store)
    assert again.results == first.results


# -- any value at all --------------------------------------------------------------------------

_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.sampled_from([4500, 4100, 64]).map(lambda digits: -(10**digits)),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(alphabet=st.characters(exclude_categories=()), max_size=20),  # surrogates too
    st.sampled_from(["\ud800", "a\udfffb"]),
    st.binary(max_size=20),
    st.decimals(allow_nan=True, allow_infinity=True),
    st.datetimes(),
    st.uuids(),
    st.sampled_from([Unprintable(), Colour.RED, Path("p"), object()]),
)
_KEYS = st.one_of(
    st.text(alphabet=st.characters(exclude_categories=()), max_size=5),
    st.integers(),
    st.none(),
    st.booleans(),
    st.floats(),
    st.sampled_from([Colour.RED, (1, 2), "\udc80"]),
)
_VALUES = st.recursive(
    _LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(_KEYS, inner, max_size=4),
        st.frozensets(st.integers() | st.text(max_size=3), max_size=3),
        st.tuples(inner, inner),
    ),
    max_leaves=20,
)


@settings(max_examples=1500, deadline=None)
@given(value=_VALUES)
def test_any_value_becomes_a_result_every_provider_can_send(value: Any) -> None:
    result = ToolResult.from_value(value)
    assert isinstance(result, ToolResult)
    if result.structured_content is not None:
        strict_json(result.structured_content)
    for part in result.content:
        assert isinstance(part, TextContent | ImageContent | EmbeddedResource)
    call = _a_call()
    for provider in PROVIDERS:
        strict_json(get_provider(provider).answer(call, result))


def _a_call() -> Any:
    from toolwire import make_call

    return make_call(_toolset(lambda: None), "odd", {}, call_id="c1")
