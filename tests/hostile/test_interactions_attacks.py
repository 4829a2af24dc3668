"""Hostile interactions, streams, tool results and deployments against the gemini-interactions
provider and ``toolwire.integrations.genai.run_interaction_calls``.

Each test states an invariant: every call answered once with its own id, only typed errors,
bounded streams, no call taken from another provider's shape, no link made into a fetch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest
from fetch_targets import SECRET, hostile_schemas, references, serving
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import (
    AudioContent,
    EmbeddedResource,
    Executor,
    ImageContent,
    MalformedResponse,
    MemoryStore,
    Policy,
    RejectedCall,
    ResourceLink,
    TextContent,
    Tool,
    ToolCall,
    ToolResult,
    ToolSet,
)
from toolwire.approval import ApprovalPending, DeferredApproval
from toolwire.providers import StreamLimits, openai_responses, parse_calls
from toolwire.providers import gemini_interactions as gi

interactions = pytest.importorskip("google.genai.interactions")
genai = pytest.importorskip("toolwire.integrations.genai")

EVENT = pydantic.TypeAdapter(interactions.InteractionSSEEvent)
_FILES = pydantic.ConfigDict(arbitrary_types_allowed=True)
INPUT = pydantic.TypeAdapter(interactions.InteractionsInputParam, config=_FILES)
MB = 1_000_000
PNG = b"\x89PNG\r\n\x1a\n"

PAID: list[Any] = []


@toolwire.tool
def pay(amount: int) -> str:
    """Pay an amount."""
    PAID.append(amount)
    return f"paid {amount}"


def _secret() -> str:
    PAID.append("secret")
    return "the secret"


def _gemini_only() -> str:
    PAID.append("gemini_only")
    return "gemini only"


SECRET_TOOL = Tool(name="secret", handler=_secret)
GEMINI_ONLY = Tool(name="gemini_only", handler=_gemini_only, providers=frozenset({"gemini"}))
TOOLS = ToolSet([pay, SECRET_TOOL, GEMINI_ONLY], exclude=["secret"])


@pytest.fixture(autouse=True)
def _nothing_paid() -> None:
    PAID.clear()


def call(call_id: Any, name: Any = "pay", arguments: Any = None) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": call_id,
        "name": name,
        "arguments": {"amount": 1} if arguments is None else arguments,
    }


def result_step(call_id: Any, text: str = "paid 1") -> dict[str, Any]:
    return {"type": "function_result", "call_id": call_id, "name": "pay", "result": text}


def interaction(*steps: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"id": "int_1", "status": "requires_action", "steps": list(steps), **fields}


def sdk(data: dict[str, Any]) -> Any:
    return interactions.Interaction.model_validate(data)


def run(response: Any, source: Any = TOOLS, **kwargs: Any) -> toolwire.Outcome:
    async def go() -> toolwire.Outcome:
        return await toolwire.execute_tool_calls(source, "gemini-interactions", response, **kwargs)

    return anyio.run(go)


def run_calls(response: Any, **kwargs: Any) -> dict[str, Any]:
    async def go() -> dict[str, Any]:
        return await genai.run_interaction_calls(response, **kwargs)

    return anyio.run(go)


def accumulate(events: list[Any], limits: StreamLimits | None = None) -> dict[str, Any]:
    accumulator = gi.Accumulator(limits=limits)
    for event in events:
        accumulator.add(event)
    return accumulator.response()


def start(index: int, step: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.start", "index": index, "step": step}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"event_type": "step.delta", "index": index, "delta": fields}


def created(interaction_id: str) -> dict[str, Any]:
    return {
        "event_type": "interaction.created",
        "interaction": {"id": interaction_id, "status": "in_progress"},
    }


def completed(interaction_id: str, steps: list[Any], status: str = "requires_action") -> dict:
    return {
        "event_type": "interaction.completed",
        "interaction": {"id": interaction_id, "status": status, "steps": steps},
    }


# -- (a) and (b): one answer per call, its own ---------------------------------------------------


def test_a_shared_id_in_an_sdk_interaction_runs_once_and_every_call_is_answered() -> None:
    response = sdk(
        interaction(call("x", arguments={"amount": 1}), call("x", arguments={"amount": 2}))
    )
    outcome = run(response)
    assert PAID == [1]
    assert [r["call_id"] for r in outcome.results] == ["x", "x"]
    assert "is_error" not in outcome.results[0]
    assert outcome.results[1]["is_error"] is True
    assert "also the id of an earlier call" in outcome.results[1]["result"]


def test_id_less_calls_get_distinct_ids_that_no_sent_id_takes() -> None:
    first = parse_calls(gi.NAME, {"steps": [call(None), call(None)]}, TOOLS)
    taken = first[0].local_id
    items = parse_calls(
        gi.NAME, {"steps": [call(None), call(None), call(taken, arguments={"amount": 9})]}, TOOLS
    )
    ids = [item.local_id for item in items]
    assert len(set(ids)) == 3
    assert ids[2] == taken


def test_a_retried_turn_with_a_store_never_runs_a_call_twice() -> None:
    store = MemoryStore()
    executor = Executor(TOOLS, store=store)
    response = sdk(interaction(call("a", arguments={"amount": 5})))
    first = run_calls(response, executor=executor, run_id="turn-1")
    again = run_calls(response, executor=executor, run_id="turn-1")
    assert PAID == [5]
    assert first == again
    assert first["input"][0]["result"] == "paid 5"


def test_a_call_answered_later_in_the_same_steps_is_not_run_again() -> None:
    response = interaction(call("old"), result_step("old"), call("new", arguments={"amount": 2}))
    outcome = run(response)
    assert PAID == [2]
    assert [r["call_id"] for r in outcome.results] == ["new"]


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([result_step("a", "old"), call("a", arguments={"amount": 2})], id="before"),
        pytest.param(
            [call("a"), result_step("a", "old"), call("a", arguments={"amount": 2})],
            id="one-result-two-calls",
        ),
    ],
)
def test_a_result_answers_only_the_one_call_before_it(steps: list[dict[str, Any]]) -> None:
    continued = run_calls(sdk(interaction(*steps)), toolset=TOOLS)
    assert [step["call_id"] for step in continued.get("input", [])] == ["a"]


def test_an_interaction_without_an_id_is_refused_before_anything_runs() -> None:
    with pytest.raises(MalformedResponse, match="no id"):
        run_calls({"status": "requires_action", "steps": [call("a")]}, toolset=TOOLS)
    assert PAID == []


def test_the_continuation_carries_one_sdk_valid_answer_per_call_in_order() -> None:
    response = sdk(
        interaction(
            {"type": "thought", "signature": "c2ln"},
            call("a", arguments={"amount": 3}),
            call("b", "nope", {}),
            call("c", arguments={"amount": "many"}),
            call("d", arguments={"amount": 1.5}),
        )
    )
    continued = run_calls(response, toolset=TOOLS)
    assert continued["previous_interaction_id"] == "int_1"
    assert [s["call_id"] for s in continued["input"]] == ["a", "b", "c", "d"]
    assert [bool(s.get("is_error")) for s in continued["input"]] == [False, True, True, True]
    INPUT.validate_python(continued["input"])
    assert PAID == [3]


# -- (c): only toolwire's errors -----------------------------------------------------------------


@pytest.mark.parametrize("call_id", [["a"], {"a": 1}])
def test_a_function_result_with_an_unhashable_call_id_is_not_a_type_error(call_id: Any) -> None:
    response = interaction({"type": "function_result", "call_id": call_id}, call("a"))
    try:
        outcome = run(response)
    except MalformedResponse:
        return
    assert [r["call_id"] for r in outcome.results] == ["a"]


@pytest.mark.parametrize(
    "arguments",
    [
        pytest.param({"amount": float("nan")}, id="nan"),
        pytest.param({"amount": 10**5000}, id="huge-int"),
        pytest.param({"amount": "a\ud800"}, id="surrogate"),
        pytest.param("{" * 100_000, id="deep-text"),
        pytest.param("not json", id="text"),
        pytest.param(7, id="number"),
    ],
)
def test_arguments_toolwire_cannot_carry_are_answered(arguments: Any) -> None:
    outcome = run(interaction(call("a", arguments=arguments)))
    (answer,) = outcome.results
    assert (answer["call_id"], answer["is_error"]) == ("a", True)
    assert PAID == []


def test_deeply_nested_object_arguments_are_answered_not_a_recursion_error() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(50_000):
        node["a"] = {}
        node = node["a"]
    for call_id in ("a", None):
        outcome = run(interaction(call(call_id, arguments=deep)))
        assert outcome.results[0]["is_error"] is True
        assert "nested deeper" in outcome.results[0]["result"]


def test_an_sdk_object_built_without_validation_is_a_malformed_response() -> None:
    broken = interactions.Interaction.model_construct(id="i", status="x", steps=[object()])
    with pytest.raises(MalformedResponse, match="could not be read"):
        run(broken)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(
        st.fixed_dictionaries(
            {"type": st.sampled_from(["function_call", "function_result", "thought", "x"])},
            optional={
                "id": st.sampled_from(["a", "b", "", None, 5]),
                "call_id": st.sampled_from(["a", "b", "", None, 5]),
                "name": st.sampled_from(["pay", "secret", "gemini_only", "default_api.pay", 3]),
                "arguments": st.one_of(
                    st.dictionaries(st.sampled_from(["amount", "x"]), st.integers() | st.text()),
                    st.text(max_size=6),
                    st.none(),
                ),
            },
        ),
        max_size=6,
    )
)
def test_random_steps_are_answered_once_each_or_refused(steps: list[dict[str, Any]]) -> None:
    PAID.clear()
    try:
        outcome = run(interaction(*steps))
    except MalformedResponse:
        return
    assert len(outcome.results) == len(outcome.calls)
    assert "secret" not in PAID
    assert "gemini_only" not in PAID
    ids = [r["call_id"] for r in outcome.results]
    ran = [r["call_id"] for r in outcome.results if not r.get("is_error")]
    assert len(set(ran)) == len(ran)  # an id is never run twice
    assert all(isinstance(i, str) and i for i in ids)


# -- (d) and (e): only what the model was shown, and never past a deny or an approval ------------


@pytest.mark.parametrize("name", ["secret", "gemini_only", "default_api.secret", "x:gemini_only"])
def test_a_tool_the_model_was_not_shown_is_unknown_and_never_runs(name: str) -> None:
    listing = toolwire.tools(TOOLS, "gemini-interactions")
    assert [t["name"] for t in listing.tools] == ["pay"]
    continued = run_calls(sdk(interaction(call("h", name, {}))), toolset=TOOLS)
    (answer,) = continued["input"]
    assert answer["is_error"] is True
    assert "Unknown tool" in answer["result"]
    assert "secret" not in answer["result"].split("Available tools:")[1]
    assert "gemini_only" not in answer["result"].split("Available tools:")[1]
    assert PAID == []


def test_a_deny_holds_and_an_ask_pauses_before_running() -> None:
    denied = Executor(TOOLS, policy=Policy.of(deny=["pay"]))
    continued = run_calls(sdk(interaction(call("a"))), executor=denied)
    assert continued["input"][0]["is_error"] is True
    assert "Denied" in continued["input"][0]["result"]
    asking = Executor(TOOLS, policy=Policy.of(ask=["pay"]), approver=DeferredApproval())
    with pytest.raises(ApprovalPending):
        run_calls(sdk(interaction(call("a"))), executor=asking)
    assert PAID == []


def test_a_listing_under_a_policy_leaves_out_what_it_denies_and_calls_to_it_stay_denied() -> None:
    policy = Policy.of(deny=["pay"])
    listing = toolwire.tools(TOOLS, "gemini-interactions", policy=policy)
    assert listing.tools is None
    outcome = run(interaction(call("a")), listing, policy=policy)
    assert outcome.results[0]["is_error"] is True
    assert PAID == []


# -- (f): the stream accumulator -----------------------------------------------------------------


def test_sdk_events_with_deltas_to_the_wrong_step_type_never_make_a_call() -> None:
    events = [
        created("int_9"),
        start(
            0,
            {
                "type": "mcp_server_tool_call",
                "id": "m1",
                "name": "pay",
                "server_name": "srv",
                "arguments": {},
            },
        ),
        delta(0, type="arguments_delta", arguments='{"amount": 1}'),
        start(1, {"type": "model_output"}),
        delta(1, type="arguments_delta", arguments='{"amount": 2}'),
        delta(1, type="text", text="done"),
    ]
    response = accumulate([EVENT.validate_python(e) for e in events])
    assert parse_calls(gi.NAME, response, TOOLS) == []
    assert gi.text(response) == "done"


def test_the_hops_of_an_automatic_continuation_add_up_and_the_last_id_continues() -> None:
    events = [
        created("hop_1"),
        start(0, call("a", arguments={})),
        delta(0, type="arguments_delta", arguments='{"amount": 1}'),
        completed("hop_1", [], status="requires_continuation"),
        created("hop_2"),
        start(0, call("b", arguments={})),
        delta(0, type="arguments_delta", arguments='{"amount": 2}'),
        {
            "event_type": "interaction.status_update",
            "interaction_id": "hop_2",
            "status": "requires_action",
        },
    ]
    response = accumulate([EVENT.validate_python(e) for e in events])
    continued = run_calls(response, toolset=TOOLS)
    assert continued["previous_interaction_id"] == "hop_2"
    assert [s["call_id"] for s in continued["input"]] == ["a", "b"]
    assert sorted(PAID) == [1, 2]  # each ran once; calls run concurrently, answers in order


def test_steps_streamed_over_many_hops_stay_within_the_part_limit() -> None:
    events = [e for n in range(6) for e in (created(f"hop_{n}"), start(0, call(f"c{n}")))]
    with pytest.raises(MalformedResponse, match="parts"):
        accumulate(events, StreamLimits(max_parts=4))


@pytest.mark.parametrize(
    "event",
    [
        {"event_type": "error", "error": {"message": "quota", "code": 429}},
        {"event_type": "error", "error": ["x"] * 10},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "x"}},
        {"event_type": "step.start", "index": -1, "step": {"type": "thought"}},
        {"event_type": "step.start", "index": True, "step": {"type": "thought"}},
        {"event_type": "step.start", "index": 0, "step": {"type": 5}},
        {"event_type": "interaction.completed", "interaction": "done"},
        {"event_type": "step.delta", "index": 0, "delta": None},
        [],
    ],
)
def test_events_not_shaped_as_streamed_are_malformed(event: Any) -> None:
    with pytest.raises(MalformedResponse):
        accumulate([event])


def test_streamed_arguments_past_the_character_limit_are_malformed() -> None:
    events = [start(0, call("a", arguments={}))]
    events += [delta(0, type="arguments_delta", arguments="x" * 10)] * 3
    with pytest.raises(MalformedResponse, match="characters"):
        accumulate(events, StreamLimits(max_chars=25))


def test_a_completed_interaction_with_garbage_steps_is_refused_when_parsed() -> None:
    response = accumulate([completed("i", [1, "two", None])])
    with pytest.raises(MalformedResponse, match="not an object"):
        run(response)


def test_a_step_started_twice_at_one_index_is_malformed() -> None:
    events = [
        start(0, call("a", arguments={"amount": 1})),
        {"event_type": "step.stop", "index": 0},
        start(0, call("b", arguments={"amount": 2})),
    ]
    with pytest.raises(MalformedResponse):
        accumulate([EVENT.validate_python(e) for e in events])


@pytest.mark.parametrize("content", [5, 2.5, True])
def test_text_added_to_a_step_whose_content_is_not_a_list_is_malformed_not_a_type_error(
    content: Any,
) -> None:
    try:
        response = accumulate(
            [
                start(0, {"type": "model_output", "content": content}),
                delta(0, type="text", text="x"),
            ]
        )
    except MalformedResponse:
        return
    run(response)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([call(f"c{n}") for n in range(10)], id="parts"),
        pytest.param(
            [{"type": "model_output", "content": [{"type": "text", "text": "x" * 1_000}]}],
            id="chars",
        ),
    ],
)
def test_a_completed_interactions_steps_count_toward_the_stream_limits(steps: list[Any]) -> None:
    with pytest.raises(MalformedResponse):
        accumulate([created("i"), completed("i", steps)], StreamLimits(max_parts=4, max_chars=100))


_VALUE = (
    st.none() | st.booleans() | st.integers(-1, 3) | st.sampled_from(["pay", "{", '{"amount": 1}'])
)
_STEP = st.fixed_dictionaries(
    {"type": st.sampled_from(["function_call", "model_output", "thought", "function_result"])},
    optional={
        "id": st.sampled_from(["a", "b", 5]),
        "call_id": st.sampled_from(["a", "b", 5]),
        "name": st.sampled_from(["pay", "secret", 1]),
        "arguments": _VALUE | st.dictionaries(st.just("amount"), _VALUE, max_size=1),
        "content": st.lists(_VALUE, max_size=2),
    },
)
_EVENT = st.one_of(
    st.builds(start, st.integers(-1, 3), _STEP),
    st.builds(
        lambda i, kind, v: delta(i, type=kind, arguments=v, text=v, signature=v),
        st.integers(0, 3),
        st.sampled_from(["arguments_delta", "text", "thought_signature", "image"]),
        _VALUE,
    ),
    st.builds(lambda i: {"event_type": "step.stop", "index": i}, st.integers(0, 3)),
    st.builds(created, st.sampled_from(["h1", "h2"])),
    st.builds(completed, st.sampled_from(["h1", "h2"]), st.lists(_STEP | _VALUE, max_size=3)),
    st.builds(lambda s: {"event_type": "interaction.status_update", "status": s}, _VALUE),
    _VALUE,
)


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(_EVENT, max_size=10))
def test_random_event_sequences_raise_only_malformed_response(events: list[Any]) -> None:
    PAID.clear()
    try:
        response = accumulate(events, StreamLimits(max_parts=6, max_chars=200))
        outcome = run(response)
    except MalformedResponse:
        return
    assert len(outcome.results) == len(outcome.calls)
    assert "secret" not in PAID


# -- (g): other providers' responses ---------------------------------------------------------------


def _responses_output(*items: dict[str, Any]) -> list[dict[str, Any]]:
    function_call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "pay",
        "arguments": '{"amount": 1}',
        "status": "completed",
    }
    return [*items, function_call]


def test_an_openai_responses_response_is_refused_naming_its_provider() -> None:
    from openai.types.responses import Response

    response = Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 0,
            "model": "gpt-5",
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "output": _responses_output(),
        }
    )
    for shape in (response, response.output, response.output[0]):
        with pytest.raises(MalformedResponse, match="openai-responses"):
            parse_calls(gi.NAME, shape, TOOLS)


def test_other_providers_responses_are_refused_naming_theirs() -> None:
    gemini_response = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "pay"}}]}}]}
    anthropic_message = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t", "name": "pay", "input": {}}],
    }
    for response, provider in ((gemini_response, "'gemini'"), (anthropic_message, "anthropic")):
        with pytest.raises(MalformedResponse, match=provider):
            parse_calls(gi.NAME, response, TOOLS)


@pytest.mark.parametrize(
    "hosted",
    [
        {"type": "file_search_call", "id": "fs_1", "queries": ["q"], "status": "completed"},
        {"type": "tool_search_call", "id": "ts_1", "arguments": {}, "status": "completed"},
    ],
    ids=["file_search_call", "tool_search_call"],
)
def test_an_openai_output_list_with_a_hosted_tool_item_is_not_taken_for_steps(
    hosted: dict[str, Any],
) -> None:
    with pytest.raises(MalformedResponse, match="openai-responses"):
        parse_calls(gi.NAME, _responses_output(hosted), TOOLS)


@pytest.mark.parametrize(
    "steps",
    [
        pytest.param([{"type": "thought", "signature": "c2ln"}, call("a")], id="steps"),
        pytest.param(call("a"), id="one-step"),
    ],
)
def test_interactions_steps_given_to_the_responses_parser_are_refused(steps: Any) -> None:
    with pytest.raises(MalformedResponse, match="gemini-interactions"):
        parse_calls(openai_responses.NAME, steps, TOOLS)


# -- (h): nothing fetched, no media the API should not get ---------------------------------------


def test_no_schema_makes_the_declaration_or_a_call_fetch_anything(tmp_path: Path) -> None:
    with serving(tmp_path) as target:
        schemas = hostile_schemas(target)
        toolset = ToolSet(
            # told to take what another document names as any value (else refused at once)
            Tool(
                name=f"t{i}",
                input_schema=schema,
                handler=lambda **_: "looked up",
                external_refs="unconstrained",
            )
            for i, schema in enumerate(schemas.values())
        )
        listing = toolwire.tools(toolset, "gemini-interactions")
        assert [r for r in references(listing.tools) if not r.startswith("#")] == []
        assert SECRET not in json.dumps(listing.tools)
        odd = {"ref in items": {"q": ["x"]}, "ref in patternProperties": {"q": {"x1": [1]}}}
        steps = [
            call(f"c{i}", f"t{i}", odd.get(name, {"q": "anything"}))
            for i, name in enumerate(schemas)
        ]
        outcome = run(interaction(*steps), listing)
        assert len(outcome.results) == len(steps)
        assert SECRET not in json.dumps(outcome.results)
    assert target.connections == []


def _answer_to(result: ToolResult) -> dict[str, Any]:
    item = parse_calls(gi.NAME, {"steps": [call("m")]}, TOOLS)[0]
    assert isinstance(item, ToolCall)
    return gi.answer(item, result)


@pytest.mark.parametrize(
    "uri",
    [
        "https://generativelanguage.googleapis.com.evil.example/v1beta/files/abc",
        "https://generativelanguage.googleapis.com@evil.example/v1beta/files/abc",
        "https://evil.example/?u=https://generativelanguage.googleapis.com/v1beta/files/abc",
        "https://generativelanguage.googleapis.com/v1beta/files/abc/../../../upload",
        "https://generativelanguage.googleapis.com/v1beta/files/abc?key=stolen",
        "http://generativelanguage.googleapis.com/v1beta/files/abc",
        "https://generativelanguage.googleapis.com/v1beta/files/ABC",
        "gs://bucket/object.pdf",
        "file:///srv/report.pdf",
        "https://169.254.169.254/latest/meta-data.png",
    ],
)
def test_a_link_anywhere_but_a_files_api_file_stays_text(uri: str) -> None:
    answer = _answer_to(ToolResult(content=(ResourceLink(uri=uri, mime_type="application/pdf"),)))
    assert isinstance(answer["result"], str)
    assert "uri" not in json.dumps(answer["result"]).replace(uri, "")


def test_only_media_types_the_api_takes_are_sent_and_never_by_reference() -> None:
    answer = _answer_to(
        ToolResult(
            content=(
                TextContent("t"),
                ImageContent(PNG, "image/svg+xml"),
                AudioContent(b"RIFF", "audio/x-midi"),
                EmbeddedResource(uri="file:///x", blob=b"<html>", mime_type="text/html"),
                EmbeddedResource(uri="https://evil.example/a.pdf", blob=b"%PDF"),
                ImageContent(PNG, "image/png"),
            )
        )
    )
    items = answer["result"]
    assert [i["type"] for i in items] == ["text", "text", "text", "text", "text", "image"]
    assert all("uri" not in i for i in items)


@pytest.mark.parametrize(
    "content",
    [
        ImageContent(PNG + b"\x00" * (6 * MB), "image/png"),
        AudioContent(b"\x00" * (6 * MB), "audio/wav"),
        EmbeddedResource(uri="file:///b", blob=b"\x00" * (6 * MB), mime_type="application/pdf"),
        EmbeddedResource(uri="file:///t", text="x" * (5 * MB)),
    ],
    ids=["image", "audio", "document", "embedded-text"],
)
def test_no_content_kind_passes_the_output_cap(content: Any) -> None:
    big = ToolSet([Tool(name="big", handler=lambda: ToolResult(content=(content,)))])
    outcome = run(interaction(call("c", "big", {})), big)
    assert len(json.dumps(outcome.results[0])) < 200_000


@pytest.mark.parametrize("structured", ["prefer", "auto", "append", "ignore"])
def test_large_structured_content_is_capped_in_every_mode(structured: str) -> None:
    value = ToolResult(
        content=(TextContent("t" * (2 * MB)), ImageContent(PNG, "image/png")),
        structured_content={"k": "x" * (5 * MB)},
    )
    big = ToolSet([Tool(name="big", handler=lambda: value)])
    continued = run_calls(
        sdk(interaction(call("c", "big", {}))), toolset=big, structured=structured
    )
    assert len(json.dumps(continued["input"])) < 300_000


def test_rejected_calls_echo_only_their_own_id() -> None:
    items = parse_calls(
        gi.NAME, {"steps": [call("a", "nope", {}), call("b"), call("c", arguments="{")]}, TOOLS
    )
    assert [type(i) for i in items] == [RejectedCall, ToolCall, RejectedCall]
    assert [i.answer["call_id"] for i in items if isinstance(i, RejectedCall)] == ["a", "c"]
