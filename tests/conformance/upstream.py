"""The upstream MCP server of the conformance runs: everything the suite's server scenarios ask
of a server (tools, resources, prompts, completion, logging, resumable SSE streams), written with
the ``mcp`` SDK's low-level server, served over streamable HTTP on 127.0.0.1 (``python
upstream.py``: it prints ``listening at URL`` on stdout once it listens).

It speaks both eras. On a 2026-07-28 request its questions (elicitation, sampling, roots) come
back as an ``InputRequiredResult``; on a handshake-era session they are requests sent to the
client within the call. It asks only for what the request's client declared it can answer, and
answers a missing capability with the protocol's error (-32021), as the stateless revision
says.
"""

from __future__ import annotations

import itertools
import json
import re
import socket
import sys
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.streamable_http import EventCallback, EventId, EventMessage, EventStore, StreamId
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ToolsListChanged,
)
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

# A one-pixel PNG and a silent WAV, as the content scenarios ask for.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
    "AAAABJRU5ErkJggg=="
)
SILENCE = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA="

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
OK_FORM = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
COLOR_FORM = {"type": "object", "properties": {"color": {"type": "string"}}, "required": ["color"]}
ANSWER_FORM = {
    "type": "object",
    "properties": {"response": {"type": "string", "description": "The user's answer"}},
    "required": ["response"],
}

# Every JSON Schema 2020-12 keyword the json-schema-2020-12 scenario looks for, kept as listed.
SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}

TASKS = "io.modelcontextprotocol/tasks"
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}

Ctx = ServerRequestContext[Any]
Params = types.CallToolRequestParams
Answer = types.CallToolResult | types.InputRequiredResult
Handler = Callable[[Ctx, Params], Awaitable[Answer]]

bus = InMemorySubscriptionBus()
tools: dict[str, tuple[types.Tool, Handler]] = {}


def tool(
    name: str,
    description: str,
    schema: Mapping[str, Any] | None = None,
    *,
    tasks: str | None = None,
) -> Callable[[Handler], Handler]:
    """Register a tool; ``tasks`` is its ``execution.taskSupport`` (the gateway serves any
    call as a task; ``required`` makes it refuse a client that cannot take one)."""

    def register(handler: Handler) -> Handler:
        # The handshake revisions' field, and on 2026-07-28 (where a tool has no
        # `execution`) the same under the tasks extension's `_meta` key.
        execution = types.ToolExecution(task_support=tasks) if tasks is not None else None
        meta = {TASKS: {"taskSupport": tasks}} if tasks is not None else None
        listed = types.Tool(
            name=name,
            description=description,
            input_schema=dict(schema or NO_ARGUMENTS),
            execution=execution,
            _meta=meta,
        )
        tools[name] = (listed, handler)
        return handler

    return register


def text(value: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=value)])


def modern(ctx: Ctx) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def declared(ctx: Ctx, capability: str) -> bool:
    capabilities = ctx.session.client_capabilities
    return capabilities is not None and getattr(capabilities, capability) is not None


def require(ctx: Ctx, capability: str) -> None:
    """The protocol's error for a capability the request's client did not declare."""
    if not declared(ctx, capability):
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message=f"this tool needs the client's {capability!r} capability",
            data={"requiredCapabilities": {capability: {}}},
        )


def form(message: str, schema: Mapping[str, Any]) -> types.ElicitRequest:
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=dict(schema))
    )


def sampling(prompt: str, max_tokens: int = 100) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def answers(params: Params) -> Mapping[str, Any]:
    return params.input_responses or {}


def content_of(answer: Any) -> Mapping[str, Any]:
    return answer.content or {} if isinstance(answer, types.ElicitResult) else {}


# -- content ------------------------------------------------------------------------------------


@tool("test_simple_text", "Answers with one text block.")
async def simple_text(ctx: Ctx, params: Params) -> Answer:
    return text("This is a simple text response for testing.")


@tool("test_image_content", "Answers with a PNG image.")
async def image(ctx: Ctx, params: Params) -> Answer:
    return types.CallToolResult(content=[types.ImageContent(data=PIXEL, mime_type="image/png")])


@tool("test_audio_content", "Answers with a WAV clip.")
async def audio(ctx: Ctx, params: Params) -> Answer:
    return types.CallToolResult(content=[types.AudioContent(data=SILENCE, mime_type="audio/wav")])


