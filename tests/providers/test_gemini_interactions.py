"""The gemini-interactions provider: declarations, calls, answers and streams checked against
google-genai's own Interactions types."""

from __future__ import annotations

import json
import warnings
from typing import Any

import anyio
import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import toolwire
from toolwire import ConfigurationError, MalformedResponse, ToolResult, ToolSet, ToolwireWarning
from toolwire.calls import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
)
from toolwire.compat import check
from toolwire.providers import gemini_interactions as gi
from toolwire.providers._wire import StreamLimits

interactions = pytest.importorskip("google.genai.interactions")

_FILES = pydantic.ConfigDict(arbitrary_types_allowed=True)  # media data may be a file object
TOOLS = pydantic.TypeAdapter(list[interactions.ToolParam], config=_FILES)
INPUT = pydantic.TypeAdapter(interactions.InteractionsInputParam, config=_FILES)
EVENT = pydantic.TypeAdapter(interactions.InteractionSSEEvent)
PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


@toolwire.tool
def search(query: str, limit: int = 5) -> dict[str, Any]:
    """Search the catalogue. Results come back ranked.

    Args:
        query: What to look for.
        limit: How many results.
    """
    return {"query": query, "hits": [f"item {i}" for i in range(limit)]}


@toolwire.tool
def photo(name: str) -> ToolResult:
    """A photo of the item."""
    return ToolResult(
        content=(
            TextContent(f"photo of {name}"),
            ImageContent(PNG, "image/png"),
            AudioContent(b"RIFF", "audio/wav"),
            ImageContent(b"x", "image/x-icon"),
            ResourceLink(uri="https://example.com/a.png", mime_type="image/png"),
            ResourceLink(
                uri="https://generativelanguage.googleapis.com/v1beta/files/abc-123",
                mime_type="application/pdf",
            ),
            EmbeddedResource(uri="file:///r.pdf", mime_type="application/pdf", blob=b"%PDF"),
            EmbeddedResource(uri="file:///r.bin", blob=b"\x00"),
        )
    )


@toolwire.tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


TOOLSET = ToolSet([search, photo, broken])


def _run(listing: Any, response: Any) -> toolwire.Outcome:
    return anyio.run(toolwire.execute_tool_calls, listing, response)


# -- declare ---------------------------------------------------------------------------------------


def test_functions_are_declared_flat_in_the_sdks_own_type() -> None:
    listing = toolwire.tools(TOOLSET, "gemini-interactions")
    TOOLS.validate_python(listing.tools)
    first = listing.tools[0]
    assert (first["type"], first["name"]) == ("function", "search")
    assert first["parameters"]["required"] == ["query"]
    assert "defer_loading" not in first


def test_deferred_tools_carry_defer_loading_and_a_short_description() -> None:
    listing = toolwire.tools(
        TOOLSET, "gemini-interactions", deferred=("search",), native_tools=("tool_search",)
    )
    TOOLS.validate_python(listing.tools)
    search_entry = listing.tools[0]
    assert search_entry["defer_loading"] is True
    assert search_entry["short_description"] == "Search the catalogue."
    assert "defer_loading" not in listing.tools[1]
    assert listing.tools[-1] == {"type": "tool_search"}


