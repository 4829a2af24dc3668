"""Hostile stream events: every accumulator stays bounded, raises only MalformedResponse, and
what it assembles parses without a foreign exception."""

from __future__ import annotations

import contextlib
import copy
import json
from collections.abc import Callable
from functools import partial
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolwire import MalformedResponse, RejectedCall, Tool, ToolCall, ToolSet, ToolwireError
from toolwire.providers import (
    StreamLimits,
    anthropic,
    gemini,
    openai_chat,
    openai_responses,
    parse_calls,
)

TOOLSET = ToolSet(
    [
        Tool(name="get_weather", input_schema={"type": "object"}),
        Tool(name="pay", input_schema={"type": "object"}),
    ]
)


def gemini_chunk(*parts: Any) -> dict[str, Any]:
    return {"candidates": [{"content": {"role": "model", "parts": list(parts)}}]}


def streamed_call(*pieces: dict[str, Any], name: str = "pay", more: bool = True) -> dict:
    return {"functionCall": {"name": name, "partialArgs": list(pieces), "willContinue": more}}


# -- the reproduction and its variants ---------------------------------------------------------


def test_a_json_path_naming_element_ten_billion_is_a_malformed_response() -> None:
    stream = gemini.StreamAccumulator()
    with pytest.raises(MalformedResponse, match="too large"):
        stream.add(
            gemini_chunk(streamed_call({"jsonPath": "$.a[10000000000]", "stringValue": "x"}))
        )


@pytest.mark.parametrize("path", ["$.a[1]", "$.a[0].b[5]", "$.a[999999999]"])
def test_a_json_path_may_name_only_the_next_array_element(path: str) -> None:
    stream = gemini.StreamAccumulator()
    with pytest.raises(MalformedResponse, match="skips array elements"):
        stream.add(gemini_chunk(streamed_call({"jsonPath": path, "numberValue": 1})))


def test_arrays_stream_element_by_element_and_strings_piece_by_piece() -> None:
    stream = gemini.StreamAccumulator()
    stream.add(
        gemini_chunk(
            streamed_call(
                {"jsonPath": "$.to[0]", "stringValue": "Ada"},
                {"jsonPath": "$.to[1]", "stringValue": "Gra"},
                {"jsonPath": "$.to[1]", "stringValue": "ce"},
                {"jsonPath": "$['odd.key']", "numberValue": 2},
                {"jsonPath": '$["q\\"uote"].x', "boolValue": False},
                {"jsonPath": "$.memo", "stringValue": "hi", "willContinue": True},
                {"jsonPath": "$.memo"},  # a last piece without a value ends the string
            )
        )
    )
    stream.add(gemini_chunk(streamed_call(more=False)))
    [part] = stream.response()["candidates"][0]["content"]["parts"]
    assert part["functionCall"]["args"] == {
        "to": ["Ada", "Grace"],
        "odd.key": 2,
        'q"uote': {"x": False},
        "memo": "hi",
    }


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        ("$", "names no argument"),
        ("a.b", "names no argument"),
        ("$.a..b", "does not parse"),
        ("$.a[x]", "does not parse"),
        ("$['unterminated]", "does not parse"),
        ("$" + ".a" * 65, "deeper than 64"),
    ],
)
def test_a_json_path_that_does_not_parse_is_a_malformed_response(path: str, reason: str) -> None:
    stream = gemini.StreamAccumulator()
    with pytest.raises(MalformedResponse, match=reason):
        stream.add(gemini_chunk(streamed_call({"jsonPath": path, "stringValue": "x"})))