def embedded(uri: str, mime: str, body: str) -> types.EmbeddedResource:
    return types.EmbeddedResource(
        resource=types.TextResourceContents(uri=uri, mime_type=mime, text=body)
    )


@tool("test_embedded_resource", "Answers with an embedded text resource.")
async def resource(ctx: Ctx, params: Params) -> Answer:
    part = embedded("test://embedded-resource", "text/plain", "An embedded resource's text.")
    return types.CallToolResult(content=[part])


@tool("test_multiple_content_types", "Answers with text, an image and a resource.")
async def mixed(ctx: Ctx, params: Params) -> Answer:
    return types.CallToolResult(
        content=[
            types.TextContent(text="Multiple content types test:"),
            types.ImageContent(data=PIXEL, mime_type="image/png"),
            embedded("test://mixed-content-resource", "application/json", '{"test": "data"}'),
        ]
    )


@tool("test_error_handling", "Always fails, as a tool failure (isError).")
async def failing(ctx: Ctx, params: Params) -> Answer:
    return types.CallToolResult(
        content=[types.TextContent(text="This tool intentionally returns an error for testing")],
        is_error=True,
    )


@tool("json_schema_2020_12_tool", "Declares a JSON Schema 2020-12 input schema.", SCHEMA_2020_12)
async def schema_2020_12(ctx: Ctx, params: Params) -> Answer:
    return text("json_schema_2020_12_tool")


# -- notifications during a call ----------------------------------------------------------------


async def log_three(ctx: Ctx) -> None:
    for line in ("Tool execution started", "Tool processing data", "Tool execution completed"):
        await ctx.session.send_log_message("info", line, "upstream", ctx.request_id)
        await anyio.sleep(0.05)


@tool("test_tool_with_logging", "Sends three log messages while it runs.")
async def logging_tool(ctx: Ctx, params: Params) -> Answer:
    await log_three(ctx)
    return text("Tool with logging executed successfully")


@tool("test_logging_tool", "Sends log messages only a request that asked for them gets.")
async def quiet_logging_tool(ctx: Ctx, params: Params) -> Answer:
    await log_three(ctx)
    return text("logged")


@tool("test_tool_with_progress", "Reports progress three times; answers its progress token.")
async def progress(ctx: Ctx, params: Params) -> Answer:
    for step in (0, 50, 100):
        await ctx.session.report_progress(step, 100, f"Completed step {step} of 100")
        await anyio.sleep(0.05)
    token = ctx.meta.get("progress_token") if ctx.meta is not None else None
    return text(str(token if token is not None else 0))


@tool("test_trigger_tool_change", "Tells listening clients the tool list changed.")
async def trigger_tool_change(ctx: Ctx, params: Params) -> Answer:
    await bus.publish(ToolsListChanged())
    return text("tool list changed")


@tool("test_trigger_prompt_change", "Tells listening clients the prompt list changed.")
async def trigger_prompt_change(ctx: Ctx, params: Params) -> Answer:
    await bus.publish(PromptsListChanged())
    return text("prompt list changed")


# -- questions to the client --------------------------------------------------------------------


async def ask(ctx: Ctx, params: Params, key: str, request: Any, capability: str) -> Any:
    """The client's answer to ``request``: from the retried call's input responses (2026-07-28,
    None until then: the caller answers ``InputRequiredResult``), or asked within the call."""
    require(ctx, capability)
    if modern(ctx):
        return answers(params).get(key)
    if isinstance(request, types.ElicitRequest):
        assert isinstance(request.params, types.ElicitRequestFormParams)
        return await ctx.session.elicit_form(
            request.params.message, request.params.requested_schema, ctx.request_id
        )
    if isinstance(request, types.CreateMessageRequest):
        return await ctx.session.create_message(
            request.params.messages,
            max_tokens=request.params.max_tokens,
            related_request_id=ctx.request_id,
        )
    return await ctx.session.list_roots()


def required(key: str, request: Any, state: str | None = None) -> types.InputRequiredResult:
    return types.InputRequiredResult(input_requests={key: request}, request_state=state)