def test_a_deferred_name_that_is_no_tool_is_warned_about_naming_the_declared_ones() -> None:
    with pytest.warns(ToolwireWarning, match=r"serch.*declared: search, photo, broken"):
        listing = toolwire.tools(TOOLSET, "gemini-interactions", deferred=("serch",))
    assert not any("defer_loading" in entry for entry in listing.tools)
    # a tool a policy hides is let be, silently
    policy = toolwire.Policy(toolwire.Rule("deny", "photo"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        hidden = toolwire.tools(TOOLSET, "gemini-interactions", deferred=("photo",), policy=policy)
    assert [entry["name"] for entry in hidden.tools] == ["search", "broken"]
    with pytest.raises(ConfigurationError, match="not a native tool"):
        toolwire.tools(TOOLSET, "gemini-interactions", native_tools=(42,))


def test_native_tools_in_every_spelling() -> None:
    listing = toolwire.tools(
        [],
        "gemini-interactions",
        native_tools=("google_search", ("url_context", {}), {"type": "code_execution"}),
    )
    assert listing.tools == [
        {"type": "google_search"},
        {"type": "url_context"},
        {"type": "code_execution"},
    ]
    TOOLS.validate_python(listing.tools)


def test_check_has_a_gemini_interactions_column() -> None:
    (report,) = check([search], ["gemini-interactions"])
    (verdict,) = report.verdicts
    assert verdict.provider == "gemini-interactions"
    assert verdict.status in ("accepted", "converted")


# -- parse and answer -----------------------------------------------------------------------------


def _interaction(*steps: dict[str, Any], **fields: Any) -> Any:
    return interactions.Interaction.model_validate(
        {"id": "int_1", "status": "requires_action", "steps": list(steps), **fields}
    )


def _call(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": call_id, "name": name, "arguments": arguments}


def test_calls_run_in_order_and_every_one_is_answered_with_its_id() -> None:
    listing = toolwire.tools(TOOLSET, "gemini-interactions")
    response = _interaction(
        {"type": "thought", "signature": "c2ln"},
        _call("a", "search", {"query": "lamps", "limit": 2.0}),
        _call("b", "nope", {}),
        _call("c", "search", {"limit": "many"}),
        _call("d", "broken", {}),
    )
    outcome = _run(listing, response)
    results = outcome.results
    assert [r["call_id"] for r in results] == ["a", "b", "c", "d"]
    assert results[0] == {
        "type": "function_result",
        "call_id": "a",
        "name": "search",
        "result": {"query": "lamps", "hits": ["item 0", "item 1"]},  # 2.0 taken as 2
    }
    assert all(r.get("is_error") for r in results[1:])
    assert "Available tools: search, photo, broken" in results[1]["result"]
    assert "query" in results[2]["result"]
    assert "disk on fire" in results[3]["result"]
    INPUT.validate_python(outcome.followup(response))
    assert outcome.followup(response) == results
    assert gi.continuation(response, results) == {
        "previous_interaction_id": "int_1",
        "input": results,
    }


def test_a_call_answered_in_the_same_steps_is_not_run_again() -> None:
    ran: list[str] = []

    @toolwire.tool
    def once(tag: str) -> str:
        """Runs once."""
        ran.append(tag)
        return tag

    response = {
        "id": "int_2",
        "status": "requires_action",
        "steps": [
            _call("old", "once", {"tag": "old"}),
            {"type": "function_result", "call_id": "old", "name": "once", "result": "old"},
            _call("new", "once", {"tag": "new"}),
        ],
    }
    outcome = _run(toolwire.tools([once], "gemini-interactions"), response)
    assert ran == ["new"]
    assert [r["call_id"] for r in outcome.results] == ["new"]


def test_a_repeated_call_id_is_refused_not_run_twice() -> None:
    ran: list[str] = []

    @toolwire.tool
    def once(tag: str) -> str:
        """Runs once."""
        ran.append(tag)
        return tag

    response = {"steps": [_call("x", "once", {"tag": "1"}), _call("x", "once", {"tag": "2"})]}
    outcome = _run(toolwire.tools([once], "gemini-interactions"), response)
    assert ran == ["1"]
    assert outcome.results[1]["is_error"]


@pytest.mark.parametrize("arguments", ['{"query": "x"', "[1, 2]", 7, ["query"], '{"query": NaN}'])
def test_arguments_that_are_not_an_object_are_answered(arguments: Any) -> None:
    outcome = _run(
        toolwire.tools(TOOLSET, "gemini-interactions"), {"steps": [_call("a", "search", arguments)]}
    )
    (result,) = outcome.results
    assert (result["is_error"], result["call_id"]) == (True, "a")
    assert outcome.calls[0].result.error_kind == "invalid_arguments"


def test_media_go_as_a_content_list_in_the_sdks_own_type() -> None:
    outcome = _run(
        toolwire.tools(TOOLSET, "gemini-interactions", file_links=True),
        _interaction(_call("p", "photo", {"name": "lamp"})),
    )
    (step,) = outcome.results
    pydantic.TypeAdapter(list[interactions.FunctionResultStepParam], config=_FILES).validate_python(
        [step]
    )
    kinds = [item["type"] for item in step["result"]]
    assert kinds == ["text", "image", "audio", "text", "text", "document", "document", "text"]
    assert step["result"][1]["mime_type"] == "image/png"
    assert step["result"][3]["text"].startswith("[image: image/x-icon")  # a type it takes not
    # a link to any other host stays text: toolwire never makes Gemini fetch a URL
    assert step["result"][4]["text"].startswith("[resource link: https://example.com/a.png")
    assert step["result"][5] == {
        "type": "document",
        "mime_type": "application/pdf",
        "uri": "https://generativelanguage.googleapis.com/v1beta/files/abc-123",
    }
    assert step["result"][6]["data"] == "JVBERg=="
    assert step["result"][7]["text"].startswith("[resource: file:///r.bin")
    # without file_links, a Files API link is text too
    plain = _run(
        toolwire.tools(TOOLSET, "gemini-interactions"),
        _interaction(_call("p", "photo", {"name": "lamp"})),
    )
    assert plain.results[0]["result"][5]["text"].startswith("[resource link: https://gen")


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("prefer", {"n": 1}),
        ("auto", "one"),
        ("append", 'one\n{"n":1}'),
        ("ignore", "one"),
    ],
)
def test_structured_content_per_mode(mode: str, expected: Any) -> None:
    call = gi.parse({"steps": [_call("s", "search", {"query": "q"})]}, gi.declare(TOOLSET))[0]
    assert isinstance(call, toolwire.ToolCall)
    result = ToolResult(content=(TextContent("one"),), structured_content={"n": 1})
    answer = gi.answer(call, result, gi.Options(structured=mode))  # type: ignore[arg-type]
    assert answer["result"] == expected


def test_a_structured_result_keeps_its_own_ref_key_as_data() -> None:
    # The Interactions API has no part references: "$ref" is the tool's own data.
    call = gi.parse({"steps": [_call("s", "search", {"query": "q"})]}, gi.declare(TOOLSET))[0]
    assert isinstance(call, toolwire.ToolCall)
    answer = gi.answer(call, ToolResult(structured_content={"$ref": "#/x"}))
    assert answer["result"] == {"$ref": "#/x"}


def test_a_continuation_needs_the_interactions_id() -> None:
    with pytest.raises(MalformedResponse, match="no id to continue from"):
        gi.continuation({"steps": []}, [])
    steps = gi.model_steps(
        {"steps": [{"type": "user_input", "content": []}, _call("a", "search", {})]}
    )
    assert [s["type"] for s in steps] == ["function_call"]


def test_the_text_is_the_model_outputs_text_and_thoughts_are_left_out() -> None:
    response = _interaction(
        {"type": "thought", "summary": [{"type": "text", "text": "hmm"}]},
        {"type": "model_output", "content": [{"type": "text", "text": "Two "}]},
        {"type": "model_output", "content": [{"type": "text", "text": "lamps."}]},
        status="completed",
    )
    assert gi.text(response) == "Two lamps."
    assert gi.parse(response, toolwire.tools(TOOLSET, "gemini-interactions").declaration) == []


@pytest.mark.parametrize(
    "response",
    [
        {"steps": "no"},
        {"steps": [1]},
        [None],
        "text",
        {"steps": [{"type": "function_call", "id": "a", "name": ["x"], "arguments": {}}]},
    ],
)
def test_malformed_interactions_are_typed_errors_or_answered(response: Any) -> None:
    listing = toolwire.tools(TOOLSET, "gemini-interactions")
    try:
        outcome = _run(listing, response)
    except MalformedResponse:
        return
    assert all(r["is_error"] for r in outcome.results)


@settings(max_examples=150, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=8),
        lambda inner: (
            st.lists(inner, max_size=4)
            | st.dictionaries(
                st.sampled_from(["type", "id", "name", "arguments", "steps", "call_id", "x"]),
                inner,
                max_size=5,
            )
        ),
        max_leaves=20,
    )
)
def test_any_json_is_parsed_or_refused_with_a_typed_error(response: Any) -> None:
    listing = toolwire.tools(TOOLSET, "gemini-interactions")
    try:
        outcome = _run(listing, response)
    except MalformedResponse:
        return
    assert len(outcome.results) == len(outcome.calls)
    assert all(r["type"] == "function_result" for r in outcome.results)