@pytest.mark.parametrize(
    "pieces",
    [
        [{"jsonPath": "$.a", "stringValue": "x"}, {"jsonPath": "$.a.b", "stringValue": "y"}],
        [{"jsonPath": "$.a", "numberValue": 1}, {"jsonPath": "$.a[0]", "numberValue": 2}],
        [{"jsonPath": "$.a[0]", "numberValue": 1}, {"jsonPath": "$.a.b", "numberValue": 2}],
        [{"jsonPath": "$.a", "stringValue": 5}],
        [{"jsonPath": "$.a", "numberValue": True}],
        [{"jsonPath": "$.a", "boolValue": "yes"}],
        [{"jsonPath": 7, "stringValue": "x"}],
        ["not a piece"],
    ],
)
def test_pieces_that_contradict_each_other_are_a_malformed_response(pieces: list[Any]) -> None:
    stream = gemini.StreamAccumulator()
    with pytest.raises(MalformedResponse):
        stream.add(gemini_chunk(streamed_call(*pieces)))


def test_the_callers_chunks_are_never_changed() -> None:
    first = gemini_chunk(
        {"functionCall": {"name": "pay", "args": {"to": {"name": "A"}}, "willContinue": True}}
    )
    second = gemini_chunk(streamed_call({"jsonPath": "$.to.name", "stringValue": "da"}))
    before = copy.deepcopy([first, second])
    stream = gemini.StreamAccumulator()
    stream.add(first)
    stream.add(second)
    args = stream.response()["candidates"][0]["content"]["parts"][0]["functionCall"]["args"]
    assert args == {"to": {"name": "Ada"}}
    assert [first, second] == before


@pytest.mark.parametrize("index", [-1, 10**12, True, "0", 1.0, None])
def test_anthropic_block_indices_must_be_small_integers(index: Any) -> None:
    stream = anthropic.AnthropicStreamAccumulator()
    event = {"type": "content_block_start", "content_block": {"type": "text", "text": ""}}
    with pytest.raises(MalformedResponse, match="content block index"):
        stream.add({**event, "index": index})


@pytest.mark.parametrize("index", [-1, 10**12, True, "0"])
def test_chat_tool_call_indices_must_be_small_integers(index: Any) -> None:
    stream = openai_chat.ChatStreamAccumulator()
    chunk = {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": index, "id": "a"}]}}]}
    with pytest.raises(MalformedResponse, match="tool call index"):
        stream.add(chunk)


@pytest.mark.parametrize("index", [-1, 10**12, False, "3"])
def test_responses_output_indices_must_be_small_integers(index: Any) -> None:
    stream = openai_responses.ResponsesStreamAccumulator()
    event = {"type": "response.output_item.added", "output_index": index, "item": {}}
    with pytest.raises(MalformedResponse, match="output_index"):
        stream.add(event)


def test_an_anthropic_block_started_twice_would_lose_a_call_so_it_is_malformed() -> None:
    stream = anthropic.AnthropicStreamAccumulator()
    block = {"type": "tool_use", "id": "toolu_1", "name": "pay", "input": {}}
    stream.add({"type": "content_block_start", "index": 0, "content_block": block})
    with pytest.raises(MalformedResponse, match="started twice"):
        stream.add(
            {"type": "content_block_start", "index": 0, "content_block": {**block, "id": "t2"}}
        )


def test_a_delta_for_a_block_or_item_never_started_is_malformed() -> None:
    with pytest.raises(MalformedResponse, match="never started"):
        anthropic.AnthropicStreamAccumulator().add(
            {
                "type": "content_block_delta",
                "index": 3,
                "delta": {"type": "input_json_delta", "partial_json": "{}"},
            }
        )
    with pytest.raises(MalformedResponse, match="never added"):
        openai_responses.ResponsesStreamAccumulator().add(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_x", "delta": "{"}
        )


def anthropic_tool_use(partial_json: str) -> dict[str, Any]:
    stream = anthropic.AnthropicStreamAccumulator()
    block = {"type": "tool_use", "id": "toolu_1", "name": "pay", "input": {}}
    stream.add({"type": "content_block_start", "index": 0, "content_block": block})
    stream.add(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": partial_json},
        }
    )
    return stream.message()


@pytest.mark.parametrize(
    ("partial_json", "why"),
    [
        ('{"amount": ' + "1" * 5000 + "}", "too many digits"),
        ('{"amount": ' + "1" * 4100 + "}", "more than 4000 digits"),
        ('{"amount": NaN}', "NaN is not a JSON number"),
        ('{"amount": -Infinity}', "-Infinity is not a JSON number"),
        ("[" * 100_000, "nested too deeply"),
        ('{"amount": 1', "ends early"),
        ('{"note": "\\ud800"}', "lone UTF-16 surrogate"),
    ],
)
def test_anthropic_streamed_input_that_is_not_carryable_json_is_a_rejected_call(
    partial_json: str, why: str
) -> None:
    [item] = parse_calls("anthropic", anthropic_tool_use(partial_json), TOOLSET)
    assert isinstance(item, RejectedCall)
    assert item.error_kind == "invalid_arguments"
    assert why in item.message
    assert item.answer["tool_use_id"] == "toolu_1"
    assert item.answer["is_error"] is True


def test_many_tiny_deltas_are_joined_once() -> None:
    stream = openai_responses.ResponsesStreamAccumulator()
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "pay"}
    stream.add({"type": "response.output_item.added", "output_index": 0, "item": item})
    text = json.dumps({"memo": "x" * 50_000})
    for char in text:
        stream.add(
            {"type": "response.function_call_arguments.delta", "item_id": "fc_1", "delta": char}
        )
    [call] = parse_calls("openai-responses", stream.response(), TOOLSET)
    assert isinstance(call, ToolCall)
    assert call.arguments == {"memo": "x" * 50_000}