@tool(
    "test_sampling",
    "Asks the client's model to answer a prompt.",
    {"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]},
)
async def sample(ctx: Ctx, params: Params) -> Answer:
    prompt = str((params.arguments or {}).get("prompt", ""))
    request = sampling(prompt)
    answer = await ask(ctx, params, "sample", request, "sampling")
    if answer is None:
        return required("sample", request)
    said = answer.content.text if isinstance(answer.content, types.TextContent) else "?"
    return text(f"LLM response: {said}")


@tool(
    "test_elicitation",
    "Asks the user a question.",
    {"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]},
)
async def elicit(ctx: Ctx, params: Params) -> Answer:
    message = str((params.arguments or {}).get("message", ""))
    request = form(message, ANSWER_FORM)
    answer = await ask(ctx, params, "ask", request, "elicitation")
    if answer is None:
        return required("ask", request)
    content = json.dumps(dict(content_of(answer)), sort_keys=True)
    return text(f"User response: action={answer.action}, content={content}")


@tool("test_missing_capability", "Needs the client's sampling capability.")
async def missing_capability(ctx: Ctx, params: Params) -> Answer:
    require(ctx, "sampling")
    return text("The client declared sampling.")


@tool("test_streaming_elicitation", "Asks the user their name.")
async def streaming_elicitation(ctx: Ctx, params: Params) -> Answer:
    request = form("What is your name?", NAME_FORM)
    answer = await ask(ctx, params, "user_name", request, "elicitation")
    if answer is None:
        return required("user_name", request)
    return text(f"Hello, {content_of(answer).get('name', 'stranger')}!")


# The elicitation schema scenarios (handshake era only) read the form's schema, not the answer.

DEFAULTS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {
            "type": "string",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "default": True},
    },
}


def choices(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


# The five enum shapes of SEP-1330: untitled and titled single choice, the deprecated
# `enumNames`, and untitled and titled multiple choice.
ENUMS_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": choices(
                ("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")
            ),
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": choices(
                    ("value1", "First Choice"),
                    ("value2", "Second Choice"),
                    ("value3", "Third Choice"),
                )
            },
        },
    },
}


async def elicit_schema(
    ctx: Ctx, params: Params, message: str, schema: Mapping[str, Any]
) -> Answer:
    request = form(message, schema)
    answer = await ask(ctx, params, "form", request, "elicitation")
    if answer is None:
        return required("form", request)
    content = json.dumps(dict(content_of(answer)), sort_keys=True)
    return text(f"Elicitation completed: action={answer.action}, content={content}")


@tool("test_elicitation_sep1034_defaults", "Asks a form whose every field has a default.")
async def elicit_defaults(ctx: Ctx, params: Params) -> Answer:
    return await elicit_schema(ctx, params, "Please review your details.", DEFAULTS_FORM)


@tool("test_elicitation_sep1330_enums", "Asks a form with each kind of enum field.")
async def elicit_enums(ctx: Ctx, params: Params) -> Answer:
    return await elicit_schema(ctx, params, "Please choose your options.", ENUMS_FORM)


# -- transport --------------------------------------------------------------------------------


@tool(
    "test_reconnection",
    "Closes its SSE stream mid-call: the answer comes on the stream the client resumes.",
)
async def reconnection(ctx: Ctx, params: Params) -> Answer:
    # Offered only on a handshake-era session at 2025-11-25 or later, whose client got a
    # priming event to resume from (the server-sse-polling scenario).
    if ctx.close_sse_stream is not None:
        await ctx.close_sse_stream()
        await anyio.sleep(0.2)
    return text("Reconnection test completed")


@tool(
    "test_custom_header",
    "Echoes a region the client mirrors into the Mcp-Param-Region header.",
    {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    },
)
async def custom_header(ctx: Ctx, params: Params) -> Answer:
    # The SDK checks the header against the argument before the call gets here (SEP-2243).
    return text(f"region: {(params.arguments or {}).get('region')}")


# -- 2026-07-28 input-required rounds (answered by the retried call) ----------------------------


@tool("test_input_required_result_elicitation", "One elicitation round.")
async def irr_elicitation(ctx: Ctx, params: Params) -> Answer:
    answer = answers(params).get("user_name")
    if answer is None:
        return required("user_name", form("What is your name?", NAME_FORM))
    return text(f"Hello, {content_of(answer).get('name', 'stranger')}!")


