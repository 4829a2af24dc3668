"""The real google-genai client against a scripted Gemini server on 127.0.0.1: what the SDK
actually sends when toolwire declares, dispatches and answers."""

from __future__ import annotations

import importlib.util
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import toolwire
from toolwire.providers import gemini, gemini_messages

genai = pytest.importorskip("google.genai")
types = pytest.importorskip("google.genai.types")
from toolwire.integrations.genai import (  # noqa: E402
    afc_callables,
    genai_tool,
    run_function_calls,
)

pytestmark = pytest.mark.anyio


class ScriptedGemini:
    """Answers generateContent with the next scripted response; records every request."""

    def __init__(self) -> None:
        self.responses: list[dict[str, Any]] = []
        self.requests: list[tuple[str, dict[str, Any]]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                scripted.requests.append((self.path, body))
                payload = json.dumps(scripted.responses.pop(0)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def server() -> Iterator[ScriptedGemini]:
    scripted = ScriptedGemini()
    scripted.thread.start()
    try:
        yield scripted
    finally:
        scripted.server.shutdown()
        scripted.server.server_close()


def client_for(server: ScriptedGemini) -> Any:
    options: dict[str, Any] = {}
    if importlib.util.find_spec("aiohttp") and importlib.util.find_spec("httpx"):
        # Some SDK releases pick aiohttp when it happens to be installed, with a session that
        # outlives each test's event loop; their httpx transport has no such problem.
        import httpx

        options = {"httpx_client": httpx.Client(), "httpx_async_client": httpx.AsyncClient()}
    return genai.Client(
        api_key="test-key",
        http_options=types.HttpOptions(base_url=server.base_url, api_version="v1beta", **options),
    )


RUNS: list[str] = []


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


TOOLSET = toolwire.ToolSet([get_weather, add])


def model_turn(*parts: dict[str, Any]) -> dict[str, Any]:
    return {
        "candidates": [
            {"content": {"role": "model", "parts": list(parts)}, "finishReason": "STOP"}
        ],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
    }


PARALLEL_CALLS = model_turn(
    {
        "functionCall": {"id": "c1", "name": "get_weather", "args": {"city": "Lisbon", "days": 2}},
        "thoughtSignature": "c2lnLTE=",
    },
    {"functionCall": {"id": "c2", "name": "add", "args": {"a": 2.0, "b": 3}}},
    {"functionCall": {"name": "launch_rockets", "args": {}}},
    {"functionCall": {"name": "add", "args": {"a": "two"}}},
)


@pytest.fixture(autouse=True)
def _clear_runs() -> None:
    RUNS.clear()


async def test_manual_loop_sends_declarations_and_one_answer_per_call(
    server: ScriptedGemini,
) -> None:
    server.responses = [PARALLEL_CALLS, model_turn({"text": "It is sunny; 2 + 3 = 5."})]
    client = client_for(server)
    config = types.GenerateContentConfig(
        tools=[genai_tool(TOOLSET)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text="Go")])]
    response = await client.aio.models.generate_content(
        model="gemini-test", contents=contents, config=config
    )
    model_content = response.candidates[0].content
    parts = await run_function_calls(model_content.parts, toolset=TOOLSET)
    contents += [model_content, types.Content(role="user", parts=parts)]
    final = await client.aio.models.generate_content(
        model="gemini-test", contents=contents, config=config
    )
    assert final.text == "It is sunny; 2 + 3 = 5."
    assert sorted(RUNS) == ["add 2 3", "get_weather Lisbon 2"]  # concurrently

    (path1, first), (_, second) = server.requests
    assert path1 == "/v1beta/models/gemini-test:generateContent"
    sent = first["tools"][0]["functionDeclarations"]
    ours = gemini.function_declarations(TOOLSET)
    assert [(d["name"], d["description"], wire_schema(d)) for d in sent] == [
        (d["name"], d["description"], d["parametersJsonSchema"]) for d in ours
    ]
    assert "toolConfig" not in first

    replayed, answers = second["contents"][1], second["contents"][2]
    assert replayed == {
        "role": "model",
        "parts": PARALLEL_CALLS["candidates"][0]["content"]["parts"],
    }  # signatures and ids replayed unchanged
    assert answers["role"] == "user"
    assert answers["parts"] == [
        {
            "functionResponse": {
                "id": "c1",
                "name": "get_weather",
                "response": {"output": {"city": "Lisbon", "forecast": ["sunny", "sunny"]}},
            }
        },
        {"functionResponse": {"id": "c2", "name": "add", "response": {"output": 5}}},
        {
            "functionResponse": {
                "name": "launch_rockets",
                "response": {
                    "error": "Unknown tool 'launch_rockets'. Available tools: get_weather, add."
                },
            }
        },
        {
            "functionResponse": {
                "name": "add",
                "response": {
                    "error": (
                        "Invalid arguments for 'add': $.a: Input should be a valid integer, "
                        "unable to parse string as an integer; $.b: Field required"
                    )
                },
            }
        },
    ]