# -- limits ----------------------------------------------------------------------------------------

SMALL = StreamLimits(max_parts=3, max_chars=100)


def test_every_accumulator_stops_at_its_character_limit() -> None:
    long_text = "x" * 101
    with pytest.raises(MalformedResponse, match="more than 100 characters"):
        gemini.StreamAccumulator(limits=SMALL).add(gemini_chunk({"text": long_text}))
    stream = anthropic.AnthropicStreamAccumulator(limits=SMALL)
    stream.add({"type": "content_block_start", "index": 0, "content_block": {"type": "text"}})
    with pytest.raises(MalformedResponse, match="more than 100 characters"):
        stream.add(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": long_text},
            }
        )
    with pytest.raises(MalformedResponse, match="more than 100 characters"):
        openai_chat.ChatStreamAccumulator(limits=SMALL).add(
            {"choices": [{"delta": {"content": long_text}}]}
        )
    with pytest.raises(MalformedResponse, match="more than 100 characters"):
        openai_responses.ResponsesStreamAccumulator(limits=SMALL).add(
            {
                "type": "response.output_item.added",
                "item": {"type": "function_call", "arguments": long_text},
            }
        )


def test_every_accumulator_stops_at_its_part_limit() -> None:
    stream = gemini.StreamAccumulator(limits=SMALL)
    with pytest.raises(MalformedResponse, match="more than 3 parts"):
        stream.add(gemini_chunk(*[{"text": "a"}] * 4))
    blocks = anthropic.AnthropicStreamAccumulator(limits=SMALL)
    for index in range(3):
        blocks.add({"type": "content_block_start", "index": index, "content_block": {}})
    with pytest.raises(MalformedResponse, match="out of range"):  # indices name parts
        blocks.add({"type": "content_block_start", "index": 3, "content_block": {}})
    chat = openai_chat.ChatStreamAccumulator(limits=SMALL)
    calls = [{"index": i, "id": f"c{i}"} for i in range(3)]
    chat.add({"choices": [{"delta": {"tool_calls": calls}}]})
    with pytest.raises(MalformedResponse, match="more than 3 parts"):
        chat.add({"choices": [{"delta": {"tool_calls": [{"id": "c9"}]}}]})
    items = openai_responses.ResponsesStreamAccumulator(limits=SMALL)
    for _ in range(3):
        items.add({"type": "response.output_item.added", "item": {"type": "message"}})
    with pytest.raises(MalformedResponse, match="out of range"):
        items.add({"type": "response.output_item.added", "item": {"type": "message"}})