@tool("test_input_required_result_sampling", "One sampling round.")
async def irr_sampling(ctx: Ctx, params: Params) -> Answer:
    answer = answers(params).get("capital_question")
    if not isinstance(answer, types.CreateMessageResult):
        return required("capital_question", sampling("What is the capital of France?"))
    said = answer.content.text if isinstance(answer.content, types.TextContent) else "?"
    return text(f"Model said: {said}")


@tool("test_input_required_result_list_roots", "One roots round.")
async def irr_roots(ctx: Ctx, params: Params) -> Answer:
    answer = answers(params).get("client_roots")
    if not isinstance(answer, types.ListRootsResult):
        return required("client_roots", types.ListRootsRequest())
    return text(f"Client exposed {len(answer.roots)} root(s).")


@tool("test_input_required_result_request_state", "A round whose state must come back.")
async def irr_state(ctx: Ctx, params: Params) -> Answer:
    if "confirm" in answers(params) and params.request_state == "request-state-nonce":
        return text("state-ok: confirmation received")
    return required("confirm", form("Please confirm", OK_FORM), "request-state-nonce")


@tool("test_input_required_result_multiple_inputs", "Asks three questions at once.")
async def irr_multiple(ctx: Ctx, params: Params) -> Answer:
    if {"user_name", "greeting", "client_roots"} <= answers(params).keys():
        return text("All inputs received.")
    return types.InputRequiredResult(
        input_requests={
            "user_name": form("What is your name?", NAME_FORM),
            "greeting": sampling("Generate a greeting", 50),
            "client_roots": types.ListRootsRequest(),
        },
        request_state="multiple-inputs",
    )


@tool("test_input_required_result_multi_round", "Three rounds, the state growing.")
async def irr_rounds(ctx: Ctx, params: Params) -> Answer:
    state = json.loads(params.request_state) if params.request_state else {"round": 0}
    given = answers(params)
    if state.get("round") == 1 and "step1" in given:
        name = content_of(given["step1"]).get("name")
        return required(
            "step2",
            form("Step 2: What is your favorite color?", COLOR_FORM),
            json.dumps({"round": 2, "name": name}),
        )
    if state.get("round") == 2 and "step2" in given:
        return text(f"{state.get('name')} likes {content_of(given['step2']).get('color')}.")
    return required(
        "step1", form("Step 1: What is your name?", NAME_FORM), json.dumps({"round": 1})
    )


@tool("test_input_required_result_tampered_state", "A round whose state is sealed.")
async def irr_tampered(ctx: Ctx, params: Params) -> Answer:
    if params.request_state is None:
        return required("confirm", form("Please confirm", OK_FORM), "round-1")
    return text(f"state-ok: {params.request_state}")


@tool("test_input_required_result_capabilities", "Asks only what the client can answer.")
async def irr_capabilities(ctx: Ctx, params: Params) -> Answer:
    requests: dict[str, Any] = {}
    if declared(ctx, "sampling"):
        requests["sample"] = sampling("Say hello", 50)
    if declared(ctx, "elicitation"):
        requests["ask"] = form("What is your name?", NAME_FORM)
    return types.InputRequiredResult(input_requests=requests, request_state="capability-gated")


# -- the tasks scenarios' tools (the gateway serves them as tasks) -----------------------------

NAME_FORM = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


