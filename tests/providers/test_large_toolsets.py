"""Large toolsets: tools (or a server's tools) deferred, declared with ``defer_loading`` and the
provider's tool search where there is one (in the SDKs' own types), every tool in full where
there is none (and ``toolwire check`` says so); calls to tools a search loaded parsed, governed
and answered like any other; search calls and results kept in ``followup``; Responses
namespaces per server; toolwire's own search (Anthropic ``tool_reference``) run through the
pipeline, naming only what the listing defers to its principal."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import toolwire
from toolwire import Policy, Rule, Tool, ToolSet
from toolwire.compat import check
from toolwire.errors import ConfigurationError, ToolwireWarning
from toolwire.search import SEARCH_TOOL_NAME
from toolwire.tool import tool_from_definition

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
responses_types = pytest.importorskip("openai.types.responses")
ANTHROPIC_TOOLS = pydantic.TypeAdapter(list[anthropic_types.ToolUnionParam])
ANTHROPIC_MESSAGES = pydantic.TypeAdapter(list[anthropic_types.MessageParam])
RESPONSES_TOOLS = pydantic.TypeAdapter(list[responses_types.ToolParam])
RESPONSES_INPUT = pydantic.TypeAdapter(responses_types.ResponseInputParam)

RAN: list[tuple[str, dict[str, Any]]] = []


def _tool(name: str, description: str, server: str | None = None, **fields: Any) -> Tool:
    def handler(**arguments: Any) -> str:
        RAN.append((name, arguments))
        return f"{name} done"

    return Tool(
        name=name,
        description=description,
        input_schema={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        handler=handler,
        server_id=server,
        **fields,
    )


def toolset(**options: Any) -> ToolSet:
    return ToolSet(
        [
            _tool("get_weather", "Get the weather forecast for a city."),
            _tool("send_email", "Send an email message to a recipient.", deferred=True),
            _tool("create_issue", "Create a new issue in a repository.", "github"),
            _tool("list_issues", "List the open issues of a repository.", "github"),
            _tool("query_rows", "Run a read-only SQL query on the warehouse.", "db"),
        ],
        **options,
    )


@pytest.fixture(autouse=True)
def _clear() -> Iterator[None]:
    RAN.clear()
    yield
    RAN.clear()


def _by_name(tools: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {t.get("name", t.get("type")): t for t in tools}


# -- which tools are deferred -------------------------------------------------------------------


def test_a_tool_a_pattern_or_a_listing_defers_tools_and_names_never_change() -> None:
    plain = toolset()
    assert plain.deferred_names == ("send_email",)
    grouped = toolset(deferred=["github/*"])
    assert grouped.deferred_names == ("send_email", "github__create_issue", "github__list_issues")
    assert grouped.exposed_names == plain.exposed_names
    listing = toolwire.tools(plain, "anthropic", deferred=["db__*"])
    assert listing.toolset.deferred_names == ("send_email", "db__query_rows")
    assert plain.deferred_names == ("send_email",)  # the toolset given is left as it was
    with pytest.warns(ToolwireWarning, match="matches no tool"):
        toolwire.tools(plain, "anthropic", deferred=["nothing_*"])
    with pytest.raises(ConfigurationError, match="glob patterns"):
        ToolSet([], deferred=[3])  # type: ignore[list-item]
    with pytest.raises(ConfigurationError, match="not the string"):
        toolwire.tools(plain, "anthropic", deferred="github/*")
    with pytest.raises(ConfigurationError, match="deferred is True or False"):
        Tool(name="t", deferred="yes")  # type: ignore[arg-type]
    read = tool_from_definition({"name": "lookup", "defer_loading": True})
    assert read.deferred


# -- declared per provider --------------------------------------------------------------------


@pytest.mark.parametrize("search", ["bm25", "regex"])
def test_anthropic_declares_defer_loading_and_its_own_search(search: str) -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), "anthropic", tool_search=search)
    ANTHROPIC_TOOLS.validate_python(listing.tools)
    tools = _by_name(listing.tools)
    assert "defer_loading" not in tools["get_weather"]
    assert tools["send_email"]["defer_loading"] is True
    assert tools["github__create_issue"]["defer_loading"] is True
    assert listing.tools[-1] == {
        "type": f"tool_search_tool_{search}_20251119",
        "name": f"tool_search_tool_{search}",
    }
    # tools loaded by a search are declared: their calls resolve like any other
    assert set(listing.declaration.entries) == set(listing.toolset.exposed_names)


def test_no_search_tool_is_declared_when_nothing_is_deferred() -> None:
    for provider in ("anthropic", "openai-responses", "gemini-interactions"):
        listing = toolwire.tools([_tool("get_weather", "Weather.")], provider)
        assert len(listing.tools) == 1, provider
        assert "defer_loading" not in listing.tools[0]


def test_responses_declares_defer_loading_the_hosted_search_and_namespaces() -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), "openai-responses")
    RESPONSES_TOOLS.validate_python(listing.tools)
    tools = _by_name(listing.tools)
    assert tools["send_email"]["defer_loading"] is True
    assert listing.tools[-1] == {"type": "tool_search"}

    spaced = toolwire.tools(toolset(deferred=["github/*"]), "openai-responses", namespaces=True)
    RESPONSES_TOOLS.validate_python(spaced.tools)
    tools = _by_name(spaced.tools)
    assert [t.get("name", t["type"]) for t in spaced.tools] == [
        "get_weather",
        "send_email",
        "github",
        "db",
        "tool_search",
    ]
    github = tools["github"]
    assert github["type"] == "namespace"
    assert [t["name"] for t in github["tools"]] == ["create_issue", "list_issues"]
    assert all(t["defer_loading"] is True for t in github["tools"])
    assert "create_issue, list_issues" in github["description"]
    assert "defer_loading" not in tools["db"]["tools"][0]


def test_a_namespaced_call_resolves_to_its_servers_tool() -> None:
    listing = toolwire.tools(toolset(), "openai-responses", namespaces=True)
    response = {
        "object": "response",
        "output": [
            {
                "type": "function_call",
                "call_id": "c1",
                "namespace": "github",
                "name": "list_issues",
                "arguments": json.dumps({"text": "open"}),
            },
            {
                "type": "function_call",
                "call_id": "c2",
                "namespace": "github",
                "name": "drop_repository",  # no such tool in the namespace
                "arguments": "{}",
            },
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert RAN == [("list_issues", {"text": "open"})]
    assert outcome.calls[0].result.text == "list_issues done"
    assert outcome.calls[1].result.error_kind == "not_found"
    RESPONSES_INPUT.validate_python(outcome.followup(response))


def test_interactions_declares_its_tool_search_beside_deferred_tools() -> None:
    listing = toolwire.tools(toolset(), "gemini-interactions")
    tools = _by_name(listing.tools)
    assert tools["send_email"]["defer_loading"] is True
    assert tools["send_email"]["short_description"] == "Send an email message to a recipient."
    assert listing.tools[-1] == {"type": "tool_search"}
    given = toolwire.tools(toolset(), "gemini-interactions", native_tools=["tool_search"])
    assert [t for t in given.tools if t.get("type") == "tool_search"] == [{"type": "tool_search"}]


@pytest.mark.parametrize("provider", ["gemini", "openai-chat"])
def test_a_provider_without_tool_search_gets_every_tool_and_check_says_so(provider: str) -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), provider)
    assert "defer_loading" not in json.dumps(listing.tools)
    assert "tool_search" not in json.dumps(listing.tools)
    assert len(listing.declaration.entries) == 5
    (report,) = check([_tool("send_email", "Send an email.", deferred=True)], [provider])
    (verdict,) = report.verdicts
    assert "declared in full: the API has no tool search to load it on demand" in verdict.notes
    (searching,) = check([_tool("send_email", "Send an email.", deferred=True)], ["anthropic"])
    assert not any("tool search" in note for note in searching.verdicts[0].notes)


# -- calls to tools a search loaded -------------------------------------------------------------


def test_anthropic_search_results_stay_in_followup_and_loaded_tools_run() -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), "anthropic")
    response = {
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "tool_search_tool_bm25",
                "input": {"query": "issues"},
            },
            {
                "type": "tool_search_tool_result",
                "tool_use_id": "srvtoolu_1",
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [
                        {"type": "tool_reference", "tool_name": "github__list_issues"},
                        {"type": "tool_reference", "tool_name": "never_declared"},
                    ],
                },
            },
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "github__list_issues",
                "input": {"text": "open"},
            },
            {"type": "tool_use", "id": "toolu_2", "name": "never_declared", "input": {}},
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert RAN == [("list_issues", {"text": "open"})]
    assert [c.result.error_kind for c in outcome.calls] == [None, "not_found"]
    followup = outcome.followup(response)
    ANTHROPIC_MESSAGES.validate_python(followup)
    assistant, user = followup
    assert [b["type"] for b in assistant["content"]] == [
        "server_tool_use",
        "tool_search_tool_result",
        "tool_use",
        "tool_use",
    ]
    assert [b["tool_use_id"] for b in user["content"]] == ["toolu_1", "toolu_2"]
    assert user["content"][1]["is_error"] is True


def test_responses_hosted_search_items_stay_in_followup_and_loaded_tools_run() -> None:
    listing = toolwire.tools(toolset(), "openai-responses")
    response = {
        "object": "response",
        "output": [
            {
                "type": "tool_search_call",
                "id": "ts_1",
                "call_id": "tsc_1",
                "execution": "server",
                "status": "completed",
                "arguments": {"query": "email"},
            },
            {
                "type": "tool_search_output",
                "id": "tso_1",
                "call_id": "tsc_1",
                "execution": "server",
                "status": "completed",
                "tools": [
                    {
                        "type": "function",
                        "name": "send_email",
                        "parameters": {"type": "object"},
                        "strict": False,
                        "defer_loading": True,
                    }
                ],
            },
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "send_email",
                "arguments": json.dumps({"text": "hi"}),
            },
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert RAN == [("send_email", {"text": "hi"})]
    followup = outcome.followup(response)
    RESPONSES_INPUT.validate_python(followup)
    assert [item["type"] for item in followup] == [
        "tool_search_call",
        "tool_search_output",
        "function_call",
        "function_call_output",
    ]


# -- toolwire's own search ------------------------------------------------------------------------


def _search_call(query: str, call_id: str = "toolu_s") -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "tool_use", "id": call_id, "name": SEARCH_TOOL_NAME, "input": {"query": query}}
        ],
    }


def test_the_local_search_is_a_governed_tool_answered_with_tool_references() -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), "anthropic", tool_search="local")
    ANTHROPIC_TOOLS.validate_python(listing.tools)
    search = _by_name(listing.tools)[SEARCH_TOOL_NAME]
    assert "defer_loading" not in search
    outcome = toolwire.execute_tool_calls_sync(listing, _search_call("open issues of a repo"))
    (answer,) = outcome.results
    pydantic.TypeAdapter(anthropic_types.ToolResultBlockParam).validate_python(answer)
    names = [block["tool_name"] for block in answer["content"]]
    assert names[0] == "github__list_issues"
    assert set(names) <= set(listing.toolset.deferred_names)
    assert all(block["type"] == "tool_reference" for block in answer["content"])

    nothing = toolwire.execute_tool_calls_sync(listing, _search_call("zzzz qqqq"))
    assert nothing.results[0]["content"] == "No tool matched the query; try other words."


def test_the_local_search_never_names_a_tool_the_principal_was_not_shown() -> None:
    policy = Policy(Rule("deny", "github/create_issue"), default="allow")
    listing = toolwire.tools(
        toolset(deferred=["github/*"]),
        "anthropic",
        tool_search="local",
        policy=policy,
        principal="alice",
    )
    outcome = toolwire.execute_tool_calls_sync(listing, _search_call("create a new issue"))
    names = [block["tool_name"] for block in outcome.results[0]["content"]]
    assert "github__create_issue" not in names
    # and the policy governs the search itself, as any tool
    closed = Policy(Rule("deny", SEARCH_TOOL_NAME), default="allow")
    listing = toolwire.tools(toolset(), "anthropic", tool_search="local", policy=closed)
    denied = toolwire.execute_tool_calls_sync(listing, _search_call("email"))
    assert denied.calls[0].result.error_kind == "denied"


def test_the_local_search_refuses_a_tool_that_already_has_its_name() -> None:
    tools = [*toolset(deferred=["github/*"]).tools, _tool(SEARCH_TOOL_NAME, "Mine.")]
    with pytest.raises(ConfigurationError, match="the name of the toolwire search tool"):
        toolwire.tools(tools, "anthropic", tool_search="local")
    for taken in ("tool_search_tool_bm25", "code_execution"):  # the API's tools' names too
        clash = [*tools, _tool(taken, "Mine.", callers=frozenset({"direct", "code"}))]
        with pytest.raises(ConfigurationError, match=f"exposed as '{taken}'"):
            toolwire.tools(clash, "anthropic")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        toolwire.tools(tools, "anthropic")  # the API's search has another name


def test_a_search_answer_names_only_tools_its_search_was_made_for() -> None:
    from toolwire import ToolResult
    from toolwire.search import found_tools, search_tool

    search = search_tool([("send_email", "Send an email."), ("read_file", "Read a file.")])
    forged = ToolResult(structured_content={"tools": ["send_email", "drop_db", 3, None]})
    assert found_tools(search, forged) == ["send_email"]
    assert found_tools(search, ToolResult.error("failed", "no")) is None
    assert found_tools(search, ToolResult(structured_content={"tools": "send_email"})) is None
    other = _tool("tool_search", "Not toolwire's.")
    assert found_tools(other, forged) is None  # a tool of the same name is answered as itself
    assert search.handler is not None
    assert search.handler(query="email", limit=1) == {"tools": ["send_email"]}


def test_a_conversation_with_hosted_search_and_a_namespace_through_the_openai_client() -> None:
    openai = pytest.importorskip("openai")
    from integrations.interactions_server import RawReply, Request, serve

    loaded = {
        "type": "namespace",
        "name": "github",
        "description": "The tools of the github server",
        "tools": [{"type": "function", "name": "list_issues", "parameters": {"type": "object"}}],
    }

    def respond(request: Request) -> RawReply:
        body = request.body
        answered = [i for i in body["input"] if i.get("type") == "function_call_output"]
        if not answered:
            output: list[dict[str, Any]] = [
                {
                    "type": "tool_search_call",
                    "id": "ts_1",
                    "call_id": "tsc_1",
                    "execution": "server",
                    "status": "completed",
                    "arguments": {"query": "issues"},
                },
                {
                    "type": "tool_search_output",
                    "id": "tso_1",
                    "call_id": "tsc_1",
                    "execution": "server",
                    "status": "completed",
                    "tools": [loaded],
                },
                {
                    "type": "function_call",
                    "id": "fc_1",
                    "call_id": "call_1",
                    "namespace": "github",
                    "name": "list_issues",
                    "arguments": json.dumps({"text": "open"}),
                    "status": "completed",
                },
            ]
        else:
            text = f"Found: {answered[0]['output']}"
            output = [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            ]
        response = {
            "id": "resp_1",
            "object": "response",
            "created_at": 1_767_225_600,
            "status": "completed",
            "model": body["model"],
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "incomplete_details": None,
            "metadata": {},
        }
        return RawReply([json.dumps(response).encode()])

    server_iter = serve(respond=respond)
    server = next(server_iter)
    try:
        client = openai.OpenAI(api_key="test-key", base_url=server.base_url + "/v1")
        listing = toolwire.tools(
            toolset(deferred=["github/*"]), "openai-responses", namespaces=True
        )
        items: list[Any] = [{"role": "user", "content": "What is open?"}]
        reply = client.responses.create(model="gpt-5", input=items, tools=listing.tools)
        outcome = toolwire.execute_tool_calls_sync(listing, reply)
        assert RAN == [("list_issues", {"text": "open"})]
        items += outcome.followup(reply)
        final = client.responses.create(model="gpt-5", input=items, tools=listing.tools)
        assert final.output_text == "Found: list_issues done"
        sent = server.bodies[-1]["input"]
        assert [i.get("type") for i in sent[1:]] == [
            "tool_search_call",
            "tool_search_output",
            "function_call",
            "function_call_output",
        ]
        assert sent[3]["namespace"] == "github"
        namespace = next(t for t in server.bodies[0]["tools"] if t.get("type") == "namespace")
        assert namespace["name"] == "github"
    finally:
        server_iter.close()


def test_a_namespace_is_never_dropped_for_a_tool_of_the_same_bare_name() -> None:
    policy = Policy(Rule("deny", "github/create_issue"), default="allow")
    tools = [*toolset().tools, _tool("create_issue", "Create a local note.")]
    listing = toolwire.tools(tools, "openai-responses", namespaces=True, policy=policy)
    response = {
        "object": "response",
        "output": [
            {
                "type": "function_call",
                "call_id": "c1",
                "namespace": "github",
                "name": "create_issue",  # hidden in the namespace; a local tool has the name
                "arguments": json.dumps({"text": "x"}),
            }
        ],
    }
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert outcome.calls[0].result.error_kind == "not_found"
    assert RAN == []


def test_the_local_search_under_a_policy_needs_a_listing() -> None:
    policy = Policy(Rule("deny", "github/*"), default="allow")
    with pytest.raises(ConfigurationError, match="needs a listing"):
        toolwire.execute_tool_calls_sync(
            toolset(deferred=["github/*"]),
            "anthropic",
            _search_call("issues"),
            policy=policy,
            principal="bob",
            tool_search="local",
        )


def test_a_search_limit_written_as_a_whole_float_is_taken() -> None:
    listing = toolwire.tools(toolset(deferred=["github/*"]), "anthropic", tool_search="local")
    response = _search_call("list the open issues")
    response["content"][0]["input"]["limit"] = 1.0
    outcome = toolwire.execute_tool_calls_sync(listing, response)
    assert [b["tool_name"] for b in outcome.results[0]["content"]] == ["github__list_issues"]
