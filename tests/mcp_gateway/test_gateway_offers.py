"""The gateway serves its upstreams' resources, resource templates, prompts and completions,
each read and get governed as a call (see ``toolwire.mcp.server._offers``)."""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp")

import mcp_types as types
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

import toolwire
from toolwire.mcp import Gateway, Hub, InProcessServer
from toolwire.policy import Policy, Rule
from toolwire.runs.store import SQLiteStore

pytestmark = pytest.mark.anyio

BOUND = 30
PIXEL = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="
)


def docs_server() -> MCPServer:
    """An upstream with resources, a template, prompts and completion."""
    server = MCPServer("docs")

    @server.resource("file:///docs/readme.txt", name="readme", title="Read me")
    def readme() -> str:
        return "the readme"

    @server.resource("file:///docs/logo.png", name="logo", mime_type="image/png")
    def logo() -> bytes:
        return PIXEL

    @server.resource("file:///docs/big.txt", name="big")
    def big() -> str:
        return "x" * 5000

    @server.resource("file:///private/keys.txt", name="keys")
    def keys() -> str:
        return "secret"

    @server.resource("broken://{what}", name="broken")
    def broken(what: str) -> str:
        raise ValueError(f"no {what} here")

    @server.resource("note://{topic}", name="note")
    def note(topic: str) -> str:
        return f"a note on {topic}"

    @server.prompt(title="Greeting")
    def greet() -> str:
        """Says hello."""
        return "Hello!"

    @server.prompt()
    def review(code: str, language: str = "python") -> list[Any]:
        """Reviews code."""
        return [UserMessage(f"Review this {language}: {code}")]

    @server.completion()
    async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
        options = ["python", "pascal", "rust"]
        return types.Completion(values=[o for o in options if o.startswith(argument.value)])

    @server.tool()
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(
        title="Weather report",
        annotations=types.ToolAnnotations(read_only_hint=True, open_world_hint=False),
        icons=[types.Icon(src="https://example.com/sun.png", mime_type="image/png")],
        meta={"example.com/team": "weather"},
    )
    def weather(city: str) -> Report:
        """Reports the weather."""
        return Report(city=city, celsius=21)

    @server.tool()
    def split() -> list[types.ContentBlock]:
        """Answers with one part for the model and one for the user only."""
        return [
            types.TextContent(text="for both", annotations=types.Annotations(priority=0.9)),
            types.TextContent(
                text="for the user", annotations=types.Annotations(audience=["user"])
            ),
        ]

    return server


GEMINI_SPLIT = {
    "candidates": [
        {
            "content": {
                "role": "model",
                "parts": [{"functionCall": {"name": "docs__split", "args": {}}}],
            }
        }
    ]
}
"""A Gemini response calling the tool whose answer has a part for the user only."""


class Report(BaseModel):
    city: str
    celsius: int


@asynccontextmanager
async def through(
    *, policy: Policy | None = None, own_names: bool = False, **options: Any
) -> AsyncIterator[Client]:
    hub = Hub({"docs": InProcessServer(server=docs_server())})
    async with hub:
        gateway = Gateway(hub.as_toolset(), hub=hub, policy=policy, own_names=own_names, **options)
        async with Client(gateway.server()) as client:
            yield client


async def test_resources_templates_and_prompts_are_listed_as_the_upstream_lists_them() -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            prompts = (await client.list_prompts()).prompts
    by_uri = {r.uri: r for r in resources}
    assert set(by_uri) == {
        "file:///docs/readme.txt",
        "file:///docs/logo.png",
        "file:///docs/big.txt",
        "file:///private/keys.txt",
    }
    assert by_uri["file:///docs/readme.txt"].title == "Read me"  # nothing lost on the way
    assert by_uri["file:///docs/logo.png"].mime_type == "image/png"
    assert [t.uri_template for t in templates] == ["broken://{what}", "note://{topic}"]
    assert {p.name for p in prompts} == {"docs__greet", "docs__review"}
    review = next(p for p in prompts if p.name == "docs__review")
    assert [(a.name, a.required) for a in review.arguments or ()] == [
        ("code", True),
        ("language", False),
    ]
    assert next(p for p in prompts if p.name == "docs__greet").title == "Greeting"