@tool(
    "greet",
    "Greets someone at once.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)
async def greet(ctx: Ctx, params: Params) -> Answer:
    return text(f"Hello, {(params.arguments or {}).get('name', 'World')}!")


@tool(
    "slow_compute",
    "Takes `seconds` seconds, then answers.",
    {
        "type": "object",
        "properties": {"seconds": {"type": "number"}, "label": {"type": "string"}},
        "required": ["seconds"],
    },
    tasks="optional",
)
async def slow_compute(ctx: Ctx, params: Params) -> Answer:
    arguments = params.arguments or {}
    seconds = float(arguments.get("seconds", 0))
    await anyio.sleep(max(0.0, min(seconds, 120.0)))
    return text(f"computed {arguments.get('label', '')} in {seconds:g}s")


@tool("failing_job", "Fails as a tool after a second.", tasks="required")
async def failing_job(ctx: Ctx, params: Params) -> Answer:
    await anyio.sleep(1)
    return types.CallToolResult(content=[types.TextContent(text="the job failed")], is_error=True)


@tool("protocol_error_job", "Fails with a JSON-RPC error after a second.", tasks="optional")
async def protocol_error_job(ctx: Ctx, params: Params) -> Answer:
    await anyio.sleep(1)
    raise MCPError(code=types.INTERNAL_ERROR, message="the job broke")


@tool("confirm_delete", "Asks for a confirmation, then answers.", tasks="optional")
async def confirm_delete(ctx: Ctx, params: Params) -> Answer:
    request = form("Delete it?", {"type": "object", "properties": {"confirm": {"type": "boolean"}}})
    answer = answers(params).get("confirm")
    if answer is None:
        return required("confirm", request)
    return text(f"delete: {answer.action} {json.dumps(dict(content_of(answer)), sort_keys=True)}")


@tool("multi_input", "Asks two questions at once, then answers.", tasks="optional")
async def multi_input(ctx: Ctx, params: Params) -> Answer:
    given = answers(params)
    asked = {
        key: form(f"Your {key}?", NAME_FORM) for key in ("first", "second") if key not in given
    }
    if asked:
        return types.InputRequiredResult(input_requests=asked)
    names = [content_of(given[key]).get("name", "?") for key in ("first", "second")]
    return text("got " + " and ".join(str(n) for n in names))


@tool("test_tool_with_task", "Asks a name, then works on it as a task.", tasks="required")
async def tool_with_task(ctx: Ctx, params: Params) -> Answer:
    answer = answers(params).get("user_name")
    if answer is None:
        return required("user_name", form("What is your name?", NAME_FORM))
    await anyio.sleep(1)
    return text(f"Hello, {content_of(answer).get('name', '?')}: the task is done.")


# -- resources ----------------------------------------------------------------------------------

Contents = types.TextResourceContents | types.BlobResourceContents

RESOURCES: dict[str, tuple[types.Resource, Contents]] = {
    resource.uri: (resource, contents)
    for resource, contents in (
        (
            types.Resource(
                uri="test://static-text",
                name="static-text",
                description="A text resource.",
                mime_type="text/plain",
            ),
            types.TextResourceContents(
                uri="test://static-text",
                mime_type="text/plain",
                text="This is the content of the static text resource.",
            ),
        ),
        (
            types.Resource(
                uri="test://static-binary",
                name="static-binary",
                description="A binary resource: a PNG image.",
                mime_type="image/png",
            ),
            types.BlobResourceContents(
                uri="test://static-binary", mime_type="image/png", blob=PIXEL
            ),
        ),
        (
            types.Resource(
                uri="test://watched-resource",
                name="watched-resource",
                description="A resource clients subscribe to.",
                mime_type="text/plain",
            ),
            types.TextResourceContents(
                uri="test://watched-resource",
                mime_type="text/plain",
                text="This resource is watched for updates.",
            ),
        ),
    )
}

TEMPLATE = types.ResourceTemplate(
    uri_template="test://template/{id}/data",
    name="template-data",
    description="Data for an id, read from the template with the id filled in.",
    mime_type="application/json",
)
TEMPLATED = re.compile(r"test://template/(?P<id>[^/]+)/data")

subscribed: dict[str | None, set[str]] = {}
"""Session → the URIs it subscribed to (handshake era: 2026-07-28 has subscriptions/listen)."""


def read(uri: str) -> Contents:
    """A resource's contents, or the error SEP-2164 asks for (-32602, the URI in ``data``)."""
    if uri in RESOURCES:
        return RESOURCES[uri][1]
    match = TEMPLATED.fullmatch(uri)
    if match is not None:
        body = {"id": match["id"], "templateTest": True, "data": f"Data for ID: {match['id']}"}
        return types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(body)
        )
    raise MCPError(code=types.INVALID_PARAMS, message="Resource not found", data={"uri": uri})


async def list_resources(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=[resource for resource, _ in RESOURCES.values()])