# -- streaming -------------------------------------------------------------------------------------


def _events() -> list[dict[str, Any]]:
    arguments = json.dumps({"query": "lamps", "limit": 1})
    return [
        {
            "event_type": "interaction.created",
            "interaction": {"id": "int_9", "status": "in_progress"},
        },
        {"event_type": "step.start", "index": 0, "step": {"type": "model_output", "content": []}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "Look"}},
        {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "ing."}},
        {"event_type": "step.stop", "index": 0},
        {
            "event_type": "step.start",
            "index": 1,
            "step": {"type": "function_call", "id": "s1", "name": "search", "arguments": {}},
        },
        *(
            {
                "event_type": "step.delta",
                "index": 1,
                "delta": {"type": "arguments_delta", "arguments": arguments[i : i + 7]},
            }
            for i in range(0, len(arguments), 7)
        ),
        {"event_type": "step.stop", "index": 1},
        {
            "event_type": "interaction.status_update",
            "interaction_id": "int_9",
            "status": "requires_action",
        },
    ]


def test_a_stream_of_sdk_events_adds_up_to_the_interaction() -> None:
    accumulator = gi.Accumulator()
    for event in _events():
        accumulator.add(EVENT.validate_python(event))
    response = accumulator.response()
    interactions.Interaction.model_validate(response)
    assert (response["id"], response["status"]) == ("int_9", "requires_action")
    assert gi.text(response) == "Looking."
    outcome = _run(toolwire.tools(TOOLSET, "gemini-interactions"), response)
    assert outcome.results[0]["result"] == {"query": "lamps", "hits": ["item 0"]}