async def test_reads_text_binary_and_templated_resources() -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            text = await client.read_resource("file:///docs/readme.txt")
            image = await client.read_resource("file:///docs/logo.png")
            templated = await client.read_resource("note://weather")
    (content,) = text.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text == "the readme"
    (blob,) = image.contents
    assert isinstance(blob, types.BlobResourceContents)
    assert base64.b64decode(blob.blob) == PIXEL
    assert blob.mime_type == "image/png"
    (note,) = templated.contents
    assert isinstance(note, types.TextResourceContents)
    assert note.text == "a note on weather"


async def test_gets_prompts_with_and_without_arguments() -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            simple = await client.get_prompt("docs__greet")
            review = await client.get_prompt("docs__review", {"code": "x = 1", "language": "py"})
            with pytest.raises(MCPError) as missing:
                await client.get_prompt("docs__review", {})
            with pytest.raises(MCPError) as extra:
                await client.get_prompt("docs__review", {"code": "x", "nope": "y"})
    (message,) = simple.messages
    assert message.role == "user"
    assert message.content.text == "Hello!"
    assert review.messages[0].content.text == "Review this py: x = 1"  # type: ignore[union-attr]
    assert missing.value.code == types.INVALID_PARAMS
    assert "code" in missing.value.message
    assert extra.value.code == types.INVALID_PARAMS


async def test_own_names_serve_prompts_under_the_upstreams_names() -> None:
    with anyio.fail_after(BOUND):
        async with through(own_names=True) as client:
            prompts = {p.name for p in (await client.list_prompts()).prompts}
            got = await client.get_prompt("greet")
    assert prompts == {"greet", "review"}
    assert got.messages[0].content.text == "Hello!"  # type: ignore[union-attr]


async def test_completion_reaches_the_upstream_under_its_own_prompt_name() -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            prompt = await client.complete(
                types.PromptReference(name="docs__review"), {"name": "language", "value": "p"}
            )
            template = await client.complete(
                types.ResourceTemplateReference(uri="note://{topic}"),
                {"name": "topic", "value": "r"},
            )
            with pytest.raises(MCPError) as unknown:
                await client.complete(
                    types.PromptReference(name="nope"), {"name": "language", "value": ""}
                )
    assert prompt.completion.values == ["python", "pascal"]
    assert template.completion.values == ["rust"]
    assert unknown.value.code == types.INVALID_PARAMS


@pytest.mark.parametrize(
    "uri",
    ["file:///nowhere.txt", "", "x" * 10_000, "file:///docs/readme.txt\x00", "note:/x"],
)
async def test_an_unknown_malformed_or_huge_uri_is_a_protocol_error(uri: str) -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            still = await client.read_resource("file:///docs/readme.txt")  # the session goes on
    assert refused.value.code == types.INVALID_PARAMS
    assert len(refused.value.message) < 400
    assert still.contents


async def test_a_policy_denies_reads_by_uri_and_hides_them_from_the_listing() -> None:
    policy = Policy(Rule("deny", "docs/file:///private/*", kind="resource"))
    with anyio.fail_after(BOUND):
        async with through(policy=policy) as client:
            listed = {r.uri for r in (await client.list_resources()).resources}
            with pytest.raises(MCPError) as denied:
                await client.read_resource("file:///private/keys.txt")
            tools = {t.name for t in (await client.list_tools()).tools}
    assert "file:///private/keys.txt" not in listed
    assert "file:///docs/readme.txt" in listed
    assert denied.value.code == types.INVALID_PARAMS  # denied outright: as if not there
    assert tools == {"docs__add", "docs__weather", "docs__split"}  # a resource rule: no tools