async def test_message_helpers_drive_the_same_loop(server: ScriptedGemini) -> None:
    server.responses = [PARALLEL_CALLS, model_turn({"text": "Done."})]
    client = client_for(server)
    listing = toolwire.tools(TOOLSET, "gemini")
    messages = [
        toolwire_messages().Message.system("Be brief."),
        toolwire_messages().Message.user("Go"),
    ]
    tool_config = gemini_messages.normalize_tool_choice(("any", ["get_weather", "add"]))
    for _ in range(2):
        system, contents = gemini_messages.to_format(messages)
        config = types.GenerateContentConfig(
            system_instruction=system,
            tools=listing.tools,
            tool_config=tool_config,
            automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
        )
        response = await client.aio.models.generate_content(
            model="gemini-test", contents=contents, config=config
        )
        reply = gemini_messages.from_response(response)
        messages.append(reply)
        if not reply.tool_calls:
            break
        outcome = await toolwire.execute_tool_calls(listing.toolset, "gemini", response)
        messages.append(
            toolwire_messages().Message.results(
                *[
                    toolwire_messages().ToolResultPart(
                        name=c.item.exposed_name
                        if isinstance(c.item, toolwire.ToolCall)
                        else c.item.name,
                        call_id=c.call_id,
                        result=c.result,
                    )
                    for c in outcome.calls
                ]
            )
        )
    assert messages[-1].content == "Done."
    assert messages[-1].usage is not None
    assert messages[-1].usage.total_tokens == 15

    (_, first), (_, second) = server.requests
    assert first["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert first["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather", "add"]}
    }
    assert second["contents"][1]["parts"] == PARALLEL_CALLS["candidates"][0]["content"]["parts"]
    names = [p["functionResponse"]["name"] for p in second["contents"][2]["parts"]]
    assert names == ["get_weather", "add", "launch_rockets", "add"]
    assert [set(p) for p in second["contents"][2]["parts"]] == [{"functionResponse"}] * 4


async def test_native_tools_alone_send_no_function_calling_config(
    server: ScriptedGemini,
) -> None:
    server.responses = [model_turn({"text": "Searched."})]
    tools = gemini.build_tools([], ["google_search"])
    tool_config = gemini_messages.normalize_tool_choice("any", has_declarations=False)
    config = types.GenerateContentConfig(tools=tools, tool_config=tool_config)
    await client_for(server).aio.models.generate_content(
        model="gemini-test", contents="Search", config=config
    )
    [(_, body)] = server.requests
    assert body["tools"] == [{"googleSearch": {}}]
    assert "toolConfig" not in body


async def test_automatic_function_calling_runs_tools_through_the_executor(
    server: ScriptedGemini,
) -> None:
    server.responses = [
        model_turn(
            {"functionCall": {"name": "get_weather", "args": {"city": "Porto"}}},
            {"functionCall": {"name": "add", "args": {"a": 1, "b": "x"}}},
        ),
        model_turn({"text": "Porto is sunny."}),
    ]
    approvals: list[str] = []

    def approve(request: toolwire.ApprovalRequest) -> toolwire.Decision:
        approvals.append(request.exposed_name)
        return toolwire.allow()

    executor = toolwire.Executor(
        TOOLSET,
        policy=toolwire.Policy(toolwire.Rule("ask", "get_weather")),
        approver=toolwire.CallbackApproval(approve),
    )
    config = types.GenerateContentConfig(tools=afc_callables(TOOLSET, executor=executor))
    response = await client_for(server).aio.models.generate_content(
        model="gemini-test", contents="Weather in Porto?", config=config
    )
    assert response.text == "Porto is sunny."
    assert approvals == ["get_weather"]
    assert RUNS == ["get_weather Porto 1"]  # the bad call never ran

    (_, first), (_, second) = server.requests
    declared = {d["name"]: d for d in first["tools"][0]["functionDeclarations"]}
    assert set(declared) == {"get_weather", "add"}
    schema = wire_schema(declared["get_weather"])
    assert schema["required"] == ["city"]
    assert schema["properties"]["city"]["description"] == "City name."
    responses = [p["functionResponse"] for p in second["contents"][-1]["parts"]]
    assert responses[0]["response"] == {"result": {"city": "Porto", "forecast": ["sunny"]}}
    assert "Invalid arguments for 'add'" in responses[1]["response"]["error"]


def test_afc_cannot_use_a_deferred_approver() -> None:
    executor = toolwire.Executor(TOOLSET, approver=toolwire.DeferredApproval())
    with pytest.raises(toolwire.ConfigurationError, match="cannot pause"):
        afc_callables(TOOLSET, executor=executor)


def toolwire_messages() -> Any:
    import toolwire.messages

    return toolwire.messages


def wire_schema(declaration: dict[str, Any]) -> Any:
    # The SDK writes this field in snake_case on the wire (the API reads both spellings).
    return declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema"))