def test_streamed_argument_nodes_count_as_parts() -> None:
    stream = gemini.StreamAccumulator(limits=SMALL)
    with pytest.raises(MalformedResponse, match="more than 3 parts"):
        stream.add(gemini_chunk(streamed_call(*[{"jsonPath": f"$.k{i}"} for i in range(3)])))


def test_the_default_limits_are_far_above_a_real_stream() -> None:
    limits = StreamLimits()
    assert limits.max_parts >= 100_000
    assert limits.max_chars >= 32_000_000


def test_sdk_chunks_still_add_up() -> None:
    chunk_type = pytest.importorskip("openai.types.chat").ChatCompletionChunk
    stream = openai_chat.ChatStreamAccumulator()
    for arguments in ('{"amount"', ": 3}"):
        delta = {"tool_calls": [{"index": 0, "id": "c1", "function": {"arguments": arguments}}]}
        chunk = {
            "id": "x",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "m",
            "choices": [{"index": 0, "delta": {**delta, "role": "assistant"}}],
        }
        stream.add(chunk_type.model_validate(chunk))
    stream.add(
        chunk_type.model_validate(
            {
                "id": "x",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "delta": {"tool_calls": [{"index": 0, "function": {"name": "pay"}}]},
                    }
                ],
            }
        )
    )
    [call] = parse_calls("openai-chat", stream.response(), TOOLSET)
    assert isinstance(call, ToolCall)
    assert (call.call_id, call.arguments) == ("c1", {"amount": 3})


# -- structurally random events ----------------------------------------------------------------

VOCABULARY = [
    # Gemini
    "candidates", "content", "parts", "role", "text", "thought", "thoughtSignature",
    "functionCall", "function_call", "name", "id", "args", "partialArgs", "partial_args",
    "jsonPath", "json_path", "stringValue", "numberValue", "boolValue", "nullValue",
    "willContinue", "will_continue", "finishReason", "usageMetadata",
    # Anthropic
    "type", "index", "content_block", "delta", "message", "usage", "input", "partial_json",
    "thinking", "signature", "stop_reason",
    # Chat
    "choices", "finish_reason", "tool_calls", "function", "arguments", "custom",
    # Responses
    "output_index", "item_id", "item", "call_id", "output", "response",
]  # fmt: skip
TYPES = [
    "message_start", "content_block_start", "content_block_delta", "message_delta",
    "content_block_stop", "tool_use", "text", "thinking", "server_tool_use", "text_delta",
    "input_json_delta", "thinking_delta", "signature_delta", "citations_delta", "function",
    "custom", "response.output_item.added", "response.output_item.done",
    "response.function_call_arguments.delta", "response.function_call_arguments.done",
    "response.custom_tool_call_input.delta", "response.custom_tool_call_input.done",
    "response.completed", "function_call", "custom_tool_call", "shell_call",
]  # fmt: skip
PATHS = ["$.a", "$.a[0]", "$.a[1]", "$.a.b", "$['a']", '$["a"]', "$.a[10000000000]", "$", "x"]

HUGE = "x" * 200_000
wild_indices = st.sampled_from([-1, 10**12, 99_999, 100_000, -(10**12)]) | st.integers()
indices = st.integers(0, 3)
leaves = (
    st.none()
    | st.booleans()
    | indices
    | wild_indices
    | st.just(10**4100)
    | st.floats()
    | st.text(max_size=6)
    | st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), max_size=2)
    | st.sampled_from(TYPES)
    | st.sampled_from(PATHS)
    | st.sampled_from(['{"a": 1}', '{"a": ', "}", "NaN", "[" * 3000, "1" * 5000, HUGE])
    | st.sampled_from(["pay", "get_weather", "c1", "fc_1", "toolu_1"])
)
values = st.recursive(
    leaves,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(VOCABULARY), children, max_size=5)
    ),
    max_leaves=8,
)
vocabulary_objects = st.dictionaries(st.sampled_from(VOCABULARY), values, max_size=4)