async def test_a_deny_decided_by_the_arguments_is_a_refusal_saying_why() -> None:
    def removing(context: toolwire.PolicyContext) -> bool:
        return "rm " in context.arguments.get("code", "")

    policy = Policy(Rule("deny", "docs/review", kind="prompt", when=removing, reason="no rm"))
    with anyio.fail_after(BOUND):
        async with through(policy=policy, principal="bob") as client:
            listed = {p.name for p in (await client.list_prompts()).prompts}
            with pytest.raises(MCPError) as denied:
                await client.get_prompt("docs__review", {"code": "rm -rf /"})
            fine = await client.get_prompt("docs__review", {"code": "ls"})
    assert "docs__review" in listed  # some gets may pass: it is listed
    assert denied.value.code == types.INVALID_REQUEST
    assert "no rm" in denied.value.message
    assert fine.messages


async def test_an_allow_rule_for_tools_does_not_allow_reads() -> None:
    policy = Policy(Rule("allow", "*/*"), default="deny")
    with anyio.fail_after(BOUND):
        async with through(policy=policy) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            prompts = (await client.list_prompts()).prompts
    assert [t.name for t in tools] == ["docs__add", "docs__weather", "docs__split"]
    assert resources == []
    assert prompts == []


async def test_an_asked_read_waits_in_the_ledger_and_is_answered_once_allowed(
    tmp_path: Any,
) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    policy = Policy(Rule("ask", "docs/file:///docs/*", kind="resource"))
    with anyio.fail_after(BOUND):
        async with through(policy=policy, store=store) as client:
            with pytest.raises(MCPError) as waits:
                await client.read_resource("file:///docs/readme.txt")
            (request,) = await toolwire.pending(store=store)
            assert request.exposed_name.startswith("docs__")
            await toolwire.decide(request.run_id, request.call_id, toolwire.allow(), store=store)
            read = await client.read_resource("file:///docs/readme.txt")
            with pytest.raises(MCPError) as again:  # the next read is a new one: asked again
                await client.read_resource("file:///docs/readme.txt")
    assert waits.value.code == types.INVALID_REQUEST
    assert request.run_id in waits.value.message
    assert "toolwire decide" in waits.value.message
    assert read.contents[0].text == "the readme"  # type: ignore[union-attr]
    assert again.value.code == types.INVALID_REQUEST


async def test_a_denied_read_stays_denied(tmp_path: Any) -> None:
    store = SQLiteStore(tmp_path / "runs.db")
    policy = Policy(Rule("ask", "docs/*", kind="prompt"))
    with anyio.fail_after(BOUND):
        async with through(policy=policy, store=store) as client:
            with pytest.raises(MCPError):
                await client.get_prompt("docs__greet")
            (request,) = await toolwire.pending(store=store)
            await toolwire.decide(
                request.run_id, request.call_id, toolwire.deny("not now"), store=store
            )
            with pytest.raises(MCPError) as denied:
                await client.get_prompt("docs__greet")
    assert denied.value.code == types.INVALID_REQUEST
    assert "not now" in denied.value.message


async def test_destructive_ask_spares_reads_and_gets() -> None:
    policy = Policy(destructive="ask")
    with anyio.fail_after(BOUND):
        async with through(policy=policy) as client:
            read = await client.read_resource("file:///docs/readme.txt")
            got = await client.get_prompt("docs__greet")
    assert read.contents
    assert got.messages


async def test_a_gateway_without_a_hub_serves_no_resources_or_prompts() -> None:
    tools = toolwire.ToolSet.of(toolwire.tool(lambda: "x", name="x", description="Says x."))
    with anyio.fail_after(BOUND):
        async with Client(Gateway(tools).server()) as client:
            capabilities = client.server_capabilities
    assert capabilities is not None
    assert capabilities.resources is None
    assert capabilities.prompts is None


