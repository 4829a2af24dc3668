"""The real google-genai client's Interactions API (``client.interactions.create``: sync, async
and streamed) against a scripted server on 127.0.0.1 (``interactions_server.py``): what the
SDK actually sends when toolwire declares the tools, runs the model's calls and answers them
on the next turn. Every body the SDK sent is checked against the SDK's own request types."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import anyio
import pydantic
import pytest

import toolwire
from toolwire.calls import ImageContent, TextContent

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
ix = pytest.importorskip("google.genai.interactions")
if not hasattr(ix, "CreateModelInteractionParam"):
    pytest.skip("this google-genai has no Interactions API", allow_module_level=True)

from toolwire.integrations.genai import interaction_tools, run_interaction_calls  # noqa: E402
from toolwire.providers import gemini_interactions  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
from interactions_server import JsonReply, ScriptedInteractions, SseReply, serve  # noqa: E402

pytestmark = pytest.mark.anyio

PROVIDER = "gemini-interactions"
MODEL = "gemini-test"
Form = Literal["sync", "async"]
FORMS: list[Form] = ["sync", "async"]

# The SDK's request types. Their image data may also be a file object (``IO[bytes]``), which
# pydantic takes only with arbitrary types allowed; a TypedDict cannot be given a config
# through TypeAdapter, a list of them can.
_ARBITRARY = pydantic.ConfigDict(arbitrary_types_allowed=True)
CREATE_BODIES = pydantic.TypeAdapter(list[ix.CreateModelInteractionParam], config=_ARBITRARY)
RESULT_STEPS = pydantic.TypeAdapter(list[ix.FunctionResultStepParam], config=_ARBITRARY)
# TypedDict validation ignores unknown keys: these catch a misspelt one.
CREATE_KEYS = (
    ix.CreateModelInteractionParam.__required_keys__
    | ix.CreateModelInteractionParam.__optional_keys__
)
RESULT_KEYS = (
    ix.FunctionResultStepParam.__required_keys__ | ix.FunctionResultStepParam.__optional_keys__
)


@pytest.fixture
def server() -> Iterator[ScriptedInteractions]:
    yield from serve()


def client_for(server: ScriptedInteractions) -> Any:
    return genai.Client(
        api_key="test",
        http_options=types.HttpOptions(
            base_url=server.base_url,
            api_version="v1beta",
            timeout=10_000,  # milliseconds: a broken script fails the test instead of hanging it
            retry_options=types.HttpRetryOptions(attempts=1),
        ),
    )


async def create(client: Any, form: Form, **body: Any) -> Any:
    """``interactions.create`` in its sync or async form (the sync one blocks the event loop
    for the request; the server runs on its own thread)."""
    with anyio.fail_after(20):
        if form == "sync":
            return client.interactions.create(model=MODEL, **body)
        return await client.aio.interactions.create(model=MODEL, **body)


async def stream(client: Any, form: Form, **body: Any) -> list[Any]:
    """The events of a streamed ``interactions.create``, as the SDK parsed them."""
    with anyio.fail_after(20):
        if form == "sync":
            with client.interactions.create(model=MODEL, stream=True, **body) as events:
                return list(events)
        events = await client.aio.interactions.create(model=MODEL, stream=True, **body)
        async with events:
            return [event async for event in events]


def accumulated(events: list[Any]) -> dict[str, Any]:
    accumulator = gemini_interactions.InteractionsStreamAccumulator()
    for event in events:
        accumulator.add(event)
    return accumulator.response()


def sent(server: ScriptedInteractions) -> list[dict[str, Any]]:
    """The bodies the SDK sent, each valid for the SDK's own create-body type, and every
    ``function_result`` step in them valid for its step type."""
    bodies = server.bodies
    CREATE_BODIES.validate_python(bodies)
    for body in bodies:
        assert set(body) <= CREATE_KEYS, body
        steps = body.get("input")
        answers = (
            [s for s in steps if s["type"] == "function_result"] if type(steps) is list else []
        )
        RESULT_STEPS.validate_python(answers)
        assert all(set(step) <= RESULT_KEYS for step in answers), answers
    assert all(request.path == "/v1beta/interactions" for request in server.requests)
    return bodies


# -- the tools ---------------------------------------------------------------------------------

RUNS: list[str] = []
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(32))


class Address(pydantic.BaseModel):
    city: str
    country: str = "PT"


class Traveller(pydantic.BaseModel):
    name: str
    home: Address


@toolwire.tool
def get_weather(city: str, days: int = 1) -> dict[str, Any]:
    """Weather for a city.

    Args:
        city: City name.
        days: Days of forecast.
    """
    RUNS.append(f"get_weather {city} {days}")
    return {"city": city, "forecast": ["sunny"] * days}


@toolwire.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    RUNS.append(f"add {a} {b}")
    return a + b


@toolwire.tool
def book_trip(traveller: Traveller, destinations: list[Address]) -> str:
    """Book a trip.

    Args:
        traveller: Who travels.
        destinations: Where to, in order.
    """
    RUNS.append(f"book_trip {traveller.name} {[d.city for d in destinations]}")
    return f"Booked {len(destinations)} legs for {traveller.name}."


@toolwire.tool
def chart(city: str) -> toolwire.ToolResult:
    """A temperature chart of a city."""
    RUNS.append(f"chart {city}")
    return toolwire.ToolResult(
        content=(TextContent(f"Chart of {city}"), ImageContent(PNG, "image/png"))
    )


@toolwire.tool
def explode(reason: str) -> str:
    """Always fails."""
    RUNS.append(f"explode {reason}")
    raise RuntimeError(f"boom: {reason}")


TOOLSET = toolwire.ToolSet([get_weather, add, book_trip, chart, explode])
NAMES = "get_weather, add, book_trip, chart, explode"


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    RUNS.clear()


# -- what the scripted model says, and what toolwire should answer -----------------------------


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"type": "function_call", "id": call_id, "name": name, "arguments": arguments}


def interaction(
    interaction_id: str, *steps: dict[str, Any], status: str = "requires_action"
) -> dict[str, Any]:
    return {
        "id": interaction_id,
        "object": "interaction",
        "model": MODEL,
        "status": status,
        "created": "2026-01-01T00:00:00Z",
        "updated": "2026-01-01T00:00:01Z",
        "steps": list(steps),
        "usage": {"total_input_tokens": 10, "total_output_tokens": 5, "total_tokens": 15},
    }


def output(text: str) -> dict[str, Any]:
    return {"type": "model_output", "content": [{"type": "text", "text": text}]}


def text_answer(interaction_id: str, text: str) -> dict[str, Any]:
    return interaction(interaction_id, output(text), status="completed")


def result(call_id: str, name: str, value: Any, *, is_error: bool = False) -> dict[str, Any]:
    step = {"type": "function_result", "call_id": call_id, "name": name, "result": value}
    if is_error:
        step["is_error"] = True  # left out when false
    return step


def chart_content(city: str) -> list[dict[str, Any]]:
    return [
        {"type": "text", "text": f"Chart of {city}"},
        {"type": "image", "mime_type": "image/png", "data": base64.b64encode(PNG).decode()},
    ]


def forecast(city: str, days: int = 1) -> dict[str, Any]:
    return {"city": city, "forecast": ["sunny"] * days}


THOUGHT = {"type": "thought", "signature": "c2lnLTE="}
PARALLEL_CALLS = interaction(
    "ix_1",
    THOUGHT,
    output("Checking."),
    call("call_a", "get_weather", city="Lisbon", days=2),
    call("call_b", "add", a=2.0, b=3),  # Gemini sends whole numbers as floats
    call("call_c", "launch_rockets"),
    call("call_d", "add", a="two"),
)
PARALLEL_ANSWERS = [
    result("call_a", "get_weather", forecast("Lisbon", 2)),
    result("call_b", "add", "5"),
    result(
        "call_c",
        "launch_rockets",
        f"Unknown tool 'launch_rockets'. Available tools: {NAMES}.",
        is_error=True,
    ),
    result(
        "call_d",
        "add",
        "Invalid arguments for 'add': $.a: Input should be a valid integer, unable to parse "
        "string as an integer; $.b: Field required",
        is_error=True,
    ),
]


# -- declarations ------------------------------------------------------------------------------


async def test_declarations_are_sent_exactly_as_toolwire_declared_them(
    server: ScriptedInteractions,
) -> None:
    server.script = [JsonReply(text_answer("ix_1", "Hello."))]
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client_for(server), "async", input="Hi", tools=listing.tools)
    assert reply.output_text == "Hello."

    [body] = sent(server)
    assert body == {"model": MODEL, "input": "Hi", "tools": listing.tools}
    assert interaction_tools(TOOLSET) == listing.tools
    declared = {tool["name"]: tool for tool in body["tools"]}
    assert list(declared) == NAMES.split(", ")
    assert declared["get_weather"] == {
        "type": "function",
        "name": "get_weather",
        "description": "Weather for a city.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "city": {"type": "string", "description": "City name."},
                "days": {"type": "integer", "description": "Days of forecast. (default: 1)"},
            },
            "required": ["city"],  # days is optional
        },
    }
    address = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "country": {"type": "string", "description": '(default: "PT")'},
        },
        "required": ["city"],
    }
    assert declared["book_trip"] == {
        "type": "function",
        "name": "book_trip",
        "description": "Book a trip.",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "traveller": {
                    "type": "object",
                    "properties": {
                        "name": {"type": "string"},
                        "home": {"$ref": "#/$defs/Address"},
                    },
                    "required": ["name", "home"],
                    "description": "Who travels.",
                },
                "destinations": {
                    "type": "array",
                    "items": {"$ref": "#/$defs/Address"},
                    "description": "Where to, in order.",
                },
            },
            "required": ["traveller", "destinations"],
            "$defs": {"Address": address},
        },
    }


async def test_nested_arguments_reach_the_tool_as_models(server: ScriptedInteractions) -> None:
    trip = {
        "traveller": {"name": "Ana", "home": {"city": "Porto"}},
        "destinations": [{"city": "Faro"}, {"city": "Évora", "country": "PT"}],
    }
    server.script = [
        JsonReply(interaction("ix_1", call("t", "book_trip", **trip))),
        JsonReply(text_answer("ix_2", "Booked.")),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client, "async", input="Book", tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, reply)
    await create(
        client,
        "async",
        tools=listing.tools,
        previous_interaction_id=reply.id,
        input=outcome.followup(reply),
    )
    assert RUNS == ["book_trip Ana ['Faro', 'Évora']"]
    assert sent(server)[1]["input"] == [result("t", "book_trip", "Booked 2 legs for Ana.")]


# -- one turn ----------------------------------------------------------------------------------


@pytest.mark.parametrize("form", FORMS)
async def test_every_call_of_a_turn_is_answered_in_order_on_the_next_request(
    server: ScriptedInteractions, form: Form
) -> None:
    server.script = [JsonReply(PARALLEL_CALLS), JsonReply(text_answer("ix_2", "Sunny; 5."))]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    first = await create(client, form, input="Go", tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, first)
    final = await create(
        client,
        form,
        tools=listing.tools,
        previous_interaction_id=first.id,
        input=outcome.followup(first),
    )
    assert final.output_text == "Sunny; 5."
    assert sorted(RUNS) == ["add 2 3", "get_weather Lisbon 2"]  # the other two never ran
    assert outcome.results == PARALLEL_ANSWERS

    _, second = sent(server)
    assert second == {
        "model": MODEL,
        "tools": listing.tools,
        "previous_interaction_id": "ix_1",
        "input": PARALLEL_ANSWERS,  # the answers only: the server keeps the history
    }


async def test_an_image_result_is_sent_as_content_and_a_dict_as_an_object(
    server: ScriptedInteractions,
) -> None:
    server.script = [
        JsonReply(
            interaction(
                "ix_1", call("img", "chart", city="Lisbon"), call("obj", "get_weather", city="Faro")
            )
        ),
        JsonReply(text_answer("ix_2", "A chart.")),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client, "async", input="Chart", tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, reply)
    await create(
        client,
        "async",
        tools=listing.tools,
        previous_interaction_id=reply.id,
        input=outcome.followup(reply),
    )
    _, second = sent(server)
    image, structured = second["input"]
    RESULT_STEPS.validate_python([image])
    assert image == result("img", "chart", chart_content("Lisbon"))
    assert base64.b64decode(image["result"][1]["data"]) == PNG
    assert structured == result("obj", "get_weather", forecast("Faro"))


async def test_a_tool_that_raises_is_answered_with_an_error(server: ScriptedInteractions) -> None:
    server.script = [
        JsonReply(
            interaction(
                "ix_1", call("x1", "explode", reason="disk full"), call("x2", "add", a=1, b=2)
            )
        ),
        JsonReply(text_answer("ix_2", "It failed.")),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client, "async", input="Try", tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, reply)  # nothing escapes
    final = await create(
        client,
        "async",
        tools=listing.tools,
        previous_interaction_id=reply.id,
        input=outcome.followup(reply),
    )
    assert final.output_text == "It failed."
    assert sorted(RUNS) == ["add 1 2", "explode disk full"]
    assert [c.result.error_kind for c in outcome.calls] == ["failed", None]
    _, second = sent(server)
    assert second["input"] == [
        result(
            "x1", "explode", "Tool 'explode' failed: RuntimeError: boom: disk full", is_error=True
        ),
        result("x2", "add", "3"),
    ]


# -- loops -------------------------------------------------------------------------------------

THREE_TURNS = [
    JsonReply(interaction("ix_1", call("t1", "get_weather", city="Porto"))),
    JsonReply(interaction("ix_2", THOUGHT, call("t2", "add", a=1, b=2))),
    JsonReply(interaction("ix_3", call("t3a", "add", a=3, b=4), call("t3b", "chart", city="Faro"))),
    JsonReply(text_answer("ix_4", "All done.")),
]
THREE_TURNS_ANSWERS = [
    [result("t1", "get_weather", forecast("Porto"))],
    [result("t2", "add", "3")],
    [result("t3a", "add", "7"), result("t3b", "chart", chart_content("Faro"))],
]
THREE_TURNS_RUNS = ["get_weather Porto 1", "add 1 2", "add 3 4", "chart Faro"]


@pytest.mark.parametrize("form", FORMS)
async def test_a_multi_turn_loop_runs_on_followups_alone(
    server: ScriptedInteractions, form: Form
) -> None:
    server.script = list(THREE_TURNS)
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client, form, input="Plan my day", tools=listing.tools)
    for _ in range(10):
        outcome = await toolwire.execute_tool_calls(listing, reply)
        if not outcome.results:
            break
        reply = await create(
            client,
            form,
            tools=listing.tools,
            previous_interaction_id=reply.id,
            input=outcome.followup(reply),
        )
    else:
        pytest.fail("the loop never ended")
    assert reply.output_text == "All done."
    assert RUNS[:2] == THREE_TURNS_RUNS[:2]
    assert sorted(RUNS[2:]) == THREE_TURNS_RUNS[2:]

    bodies = sent(server)
    assert [b.get("previous_interaction_id") for b in bodies] == [None, "ix_1", "ix_2", "ix_3"]
    assert [b["input"] for b in bodies[1:]] == THREE_TURNS_ANSWERS
    assert all(b["tools"] == listing.tools for b in bodies)


async def test_run_interaction_calls_drives_a_loop_splatted_into_create(
    server: ScriptedInteractions,
) -> None:
    server.script = list(THREE_TURNS)
    client = client_for(server)
    tools = interaction_tools(TOOLSET)
    reply = await create(client, "async", input="Plan my day", tools=tools)
    for _ in range(10):
        calls = await run_interaction_calls(reply, toolset=TOOLSET)
        if not calls:
            break
        assert set(calls) == {"previous_interaction_id", "input"}
        reply = await create(client, "async", tools=tools, **calls)
    else:
        pytest.fail("the loop never ended")
    assert reply.output_text == "All done."
    assert sorted(RUNS) == sorted(THREE_TURNS_RUNS)

    bodies = sent(server)
    assert [b.get("previous_interaction_id") for b in bodies] == [None, "ix_1", "ix_2", "ix_3"]
    assert [b["input"] for b in bodies[1:]] == THREE_TURNS_ANSWERS


async def test_the_sdk_merging_continuation_hops_leaves_every_call_answered(
    server: ScriptedInteractions,
) -> None:
    # The SDK resumes an interaction stopped at the per-request decode limit on its own, and
    # merges the hops' steps; the answers go to the last hop.
    server.script = [
        JsonReply(
            interaction("ix_1", call("h1", "add", a=1, b=1), status="requires_continuation")
            | {"continuation_token": "tok_1"}
        ),
        JsonReply(interaction("ix_2", call("h2", "add", a=2, b=2))),
        JsonReply(text_answer("ix_3", "2 and 4.")),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    reply = await create(client, "async", input="Add", tools=listing.tools)
    outcome = await toolwire.execute_tool_calls(listing, reply)
    await create(
        client,
        "async",
        tools=listing.tools,
        previous_interaction_id=reply.id,
        input=outcome.followup(reply),
    )
    _, hop, answers = sent(server)
    assert hop["continuation_token"] == "tok_1"
    assert hop["previous_interaction_id"] == "ix_1"
    assert answers["previous_interaction_id"] == "ix_2"
    assert answers["input"] == [result("h1", "add", "2"), result("h2", "add", "4")]


async def test_without_server_history_the_model_steps_are_sent_back(
    server: ScriptedInteractions,
) -> None:
    server.script = [JsonReply(PARALLEL_CALLS), JsonReply(text_answer("ix_2", "Done."))]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    question = {"type": "user_input", "content": [{"type": "text", "text": "Go"}]}
    reply = await create(client, "async", input=[question], tools=listing.tools, store=False)
    outcome = await toolwire.execute_tool_calls(listing, reply)
    history = [question, *gemini_interactions.model_steps(reply), *outcome.results]
    await create(client, "async", input=history, tools=listing.tools, store=False)

    _, second = sent(server)
    assert "previous_interaction_id" not in second
    assert second["input"] == [question, *PARALLEL_CALLS["steps"], *PARALLEL_ANSWERS]


# -- streaming ---------------------------------------------------------------------------------


def created(interaction_id: str) -> dict[str, Any]:
    return {
        "event_type": "interaction.created",
        "interaction": {"id": interaction_id, "status": "in_progress"},
    }


def completed(interaction_id: str, status: str, **fields: Any) -> dict[str, Any]:
    return {
        "event_type": "interaction.completed",
        "interaction": {"id": interaction_id, "status": status, **fields},
    }


def start(index: int, step: dict[str, Any]) -> dict[str, Any]:
    return {"event_type": "step.start", "index": index, "step": step}


def delta(index: int, **fields: Any) -> dict[str, Any]:
    return {"event_type": "step.delta", "index": index, "delta": fields}


def stop(index: int) -> dict[str, Any]:
    return {"event_type": "step.stop", "index": index}


STREAMED_CALL = [
    created("ix_s"),
    {"event_type": "interaction.status_update", "interaction_id": "ix_s", "status": "in_progress"},
    start(0, {"type": "thought"}),
    delta(0, type="thought_signature", signature="c2lnLTE="),
    stop(0),
    start(1, {"type": "model_output", "content": []}),
    delta(1, type="text", text="Let me "),
    delta(1, type="text", text="check."),
    stop(1),
    start(2, {"type": "function_call", "id": "call_s", "name": "get_weather", "arguments": {}}),
    delta(2, type="arguments_delta", arguments='{"ci'),
    delta(2, type="arguments_delta", arguments='ty": "Por'),
    delta(2, type="arguments_delta", arguments='to", "days": 3}'),
    stop(2),
    {
        "event_type": "interaction.status_update",
        "interaction_id": "ix_s",
        "status": "requires_action",
    },
    completed("ix_s", "requires_action"),
]


def streamed_text(interaction_id: str, *pieces: str) -> list[dict[str, Any]]:
    return [
        created(interaction_id),
        start(0, {"type": "model_output", "content": []}),
        *(delta(0, type="text", text=piece) for piece in pieces),
        stop(0),
        completed(interaction_id, "completed"),
    ]


@pytest.mark.parametrize("form", FORMS)
async def test_a_streamed_call_is_rebuilt_run_once_and_answered(
    server: ScriptedInteractions, form: Form
) -> None:
    server.script = [
        SseReply(STREAMED_CALL, pieces=3),
        SseReply(streamed_text("ix_t", "Porto: ", "sunny."), pieces=2),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    events = await stream(client, form, input="Weather in Porto?", tools=listing.tools)
    assert [event.event_type for event in events] == [e["event_type"] for e in STREAMED_CALL]
    rebuilt = accumulated(events)
    assert rebuilt == {
        "id": "ix_s",
        "status": "requires_action",
        "steps": [
            THOUGHT,
            output("Let me check."),
            call("call_s", "get_weather", city="Porto", days=3),
        ],
    }

    outcome = await toolwire.execute_tool_calls(listing, rebuilt)
    final = accumulated(
        await stream(
            client,
            form,
            tools=listing.tools,
            previous_interaction_id=rebuilt["id"],
            input=outcome.followup(rebuilt),
        )
    )
    assert gemini_interactions.text(final) == "Porto: sunny."
    assert RUNS == ["get_weather Porto 3"]  # once

    first, second = sent(server)
    assert [r.accept for r in server.requests] == ["text/event-stream"] * 2
    assert first == {
        "model": MODEL,
        "input": "Weather in Porto?",
        "tools": listing.tools,
        "stream": True,
    }
    assert second == {
        "model": MODEL,
        "tools": listing.tools,
        "stream": True,
        "previous_interaction_id": "ix_s",
        "input": [result("call_s", "get_weather", forecast("Porto", 3))],
    }


async def test_a_stream_the_sdk_continued_keeps_the_calls_of_every_hop(
    server: ScriptedInteractions,
) -> None:
    # With automatic continuation (the SDK's default) one stream yields the events of every
    # hop: each hop is an interaction of its own, numbering its steps from 0.
    server.script = [
        SseReply(
            [
                created("ix_h1"),
                start(0, call("h1", "get_weather", city="Lisbon")),
                stop(0),
                start(1, {"type": "model_output", "content": []}),
                delta(1, type="text", text="And "),
                stop(1),
                completed("ix_h1", "requires_continuation", continuation_token="tok_1"),
            ]
        ),
        SseReply(
            [
                created("ix_h2"),
                start(0, call("h2", "add", a=1, b=2)),
                stop(0),
                completed("ix_h2", "requires_action"),
            ]
        ),
    ]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, PROVIDER)
    rebuilt = accumulated(await stream(client, "async", input="Go", tools=listing.tools))
    hop = sent(server)[1]
    assert (hop["continuation_token"], hop["previous_interaction_id"]) == ("tok_1", "ix_h1")
    outcome = await toolwire.execute_tool_calls(listing, rebuilt)
    assert rebuilt["id"] == "ix_h2"
    assert outcome.followup(rebuilt) == [
        result("h1", "get_weather", forecast("Lisbon")),
        result("h2", "add", "3"),
    ]