def test_streamed_arguments_that_are_not_json_are_answered_not_raised() -> None:
    accumulator = gi.Accumulator()
    accumulator.add({"event_type": "step.start", "index": 0, "step": _call("a", "search", {})})
    accumulator.add(
        {
            "event_type": "step.delta",
            "index": 0,
            "delta": {"type": "arguments_delta", "arguments": '{"q'},
        }
    )
    outcome = _run(toolwire.tools(TOOLSET, "gemini-interactions"), accumulator.response())
    assert outcome.results[0]["is_error"]


@pytest.mark.parametrize(
    ("event", "message"),
    [
        (
            {"event_type": "step.delta", "index": 3, "delta": {"type": "text", "text": "x"}},
            "never started",
        ),
        ({"event_type": "step.start", "index": "0", "step": {"type": "thought"}}, "not an integer"),
        ({"event_type": "step.start", "index": 10**9, "step": {"type": "thought"}}, "out of range"),
        ({"event_type": "step.start", "index": 0, "step": None}, "no step object"),
        ({"event_type": "error", "error": {"message": "quota"}}, "failed: quota"),
        ("event", "must be an object"),
    ],
)
def test_events_not_shaped_as_streamed_are_typed_errors(event: Any, message: str) -> None:
    with pytest.raises(MalformedResponse, match=message):
        gi.Accumulator().add(event)


def test_a_stream_past_its_limits_is_refused() -> None:
    accumulator = gi.Accumulator(limits=StreamLimits(max_parts=4, max_chars=10))
    accumulator.add({"event_type": "step.start", "index": 0, "step": {"type": "model_output"}})
    with pytest.raises(MalformedResponse, match="characters"):
        accumulator.add(
            {"event_type": "step.delta", "index": 0, "delta": {"type": "text", "text": "x" * 11}}
        )


def test_the_completed_interactions_steps_win() -> None:
    accumulator = gi.Accumulator()
    accumulator.add({"event_type": "step.start", "index": 0, "step": _call("a", "search", {})})
    accumulator.add(
        {
            "event_type": "interaction.completed",
            "interaction": {
                "id": "int_3",
                "status": "requires_action",
                "steps": [_call("a", "search", {"query": "final"})],
            },
        }
    )
    response = accumulator.response()
    assert response["id"] == "int_3"
    assert response["steps"][0]["arguments"] == {"query": "final"}