async def list_templates(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    return types.ListResourceTemplatesResult(resource_templates=[TEMPLATE])


async def read_resource(
    ctx: Ctx, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    return types.ReadResourceResult(contents=[read(params.uri)])


def session_of(ctx: Ctx) -> str | None:
    request = ctx.request
    return request.headers.get("mcp-session-id") if request is not None else None


async def subscribe(ctx: Ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    read(params.uri)  # only a resource there is can be subscribed to
    subscribed.setdefault(session_of(ctx), set()).add(params.uri)
    return types.EmptyResult()


async def unsubscribe(ctx: Ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    subscribed.get(session_of(ctx), set()).discard(params.uri)
    return types.EmptyResult()


# -- prompts ------------------------------------------------------------------------------------

PromptParams = types.GetPromptRequestParams
PromptAnswer = types.GetPromptResult | types.InputRequiredResult
PromptHandler = Callable[[Ctx, PromptParams], Awaitable[PromptAnswer]]

prompts: dict[str, tuple[types.Prompt, PromptHandler]] = {}


def prompt(
    name: str, description: str, *arguments: tuple[str, str]
) -> Callable[[PromptHandler], PromptHandler]:
    """Register a prompt; ``arguments`` are its (required) arguments' names and descriptions."""

    def register(handler: PromptHandler) -> PromptHandler:
        listed = types.Prompt(
            name=name,
            description=description,
            arguments=[
                types.PromptArgument(name=argument, description=about, required=True)
                for argument, about in arguments
            ]
            or None,
        )
        prompts[name] = (listed, handler)
        return handler

    return register


def said(*content: types.TextContent | types.ImageContent | types.EmbeddedResource) -> PromptAnswer:
    """A prompt of user messages, one per content block."""
    return types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=part) for part in content]
    )


@prompt("test_simple_prompt", "A prompt without arguments.")
async def simple_prompt(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    return said(types.TextContent(text="This is a simple prompt for testing."))


@prompt(
    "test_prompt_with_arguments",
    "A prompt that says its two arguments.",
    ("arg1", "First test argument"),
    ("arg2", "Second test argument"),
)
async def prompt_with_arguments(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    given = params.arguments or {}
    return said(
        types.TextContent(
            text=f"Prompt with arguments: arg1='{given['arg1']}', arg2='{given['arg2']}'"
        )
    )


@prompt(
    "test_prompt_with_embedded_resource",
    "A prompt that embeds a resource.",
    ("resourceUri", "URI of the resource to embed"),
)
async def prompt_with_resource(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    uri = (params.arguments or {})["resourceUri"]
    return said(
        embedded(uri, "text/plain", "Embedded resource content for testing."),
        types.TextContent(text="Please process the embedded resource above."),
    )


@prompt("test_prompt_with_image", "A prompt with an image.")
async def prompt_with_image(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    return said(
        types.ImageContent(data=PIXEL, mime_type="image/png"),
        types.TextContent(text="Please analyze the image above."),
    )


@prompt("test_input_required_result_prompt", "Asks for context (the non-tool-request scenario).")
async def prompt_asking_first(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    given = (params.input_responses or {}).get("user_context")
    if given is None:
        schema = {"type": "object", "properties": {"context": {"type": "string"}}}
        return required("user_context", form("What context should the prompt use?", schema))
    return said(types.TextContent(text=f"Context: {content_of(given).get('context', '?')}"))


async def list_prompts(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=[listed for listed, _ in prompts.values()])


async def get_prompt(ctx: Ctx, params: PromptParams) -> PromptAnswer:
    found = prompts.get(params.name)
    if found is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {params.name}")
    listed, handler = found
    missing = [a.name for a in listed.arguments or () if a.name not in (params.arguments or {})]
    if missing:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Missing arguments: {missing}")
    return await handler(ctx, params)


# -- completion ---------------------------------------------------------------------------------

SUGGESTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("test_prompt_with_arguments", "arg1"): ("hello", "help", "testValue1", "testValue2"),
    ("test_prompt_with_arguments", "arg2"): ("world", "work", "testValue1", "testValue2"),
    (TEMPLATE.uri_template, "id"): ("123", "124", "456"),
}
"""(prompt name or template URI, argument) → the values it offers, completed by prefix."""


async def complete(ctx: Ctx, params: types.CompleteRequestParams) -> types.CompleteResult:
    ref = params.ref
    if isinstance(ref, types.PromptReference):
        if ref.name not in prompts:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {ref.name}")
        known = ref.name
    elif ref.uri == TEMPLATE.uri_template:
        known = ref.uri
    else:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown template: {ref.uri}")
    typed = params.argument.value.lower()
    values = [
        v for v in SUGGESTIONS.get((known, params.argument.name), ()) if v.lower().startswith(typed)
    ]
    return types.CompleteResult(
        completion=types.Completion(values=values, total=len(values), has_more=False)
    )


# -- resumable SSE streams ----------------------------------------------------------------------

owner: ContextVar[object | None] = ContextVar("owner", default=None)
"""The key of the session whose request (or server task) this is (see ``SessionKeys``)."""


class SessionKeys:
    """ASGI middleware: each request runs with its session's key in ``owner``. The SDK shares
    one event store among its sessions and names a stream by its request's id, which every
    session reuses; the key keeps each session's events apart. A session's server task starts
    in its opening request's context, so the events it stores carry the key as well."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.keys: dict[str, object] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        session = Headers(scope=scope).get("mcp-session-id")
        key = self.keys.get(session, object()) if session else object()

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start" and session is None:
                issued = Headers(raw=message.get("headers", [])).get("mcp-session-id")
                if issued:
                    self.keys[issued] = key
            await send(message)

        token = owner.set(key)
        try:
            await self.app(scope, receive, sending)
        finally:
            owner.reset(token)
            if session and scope.get("method") == "DELETE":
                self.keys.pop(session, None)


Stored = tuple[object | None, StreamId, types.JSONRPCMessage | None]
"""An event: its session's key, its stream, its message (None for a priming event)."""


class SessionEventStore(EventStore):
    """The handshake era's SSE events, kept so a client that resumes a stream with
    ``Last-Event-ID`` gets what it missed (the server-sse-polling scenario); only its own
    session's, and only the latest ``limit`` events."""

    def __init__(self, limit: int = 10_000) -> None:
        self.limit = limit
        self.ids = itertools.count(1)
        self.events: OrderedDict[EventId, Stored] = OrderedDict()

    async def store_event(
        self, stream_id: StreamId, message: types.JSONRPCMessage | None
    ) -> EventId:
        event_id = str(next(self.ids))
        self.events[event_id] = (owner.get(), stream_id, message)
        while len(self.events) > self.limit:
            self.events.popitem(last=False)
        return event_id

    async def replay_events_after(
        self, last_event_id: EventId, send_callback: EventCallback
    ) -> StreamId | None:
        found = self.events.get(last_event_id)
        if found is None or found[0] is not owner.get():
            return None
        key, stream, _ = found
        # A copy: sending awaits, and the session goes on storing events meanwhile.
        events = list(self.events.items())
        after = [event for event, _ in events].index(last_event_id) + 1
        for event_id, (held_by, on, message) in events[after:]:
            if held_by is key and on == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


# -- the server ---------------------------------------------------------------------------------


async def list_tools(
    ctx: Ctx, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[listed for listed, _ in tools.values()])


async def call_tool(ctx: Ctx, params: Params) -> Answer:
    found = tools.get(params.name)
    if found is None:
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
    return await found[1](ctx, params)


def input_schema(name: str) -> Mapping[str, Any] | None:
    """A tool's input schema, for the SDK's check of ``Mcp-Param-*`` headers (2026-07-28)."""
    found = tools.get(name)
    return found[0].input_schema if found is not None else None


async def set_level(ctx: Ctx, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


def server() -> Server[Any]:
    made: Server[Any] = Server(
        "conformance-upstream",
        version="1.0.0",
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
        on_subscriptions_listen=ListenHandler(bus),
    )
    # logging/setLevel, which handshake-era clients send before asking for logs (deprecated in
    # 2026-07-28, where a request asks for its own).
    made.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    security = RequestStateSecurity(keys=[b"conformance-upstream-fixture-state-key!"])
    made.middleware.append(RequestStateBoundary(security, default_audience=made.name))
    return made


async def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=["127.0.0.1:*", "localhost:*"],
        allowed_origins=["http://127.0.0.1:*", "http://localhost:*"],
    )
    # An event store makes the handshake era's SSE streams resumable: each starts with a
    # priming event (an id, and how long to wait before reconnecting).
    app = server().streamable_http_app(
        transport_security=security, event_store=SessionEventStore(), retry_interval=500
    )
    config = uvicorn.Config(SessionKeys(app), log_level="warning")
    print(f"listening at http://127.0.0.1:{port}/mcp", flush=True)
    await uvicorn.Server(config).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main)
    sys.exit(0)