async def test_a_tools_title_icons_annotations_meta_and_output_schema_pass_through() -> None:
    hub = Hub({"docs": InProcessServer(server=docs_server())})
    with anyio.fail_after(BOUND):
        async with hub, Client(docs_server()) as direct:
            upstream = {t.name: t for t in (await direct.list_tools()).tools}["weather"]
            async with Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
                served = {t.name: t for t in (await client.list_tools()).tools}["docs__weather"]
                result = await client.call_tool("docs__weather", {"city": "Oslo"})
    assert served.title == upstream.title == "Weather report"
    assert served.annotations == upstream.annotations
    assert served.icons == upstream.icons
    assert served.meta == upstream.meta
    assert served.output_schema == upstream.output_schema
    assert result.structured_content == {"city": "Oslo", "celsius": 21}


async def test_content_annotations_pass_through_and_user_only_parts_never_reach_a_model() -> None:
    hub = Hub({"docs": InProcessServer(server=docs_server())})
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
            served = await client.call_tool("docs__split", {})
            outcome = await toolwire.execute_tool_calls(hub, "gemini", GEMINI_SPLIT)
    both, user = served.content
    assert both.annotations == types.Annotations(priority=0.9)
    assert user.annotations == types.Annotations(audience=["user"])
    assert user.text == "for the user"  # type: ignore[union-attr]
    (answer,) = outcome.results
    assert "for both" in str(answer)
    assert "for the user" not in str(answer)
    # The run's own record keeps both: only the model's answer leaves the user's part out.
    assert [p.text for p in outcome.calls[0].result.content] == ["for both", "for the user"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("topic", "outcome"),
    [
        ("a" * 7000, "read"),
        ("{topic}", "read"),
        ("\u202etxt.exe", "read"),
        ("..%2F..%2Fetc%2Fpasswd", "The resource URI"),  # the gateway's: not plain
        ("%00", "The resource URI"),
        ("x?y=1#z", "Resource not found"),  # the gateway's: its template does not match
    ],
)
async def test_a_template_read_with_hostile_parameters_is_the_servers_to_answer(
    topic: str, outcome: str
) -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            if outcome == "read":
                (content,) = (await client.read_resource(f"note://{topic}")).contents
                assert isinstance(content, types.TextResourceContents)
                assert content.text == f"a note on {topic}"
            else:
                with pytest.raises(MCPError) as refused:
                    await client.read_resource(f"note://{topic}")
                assert refused.value.code == types.INVALID_PARAMS
                assert refused.value.message.startswith(outcome)
            still = await client.read_resource("file:///docs/readme.txt")
    assert still.contents


@pytest.mark.parametrize("name", ["", "x" * 100_000, "docs__greet\x00", "../docs__greet", "🙂"])
async def test_a_malformed_huge_or_unlisted_prompt_name_is_a_protocol_error(name: str) -> None:
    with anyio.fail_after(BOUND):
        async with through() as client:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(name)
    assert refused.value.code == types.INVALID_PARAMS
    assert len(refused.value.message) < 400


# -- an outside attack's findings, each failing before its fix -----------------------------------


@pytest.mark.parametrize("uri", ["note://%73ecret", "note://secre%74", "note://./secret"])
async def test_a_templated_uri_spelt_otherwise_than_plainly_is_refused(uri: str) -> None:
    """The SDK decodes a template's variables: ``note://%73ecret`` would read ``secret``
    while the policy judged another URI."""
    policy = Policy(Rule("deny", "docs/note://secret", kind="resource"))
    with anyio.fail_after(BOUND):
        async with through(policy=policy) as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource(uri)
            with pytest.raises(MCPError) as denied:
                await client.read_resource("note://secret")
    assert refused.value.code == denied.value.code == types.INVALID_PARAMS
    assert "not plain" in refused.value.message


