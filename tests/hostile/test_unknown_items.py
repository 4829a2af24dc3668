"""Every call item a response holds is answered (client-side calls toolwire does not run get an
error answer of their own type); items the provider runs itself are left alone; and for
structurally random responses every parser gives one item per call, with ids that hold."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from provider_turns import PROVIDERS, answer_of, answer_text, answered_id, parse

from corpus import load_corpus
from toolwire import (
    MalformedResponse,
    MemoryStore,
    RejectedCall,
    Tool,
    ToolCall,
    ToolSet,
    execute_tool_calls,
)
from toolwire.providers import get_provider

responses_types = pytest.importorskip("openai.types.responses")
chat_types = pytest.importorskip("openai.types.chat")

TOOLSET = ToolSet(
    [
        Tool(name="get_weather", input_schema={"type": "object"}, handler=lambda **_: "sunny"),
        Tool(name="pay", input_schema={"type": "object"}, handler=lambda **_: "paid"),
    ]
)
OUTPUT_ITEM = pydantic.TypeAdapter(responses_types.ResponseOutputItem)
INPUT_ITEM = pydantic.TypeAdapter(responses_types.ResponseInputItemParam)
TOOL_MESSAGE = pydantic.TypeAdapter(chat_types.ChatCompletionToolMessageParam)

CLIENT_CALLS = [
    (
        {"type": "custom_tool_call", "call_id": "c1", "name": "grep", "input": "TODO"},
        "custom_tool_call_output",
    ),
    (
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "c2",
            "action": {"type": "exec", "command": ["rm", "-rf", "/"], "env": {}},
            "status": "completed",
        },
        "local_shell_call_output",
    ),
    (
        {
            "type": "shell_call",
            "id": "sh_1",
            "call_id": "c3",
            "action": {"commands": ["ls"]},
            "status": "completed",
        },
        "shell_call_output",
    ),
    (
        {
            "type": "apply_patch_call",
            "id": "ap_1",
            "call_id": "c4",
            "operation": {"type": "delete_file", "path": "README.md"},
            "status": "completed",
        },
        "apply_patch_call_output",
    ),
    (
        {
            "type": "computer_call",
            "id": "cu_1",
            "call_id": "c5",
            "action": {"type": "screenshot"},
            "pending_safety_checks": [],
            "status": "completed",
        },
        "computer_call_output",
    ),
    (
        {
            "type": "tool_search_call",
            "id": "ts_1",
            "call_id": "c6",
            "arguments": {"query": "x"},
            "execution": "client",
            "status": "completed",
        },
        "tool_search_output",
    ),
]
HOSTED = [
    {
        "type": "web_search_call",
        "id": "ws_1",
        "status": "completed",
        "action": {"type": "search", "query": "x"},
    },
    {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "status": "completed"},
    {
        "type": "code_interpreter_call",
        "id": "ci_1",
        "code": "1",
        "container_id": "x",
        "outputs": [],
        "status": "completed",
    },
    {"type": "image_generation_call", "id": "ig_1", "status": "completed"},
    {
        "type": "mcp_call",
        "id": "mcp_1",
        "arguments": "{}",
        "name": "search",
        "server_label": "docs",
    },
    {"type": "mcp_list_tools", "id": "ml_1", "server_label": "docs", "tools": []},
    {
        "type": "mcp_approval_request",
        "id": "ar_1",
        "arguments": "{}",
        "name": "search",
        "server_label": "docs",
    },
    {
        "type": "tool_search_call",
        "id": "ts_2",
        "call_id": "c9",
        "arguments": {},
        "execution": "server",
        "status": "completed",
    },
    {"type": "reasoning", "id": "rs_1", "summary": []},
    {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "hi", "annotations": []}],
    },
]


@pytest.mark.parametrize(("item", "answer_type"), CLIENT_CALLS, ids=lambda x: str(x)[:30])
def test_every_client_side_responses_item_is_answered_in_its_own_shape(
    item: dict[str, Any], answer_type: str
) -> None:
    sdk_item = OUTPUT_ITEM.validate_python(item)  # the SDK's own object, as the client gets it
    [rejected] = parse("openai-responses", [sdk_item], TOOLSET)
    assert isinstance(rejected, RejectedCall)
    assert rejected.error_kind == "not_found"
    assert rejected.call_id == item["call_id"]
    answer = rejected.answer
    assert answer["type"] == answer_type
    assert answered_id(answer) == item["call_id"]
    assert INPUT_ITEM.validate_python(answer)["type"] == answer_type  # the API's input shape
    assert "Not run" in rejected.message


@pytest.mark.parametrize("item", HOSTED, ids=lambda x: f"{x['type']}-{x.get('execution', '')}")
def test_items_the_provider_runs_itself_get_no_answer(item: dict[str, Any]) -> None:
    assert parse("openai-responses", [OUTPUT_ITEM.validate_python(item)], TOOLSET) == []


@pytest.mark.anyio
async def test_a_turn_with_every_kind_of_item_answers_each_call_once_in_order() -> None:
    function_call = {
        "type": "function_call",
        "call_id": "f1",
        "name": "pay",
        "arguments": "{}",
    }
    output = [
        HOSTED[0],
        function_call,
        *[item for item, _ in CLIENT_CALLS],
        *HOSTED[1:],
    ]
    outcome = await execute_tool_calls(
        TOOLSET, "openai-responses", {"output": output}, store=MemoryStore()
    )
    assert [answered_id(a) for a in outcome.results] == ["f1", "c1", "c2", "c3", "c4", "c5", "c6"]
    assert outcome.results[0] == {"type": "function_call_output", "call_id": "f1", "output": "paid"}
    for answer in outcome.results:
        INPUT_ITEM.validate_python(answer)


def test_a_chat_custom_tool_call_is_answered_with_a_tool_message() -> None:
    completion = chat_types.ChatCompletion.model_validate(
        {
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "custom",
                                "custom": {"name": "grep", "input": "TODO"},
                            },
                            {
                                "id": "call_2",
                                "type": "function",
                                "function": {"name": "pay", "arguments": "{}"},
                            },
                        ],
                    },
                }
            ],
        }
    )
    custom, function = parse("openai-chat", completion, TOOLSET)
    assert isinstance(custom, RejectedCall)
    assert custom.answer["tool_call_id"] == "call_1"
    assert "custom tool call" in custom.answer["content"]
    TOOL_MESSAGE.validate_python(custom.answer)
    assert isinstance(function, ToolCall)
    assert function.call_id == "call_2"


def test_an_empty_custom_beside_a_function_is_a_function_call() -> None:
    records = [
        r
        for r in load_corpus("openai_compatible")
        if not r["streamed"] and "custom" in str(r["response"])
    ]
    assert records  # recorded from a real OpenAI-compatible host
    for record in records:
        [item] = parse("openai-chat", record["response"], TOOLSET)
        assert isinstance(item, ToolCall)
        assert item.exposed_name == "get_weather"
        assert item.arguments == {"city": "Mexico City"}


def test_anthropic_server_side_blocks_are_left_alone() -> None:
    anthropic_types = pytest.importorskip("anthropic.types")
    message = anthropic_types.Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude",
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            "content": [
                {"type": "text", "text": "Looking."},
                {
                    "type": "server_tool_use",
                    "id": "srvtoolu_1",
                    "name": "web_search",
                    "input": {"query": "x"},
                },
                {
                    "type": "web_search_tool_result",
                    "tool_use_id": "srvtoolu_1",
                    "content": [],
                },
                {"type": "tool_use", "id": "toolu_1", "name": "pay", "input": {}},
            ],
        }
    )
    [item] = parse("anthropic", message, TOOLSET)
    assert isinstance(item, ToolCall)
    assert item.call_id == "toolu_1"
    assert parse("anthropic", [{"type": "mcp_tool_use", "id": "m", "name": "x"}], TOOLSET) == []


def test_gemini_parts_the_model_ran_itself_are_left_alone() -> None:
    parts = [
        {"executableCode": {"language": "PYTHON", "code": "1+1"}},
        {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "2"}},
        {"text": "so", "thought": True},
        {"functionCall": {"name": "pay", "args": {}}},
    ]
    [item] = parse("gemini", parts, TOOLSET)
    assert isinstance(item, ToolCall)


@pytest.mark.parametrize(
    ("provider", "response"),
    [
        ("anthropic", {"content": [None]}),
        ("anthropic", {"content": "text"}),
        ("openai-responses", {"output": [1]}),
        ("openai-responses", {"output": {"type": "function_call"}}),
        ("openai-chat", {"choices": {"0": {}}}),
        ("openai-chat", {"choices": ["x"]}),
        ("openai-chat", {"choices": [{"message": {"tool_calls": "x"}}]}),
        ("gemini", {"candidates": [{"content": {"parts": 7}}]}),
    ],
)
def test_a_broken_envelope_is_a_malformed_response(provider: str, response: Any) -> None:
    with pytest.raises(MalformedResponse):
        parse(provider, response, TOOLSET)


# -- structurally random responses ---------------------------------------------------------------

NAMES = ["pay", "get_weather", "default_api.pay", "nope", ""]
IDS = ["a", "b", "", "tw_x"]
leaf = (
    st.none()
    | st.booleans()
    | st.integers(-2, 10**12)
    | st.floats()
    | st.text(max_size=4)
    | st.sampled_from(NAMES + IDS + ['{"a": 1}', "{", "[]", "NaN"])
)
KEYS = [
    "candidates", "content", "parts", "functionCall", "function_call", "name", "args", "id",
    "type", "input", "output", "call_id", "arguments", "choices", "message", "tool_calls",
    "function", "custom", "execution",
]  # fmt: skip
value = st.recursive(
    leaf,
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYS), c, max_size=3),
    max_leaves=8,
)
names = st.sampled_from(NAMES) | leaf
ids = st.sampled_from(IDS) | leaf
arguments = st.dictionaries(st.text(max_size=3), value, max_size=2) | value


def some_of(fields: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=fields)


gemini_response = st.lists(
    some_of(
        {
            "functionCall": some_of({"name": names, "args": arguments, "id": ids}) | value,
            "text": st.text(max_size=3),
            "thoughtSignature": leaf,
        }
    )
    | value,
    max_size=5,
).flatmap(
    lambda parts: st.sampled_from(
        [parts, {"parts": parts}, {"candidates": [{"content": {"role": "model", "parts": parts}}]}]
    )
)
anthropic_response = st.lists(
    some_of(
        {
            "type": st.sampled_from(["tool_use", "text", "server_tool_use"]) | leaf,
            "id": ids,
            "name": names,
            "input": arguments,
        }
    ),
    max_size=5,
).flatmap(lambda blocks: st.sampled_from([blocks, {"content": blocks}]))
chat_response = st.lists(
    some_of(
        {
            "id": ids,
            "type": st.sampled_from(["function", "custom"]) | leaf,
            "function": some_of({"name": names, "arguments": st.text(max_size=6) | arguments})
            | leaf,
            "custom": some_of({"name": names, "input": st.text(max_size=3)}) | leaf,
        }
    )
    | leaf,
    max_size=5,
).map(lambda calls: {"choices": [{"message": {"role": "assistant", "tool_calls": calls}}]})
responses_response = st.lists(
    some_of(
        {
            "type": st.sampled_from(
                ["function_call", "custom_tool_call", "shell_call", "tool_search_call", "message"]
            )
            | leaf,
            "call_id": ids,
            "name": names,
            "arguments": st.text(max_size=6) | arguments,
            "execution": st.sampled_from(["client", "server"]),
        }
    ),
    max_size=5,
).map(lambda items: {"output": items})
RANDOM_RESPONSES = {
    "gemini": gemini_response | value,
    "anthropic": anthropic_response | value,
    "openai-chat": chat_response | value,
    "openai-responses": responses_response | value,
}

CLIENT_TYPES = {"function_call", "custom_tool_call", "local_shell_call", "shell_call"}
CLIENT_TYPES |= {"apply_patch_call", "computer_call"}


def call_elements(provider: str, data: Any) -> list[Any] | None:
    """The elements a correct parser answers, in order, or None when the response's own
    structure is broken (the parser must raise MalformedResponse)."""
    if provider == "gemini":
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
        elif (
            isinstance(data, dict)
            and not {"parts", "functionCall", "function_call"} & data.keys()
            and isinstance(data.get("content"), dict)
            and "parts" in data["content"]
        ):
            data = data["content"]  # one candidate: its content holds the parts
        if isinstance(data, dict):
            parts = data.get("parts")
            data = [data] if parts is None else parts
        if not isinstance(data, list):
            return None
        return [
            p
            for p in data
            if isinstance(p, dict)
            and (p.get("functionCall") is not None or p.get("function_call") is not None)
        ]
    if provider == "openai-chat":
        if isinstance(data, dict) and "choices" in data:
            choices = data["choices"] or []
            if not isinstance(choices, list):
                return None
            if not choices:
                return []
            if not isinstance(choices[0], dict):
                return None
            data = choices[0].get("message") or {}
        if not isinstance(data, dict):
            return None
        calls = data.get("tool_calls")
        if calls is None:
            return []
        return calls if isinstance(calls, list) else None
    key = "content" if provider == "anthropic" else "output"
    if isinstance(data, dict):
        data = data.get(key)
        if data is None:
            return []
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        return None
    if provider == "anthropic":
        return [e for e in data if e.get("type") == "tool_use"]
    return [
        e
        for e in data
        if (isinstance(e.get("type"), str) and e["type"] in CLIENT_TYPES)
        or (e.get("type") == "tool_search_call" and e.get("execution") == "client")
    ]


def foreign(provider: str, response: Any) -> bool:
    """True when the response is another provider's shape, not this one's: parsing it must
    raise rather than find no calls (the recognizers are tested on their own elsewhere)."""
    if get_provider(provider).recognizes(response):
        return False
    return any(get_provider(p).recognizes(response) for p in PROVIDERS if p != provider)


def provider_id(provider: str, element: Any) -> str | None:
    if provider == "gemini":
        body = element.get("functionCall")
        if body is None:
            body = element.get("function_call")
        element = body
    if not isinstance(element, dict):
        return None
    value = element.get("call_id" if provider == "openai-responses" else "id")
    return value if isinstance(value, str) and value else None


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
@pytest.mark.parametrize("provider", PROVIDERS)
def test_random_responses_get_one_item_per_call_with_ids_that_hold(
    provider: str, data: st.DataObject
) -> None:
    response = data.draw(RANDOM_RESPONSES[provider])
    expected = call_elements(provider, response)
    if expected is None or foreign(provider, response):
        with pytest.raises(MalformedResponse):
            parse(provider, response, TOOLSET)
        return
    items = parse(provider, response, TOOLSET)
    assert len(items) == len(expected)
    sent = [provider_id(provider, element) for element in expected]
    local_ids = [item.local_id for item in items if isinstance(item, ToolCall)]
    assert len(set(local_ids)) == len(local_ids)
    seen: set[str] = set()
    for item, call_id in zip(items, sent, strict=True):
        assert item.call_id == call_id
        answer = answer_of(provider, item)
        answer_text(answer)
        if call_id is not None:
            assert answered_id(answer) == call_id
            if call_id in seen:  # a later duplicate is never run
                assert isinstance(item, RejectedCall)
            seen.add(call_id)
        elif provider == "gemini":
            assert answered_id(answer) is None  # a generated id is never sent to Gemini
        else:
            assert answered_id(answer) not in sent
        if isinstance(item, ToolCall) and call_id is None:
            assert item.local_id not in sent