def mostly(good: st.SearchStrategy[Any], odd: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` most of the time, ``odd`` now and then: streams must get deep enough to
    reach the later checks, and any position may hold the wrong thing."""
    return st.integers(0, 15).flatmap(lambda n: odd if n == 0 else good)


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """Objects with some of ``fields`` (each well-typed or not) and now and then an extra key."""
    return st.builds(
        lambda known, extra: {**extra, **known},
        st.fixed_dictionaries({}, optional={k: mostly(v, leaves) for k, v in fields.items()}),
        mostly(st.just({}), st.dictionaries(st.sampled_from(VOCABULARY), leaves, max_size=1)),
    )


def lists_of(item: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(mostly(item, leaves), max_size=3)


def events_of(event: st.SearchStrategy[Any]) -> st.SearchStrategy[list[Any]]:
    return st.lists(mostly(event, vocabulary_objects | leaves), max_size=6)


usage = st.fixed_dictionaries({}, optional={"output_tokens": st.integers(0, 9)})
texts = st.text(max_size=8) | st.sampled_from([*PATHS, '{"a": 1}', '{"a"', ":", "1}"])
piece = shaped(
    {
        "jsonPath": st.sampled_from(PATHS) | st.text(max_size=10),
        "stringValue": texts,
        "numberValue": st.floats() | st.integers(),
        "boolValue": st.booleans(),
        "nullValue": st.just("NULL_VALUE"),
        "willContinue": st.booleans(),
    }
)
gemini_call = shaped(
    {
        "name": st.sampled_from(["pay", "get_weather", "other"]),
        "id": st.sampled_from(["a", "b"]),
        "args": st.dictionaries(st.text(max_size=3), values, max_size=3),
        "partialArgs": lists_of(piece),
        "willContinue": st.booleans(),
    }
)
gemini_part = shaped({"text": texts, "functionCall": gemini_call, "thoughtSignature": texts})
gemini_event = shaped(
    {
        "candidates": lists_of(
            shaped({"content": shaped({"role": texts, "parts": lists_of(gemini_part)})})
        ),
        "usageMetadata": values,
    }
)
anthropic_block = shaped(
    {
        "type": st.sampled_from(["tool_use", "text", "thinking", "server_tool_use"]),
        "id": st.sampled_from(["toolu_1", "toolu_2"]),
        "name": st.sampled_from(["pay", "get_weather"]),
        "input": values,
        "text": texts,
    }
)
anthropic_delta = shaped(
    {
        "type": st.sampled_from(
            ["text_delta", "input_json_delta", "thinking_delta", "signature_delta"]
        ),
        "text": texts,
        "partial_json": texts,
        "thinking": texts,
        "signature": texts,
        "stop_reason": texts,
    }
)
anthropic_event = shaped(
    {
        "type": st.sampled_from(TYPES[:5]),
        "index": indices,
        "content_block": anthropic_block,
        "delta": anthropic_delta,
        "message": shaped({"role": texts, "usage": usage}),
        "usage": usage,
    }
)
chat_call = shaped(
    {
        "index": indices,
        "id": st.sampled_from(["c1", "c2", ""]),
        "type": st.sampled_from(["function", "custom"]),
        "function": shaped({"name": st.sampled_from(["pay", "get_weather"]), "arguments": texts}),
        "custom": shaped({"name": texts, "input": texts}),
    }
)
chat_event = shaped(
    {
        "choices": lists_of(
            shaped(
                {
                    "index": indices,
                    "finish_reason": texts,
                    "delta": shaped({"content": texts, "tool_calls": lists_of(chat_call)}),
                }
            )
        ),
        "usage": values,
    }
)
responses_item = shaped(
    {
        "type": st.sampled_from(["function_call", "custom_tool_call", "shell_call", "message"]),
        "id": st.sampled_from(["fc_1", "fc_2"]),
        "call_id": st.sampled_from(["c1", "c2"]),
        "name": st.sampled_from(["pay", "get_weather"]),
        "arguments": texts,
        "input": texts,
    }
)
responses_event = shaped(
    {
        "type": st.sampled_from(TYPES[-10:]),
        "output_index": indices,
        "item_id": st.sampled_from(["fc_1", "fc_2"]),
        "item": responses_item,
        "delta": texts,
        "arguments": texts,
        "input": texts,
        "response": shaped({"output": lists_of(responses_item)}),
    }
)


def run_stream(
    accumulator: Any, events: list[Any], assemble: Callable[[], Any], parse: Callable
) -> None:
    """Feed ``events`` until one is refused; only MalformedResponse may be raised, and what
    the stream adds up to parses with nothing but toolwire's errors."""
    for event in events:
        try:
            accumulator.add(event)
        except MalformedResponse:
            break
    assembled = assemble()
    with contextlib.suppress(ToolwireError):
        parse(assembled, TOOLSET)


EXAMPLES = settings(
    max_examples=600,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@EXAMPLES
@given(events_of(gemini_event))
def test_random_gemini_chunks_raise_only_malformed_response(events: list[Any]) -> None:
    stream = gemini.StreamAccumulator()
    run_stream(stream, events, stream.response, partial(parse_calls, "gemini"))


@EXAMPLES
@given(events_of(anthropic_event))
def test_random_anthropic_events_raise_only_malformed_response(events: list[Any]) -> None:
    stream = anthropic.AnthropicStreamAccumulator()
    run_stream(stream, events, stream.message, partial(parse_calls, "anthropic"))


@EXAMPLES
@given(events_of(chat_event))
def test_random_chat_chunks_raise_only_malformed_response(events: list[Any]) -> None:
    stream = openai_chat.ChatStreamAccumulator()
    run_stream(stream, events, stream.response, partial(parse_calls, "openai-chat"))


@EXAMPLES
@given(events_of(responses_event))
def test_random_responses_events_raise_only_malformed_response(events: list[Any]) -> None:
    stream = openai_responses.ResponsesStreamAccumulator()
    run_stream(stream, events, stream.response, partial(parse_calls, "openai-responses"))


# -- real-looking streams, intact or corrupted -------------------------------------------------

PlannedCall = tuple[str, dict[str, Any], str]
planned_calls = st.lists(
    st.tuples(
        st.sampled_from(["pay", "get_weather"]),
        st.dictionaries(
            st.text(st.characters(codec="utf-8"), min_size=1, max_size=4),
            st.integers(-(10**6), 10**6) | st.text(st.characters(codec="utf-8"), max_size=12),
            max_size=3,
        ),
        st.sampled_from(["c1", "c2", "c3", "c4"]),
    ),
    min_size=1,
    max_size=3,
    unique_by=lambda call: call[2],
)


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    return [text[a:b] for a, b in pairwise(points)]


def gemini_stream(calls: list[PlannedCall], cuts: list[int]) -> list[Any]:
    chunks: list[Any] = [gemini_chunk({"text": "Paying."})]
    for name, arguments, _ in calls:
        if not cuts:  # the whole call in one chunk
            chunks.append(gemini_chunk({"functionCall": {"name": name, "args": arguments}}))
            continue
        chunks.append(gemini_chunk({"functionCall": {"name": name, "willContinue": True}}))
        for key, value in arguments.items():
            path = f"$[{json.dumps(key)}]"
            if isinstance(value, str):
                for text in pieces_of(value, cuts) or [""]:
                    chunks.append(
                        gemini_chunk(
                            streamed_call({"jsonPath": path, "stringValue": text}, name=name)
                        )
                    )
            else:
                chunks.append(
                    gemini_chunk(streamed_call({"jsonPath": path, "numberValue": value}, name=name))
                )
        chunks.append(gemini_chunk({"functionCall": {"willContinue": False}}))
    return chunks


def anthropic_stream(calls: list[PlannedCall], cuts: list[int]) -> list[Any]:
    events: list[Any] = [{"type": "message_start", "message": {"role": "assistant", "content": []}}]
    for index, (name, arguments, call_id) in enumerate(calls):
        block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        for text in pieces_of(json.dumps(arguments), cuts):
            delta = {"type": "input_json_delta", "partial_json": text}
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 9},
        }
    )
    return events


def chat_stream(calls: list[PlannedCall], cuts: list[int]) -> list[Any]:
    def chunk(*deltas: dict[str, Any]) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": {"tool_calls": list(deltas)}}]}

    chunks: list[Any] = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}]
    for index, (name, arguments, call_id) in enumerate(calls):
        first = {"name": name, "arguments": ""}
        chunks.append(chunk({"index": index, "id": call_id, "type": "function", "function": first}))
        for text in pieces_of(json.dumps(arguments), cuts):
            chunks.append(chunk({"index": index, "function": {"arguments": text}}))
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    return chunks


def responses_stream(calls: list[PlannedCall], cuts: list[int]) -> list[Any]:
    events: list[Any] = []
    for index, (name, arguments, call_id) in enumerate(calls):
        item = {"type": "function_call", "id": f"fc_{index}", "call_id": call_id, "name": name}
        events.append(
            {
                "type": "response.output_item.added",
                "output_index": index,
                "item": {**item, "arguments": ""},
            }
        )
        text = json.dumps(arguments)
        for piece in pieces_of(text, cuts):
            events.append(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": f"fc_{index}",
                    "delta": piece,
                }
            )
        events.append(
            {
                "type": "response.output_item.done",
                "output_index": index,
                "item": {**item, "arguments": text},
            }
        )
    return events


STREAMS: dict[str, tuple[Callable[..., list[Any]], Callable[[], Any], str, Callable]] = {
    "gemini": (gemini_stream, gemini.StreamAccumulator, "response", partial(parse_calls, "gemini")),
    "anthropic": (
        anthropic_stream,
        anthropic.AnthropicStreamAccumulator,
        "message",
        partial(parse_calls, "anthropic"),
    ),
    "openai-chat": (
        chat_stream,
        openai_chat.ChatStreamAccumulator,
        "response",
        partial(parse_calls, "openai-chat"),
    ),
    "openai-responses": (
        responses_stream,
        openai_responses.ResponsesStreamAccumulator,
        "response",
        partial(parse_calls, "openai-responses"),
    ),
}
corruptions = st.lists(
    st.tuples(
        st.integers(0, 10**6),
        st.sampled_from(["set", "drop", "repeat", "swap"]),
        st.sampled_from(VOCABULARY),
        values,
    ),
    max_size=2,
)


def corrupted(events: list[Any], changes: list[tuple[int, str, str, Any]]) -> list[Any]:
    events = copy.deepcopy(events)
    for position, how, key, value in changes:
        at = position % len(events)
        if how == "set" and isinstance(events[at], dict):
            node = events[at]
            while isinstance(node.get(key), dict) and position % 2:  # now and then one level down
                node, position = node[key], position // 2
            node[key] = value
        elif how == "drop":
            del events[at]
            if not events:
                return events
        elif how == "repeat":
            events.insert(at, copy.deepcopy(events[at]))
        else:
            events[at], events[-1] = events[-1], events[at]
    return events


@settings(max_examples=700, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(sorted(STREAMS)),
    planned_calls,
    st.lists(st.integers(0, 1000), max_size=4),
    corruptions,
)
def test_real_looking_streams_add_up_to_their_calls_and_corrupted_ones_fail_cleanly(
    provider: str, calls: list[PlannedCall], cuts: list[int], changes: list[Any]
) -> None:
    build, make, assemble, parse = STREAMS[provider]
    events = build(calls, cuts)
    stream = make()
    if not changes:
        for event in events:
            stream.add(event)
        items = parse(getattr(stream, assemble)(), TOOLSET)
        assert [(i.exposed_name, i.arguments) for i in items if isinstance(i, ToolCall)] == [
            (name, arguments) for name, arguments, _ in calls
        ]
        if provider != "gemini":
            assert [i.call_id for i in items] == [call_id for _, _, call_id in calls]
        return
    run_stream(stream, corrupted(events, changes), getattr(stream, assemble), parse)