async def test_a_deny_on_one_server_never_sends_the_read_to_another() -> None:
    policy = Policy(Rule("deny", "docs/file:///docs/*", kind="resource"))
    hub = Hub(
        {
            "docs": InProcessServer(server=docs_server()),
            "mirror": InProcessServer(server=docs_server()),
        }
    )
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub, policy=policy).server()) as c:
            with pytest.raises(MCPError) as refused:
                await c.read_resource("file:///docs/readme.txt")
    assert "offered by several servers (docs, mirror)" in refused.value.message


async def test_an_answer_past_the_output_cap_is_refused_without_its_content() -> None:
    with anyio.fail_after(BOUND):
        async with through(max_output_chars=1000) as client:
            with pytest.raises(MCPError) as refused:
                await client.read_resource("file:///docs/big.txt")
            fine = await client.read_resource("file:///docs/readme.txt")  # small enough
    assert refused.value.code == types.INTERNAL_ERROR
    assert "max_output_chars" in refused.value.message
    assert len(refused.value.message) < 200
    assert fine.contents


async def test_a_server_offering_resources_only_is_served() -> None:
    server = MCPServer("shelf")

    @server.resource("file:///shelf/book.txt", name="book")
    def book() -> str:
        return "a book"

    hub = Hub({"shelf": InProcessServer(server=server)})
    with anyio.fail_after(BOUND):
        async with hub, Client(Gateway(hub.as_toolset(), hub=hub).server()) as client:
            read = await client.read_resource("file:///shelf/book.txt")
    assert hub.status == {"shelf": None} or hub.status.get("shelf") is None
    assert read.contents[0].text == "a book"  # type: ignore[union-attr]


async def test_a_server_asking_for_input_forever_fails_that_request_only() -> None:
    from mcp.server.lowlevel import Server

    ask = types.ElicitRequest(
        params=types.ElicitRequestFormParams(
            message="again?", requested_schema={"type": "object", "properties": {}}
        )
    )

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[types.Prompt(name="forever")])

    async def get(ctx: Any, params: Any) -> types.InputRequiredResult:
        return types.InputRequiredResult(input_requests={"q": ask}, request_state="s")

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=[types.Resource(uri="doc://a", name="a")])

    async def read(ctx: Any, params: Any) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri="doc://a", text="A")]
        )

    upstream = Server(
        "up",
        on_list_prompts=list_prompts,
        on_get_prompt=get,
        on_list_resources=list_resources,
        on_read_resource=read,
    )
    hub = Hub({"up": InProcessServer(server=upstream)})
    with anyio.fail_after(BOUND):
        async with hub:
            gateway = Gateway(hub.as_toolset(), hub=hub)
            async with (
                Client(gateway.server(), mode="legacy") as old,
                Client(gateway.server()) as new,
            ):
                with pytest.raises(MCPError) as failed:
                    await old.get_prompt("up__forever")
                read = await new.read_resource("doc://a")
    assert failed.value.code == types.INTERNAL_ERROR
    assert "kept asking for input" in failed.value.message
    assert read.contents[0].text == "A"  # type: ignore[union-attr]


async def test_a_servers_own_error_for_a_read_reaches_the_client_as_it_said_it() -> None:
    with anyio.fail_after(BOUND):
        async with Client(docs_server()) as direct:
            with pytest.raises(MCPError) as directly:
                await direct.read_resource("broken://thing")
        async with through() as client:
            with pytest.raises(MCPError) as through_gateway:
                await client.read_resource("broken://thing")
    assert (through_gateway.value.code, through_gateway.value.message) == (
        directly.value.code,
        directly.value.message,
    )


def test_a_servers_garbled_tasks_meta_never_breaks_the_listing() -> None:
    from toolwire.mcp.server._shapes import mcp_tool

    tasks = "io.modelcontextprotocol/tasks"
    tool = toolwire.Tool(name="t", server_id="s", description="A tool.")
    listed = mcp_tool("s__t", tool, meta={tasks: "garbage"}, task_support="required")
    assert listed.meta == {tasks: {"taskSupport": "required"}}
