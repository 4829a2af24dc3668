"""The provider contract, driven by the registry: every registered provider declares, parses
what it declared, answers and gives the conversation's next messages in its SDK's own types;
a response of another provider's shape is refused; an empty toolset declares nothing."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest

import toolwire
from toolwire import ConfigurationError, MalformedResponse, Policy, Rule, Tool, ToolSet
from toolwire.compat import check, limits
from toolwire.errors import ToolwireWarning
from toolwire.mcp import Hub, StdioServer
from toolwire.policy import tainted_by
from toolwire.providers import Declaration, get_provider, parse_calls, provider_names

anthropic_types = pytest.importorskip("anthropic.types")
chat_types = pytest.importorskip("openai.types.chat")
responses_types = pytest.importorskip("openai.types.responses")
genai_types = pytest.importorskip("google.genai.types")
interactions_types = pytest.importorskip("google.genai.interactions")

SERVERS = Path(__file__).parent.parent / "mcp_hub" / "mcp_servers.py"


def _list_of(kind: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(list[kind])  # type: ignore[valid-type]


# The Interactions param types allow a file object where media data goes.
_FILES_ALLOWED = pydantic.ConfigDict(arbitrary_types_allowed=True)


def _sdk_message(data: dict[str, Any]) -> Any:
    return anthropic_types.Message.model_validate(
        {
            "id": "msg_1",
            "model": "claude-test",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
            **data,
        }
    )


def _sdk_completion(data: dict[str, Any]) -> Any:
    return chat_types.ChatCompletion.model_validate(
        {"id": "c", "object": "chat.completion", "created": 0, "model": "gpt-test", **data}
    )


def _sdk_response(data: dict[str, Any]) -> Any:
    base = {"id": "r", "created_at": 0, "model": "gpt-test", "parallel_tool_calls": True}
    return responses_types.Response.model_validate(
        {**base, "tool_choice": "auto", "tools": [], **data}
    )


SDK: dict[str, dict[str, Any]] = {
    "gemini": {
        "tools": _list_of(genai_types.Tool),
        "response": genai_types.GenerateContentResponse.model_validate,
        "followup": _list_of(genai_types.Content),
    },
    "gemini-interactions": {
        "tools": pydantic.TypeAdapter(list[interactions_types.ToolParam], config=_FILES_ALLOWED),
        "response": interactions_types.Interaction.model_validate,
        "followup": pydantic.TypeAdapter(
            interactions_types.InteractionsInputParam, config=_FILES_ALLOWED
        ),
    },
    "anthropic": {
        "tools": _list_of(anthropic_types.ToolParam),
        "response": _sdk_message,
        "followup": _list_of(anthropic_types.MessageParam),
    },
    "openai-chat": {
        "tools": _list_of(chat_types.ChatCompletionFunctionToolParam),
        "response": _sdk_completion,
        "followup": _list_of(chat_types.ChatCompletionMessageParam),
    },
    "openai-responses": {
        "tools": _list_of(responses_types.FunctionToolParam),
        "response": _sdk_response,
        "followup": pydantic.TypeAdapter(responses_types.ResponseInputParam),
    },
}
"""What each provider's SDK calls its request tools, its response and its input messages."""


@toolwire.tool
def search(query: str, limit: int = 5) -> dict[str, Any]:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    return {"query": query, "results": [f"item {i}" for i in range(limit)]}


@toolwire.tool
def ping() -> str:
    """Health check."""
    return "pong"


TOOLSET = ToolSet([search, ping])
CALLS = [("c1", "search", {"query": "lamps", "limit": 2}), ("c2", "nope", {})]


def test_every_registered_provider_is_covered_here() -> None:
    assert sorted(SDK) == provider_names()


@pytest.mark.parametrize("provider", provider_names())
def test_round_trip_through_the_registry_in_the_sdks_own_types(provider: str) -> None:
    adapter = get_provider(provider)
    listing = toolwire.tools(TOOLSET, provider)
    assert isinstance(listing.declaration, Declaration)
    SDK[provider]["tools"].validate_python(listing.tools)
    response = SDK[provider]["response"](adapter.response_for(CALLS, "Looking."))
    assert adapter.recognizes(response)
    assert adapter.text(response) == "Looking."
    outcome = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert [c.result.error_kind for c in outcome.calls] == [None, "not_found"]
    assert outcome.calls[0].item.local_id == "c1"
    assert outcome.provider == provider
    followup = outcome.followup(response)
    SDK[provider]["followup"].validate_python(followup)
    # The next turn's response (the model is done) parses to no calls.
    done = SDK[provider]["response"](adapter.response_for([], "Two lamps."))
    assert adapter.parse(done, listing.declaration) == []
    assert adapter.text(done) == "Two lamps."


@pytest.mark.parametrize("provider", provider_names())
def test_the_followup_carries_the_models_turn_then_every_answer(provider: str) -> None:
    adapter = get_provider(provider)
    response = adapter.response_for(CALLS)
    outcome = anyio.run(toolwire.execute_tool_calls, toolwire.tools(TOOLSET, provider), response)
    followup = outcome.followup(response)
    flat = repr(followup)
    for answer in outcome.results:
        assert repr(answer)[1:-1] in flat
    if adapter.PROFILE.server_history:  # the server holds the model's turn: answers alone
        assert followup == outcome.results
    else:
        assert "lamps" in repr(followup[0])  # the model's own turn comes first


@pytest.mark.parametrize("provider", provider_names())
@pytest.mark.parametrize("other", provider_names())
def test_a_response_of_another_provider_is_refused_naming_it(provider: str, other: str) -> None:
    if provider == other:
        return
    response = get_provider(other).response_for(CALLS, "text")
    listing = toolwire.tools(TOOLSET, provider)
    with pytest.raises(MalformedResponse, match=f"looks like .*'{other}'"):
        get_provider(provider).parse(response, listing.declaration)
    with pytest.raises(MalformedResponse):
        anyio.run(toolwire.execute_tool_calls, TOOLSET, provider, response)
    # The SDK's own object too, not only the dict.
    with pytest.raises(MalformedResponse, match=f"'{other}'"):
        get_provider(provider).parse(SDK[other]["response"](response), listing.declaration)


@pytest.mark.parametrize("provider", provider_names())
def test_parse_calls_parses_a_bare_toolset_as_the_listing_would(provider: str) -> None:
    adapter = get_provider(provider)
    response = adapter.response_for(CALLS)
    items = parse_calls(provider, response, [search, ping])
    assert items == adapter.parse(response, toolwire.tools(TOOLSET, provider).declaration)
    assert [type(item).__name__ for item in items] == ["ToolCall", "RejectedCall"]
    assert [item.local_id for item in items] == ["c1", "c2"]


def test_parse_calls_checks_the_provider_and_its_options() -> None:
    response = get_provider("openai-chat").response_for(CALLS)
    with pytest.raises(ConfigurationError, match=r"unknown provider 'openai'; known: "):
        parse_calls("openai", response, TOOLSET)
    with pytest.raises(ConfigurationError, match=r"unknown option 'bogus'.*valid: strict"):
        parse_calls("openai-chat", response, TOOLSET, bogus=True)
    with pytest.raises(MalformedResponse, match="looks like"):
        parse_calls("anthropic", response, TOOLSET)


def test_a_tool_that_cannot_be_declared_leaves_the_others_calls_parsing() -> None:
    broken = Tool(name="broken", input_schema={"type": "object", "properties": {"x": 5}})
    response = get_provider("gemini").response_for([("c1", "ping", {}), ("c2", "broken", {})])
    items = parse_calls("gemini", response, [ping, broken])
    assert isinstance(items[0], toolwire.ToolCall)
    assert items[0].exposed_name == "ping"


@pytest.mark.parametrize(
    ("provider", "strict", "expected"),
    [
        ("anthropic", True, {"free": "#/properties/meta: an open map (additionalProperties) "}),
        ("anthropic", False, {}),
        ("openai-chat", True, {"free": "#/properties/meta: an open map (additionalProperties) "}),
        ("openai-chat", False, {"free": "strict mode was turned off", "ping": "strict mode"}),
        ("openai-responses", True, {"free": "#/properties/meta: an open map "}),
        ("gemini", None, {}),
        ("gemini-interactions", None, {}),
    ],
)
def test_a_declaration_says_why_each_tool_is_sent_without_strict(
    provider: str, strict: bool | None, expected: dict[str, str]
) -> None:
    free = Tool(
        name="free",
        input_schema={
            "type": "object",
            "properties": {"meta": {"type": "object", "additionalProperties": True}},
        },
    )
    options = {} if strict is None else {"strict": strict}
    declaration = toolwire.tools([free, ping], provider, **options).declaration
    reasons = declaration.not_strict
    assert sorted(reasons) == sorted(expected)
    for name, start in expected.items():
        assert reasons[name].startswith(start)
        entry = declaration.entry(name)
        assert entry is not None
        assert entry.strict is False
        assert entry.not_strict_because == reasons[name]


@pytest.mark.parametrize("provider", provider_names())
def test_an_empty_toolset_declares_nothing(provider: str) -> None:
    assert toolwire.tools([], provider).tools is None
    assert toolwire.tools(ToolSet([search], exclude=["search"]), provider).tools is None


@pytest.mark.parametrize("provider", provider_names())
def test_options_are_checked_naming_the_valid_ones(provider: str) -> None:
    with pytest.raises(ConfigurationError, match=r"unknown option 'bogus'.*valid: "):
        toolwire.tools(TOOLSET, provider, bogus=1)
    with pytest.raises(ConfigurationError, match="unknown option 'bogus'"):
        anyio.run(lambda: toolwire.execute_tool_calls(TOOLSET, provider, {}, bogus=1))


def test_an_option_of_the_wrong_type_names_what_it_takes() -> None:
    with pytest.raises(ConfigurationError, match=r"'strict'.*True or False"):
        toolwire.tools(TOOLSET, "openai-chat", strict="no")
    with pytest.raises(ConfigurationError, match=r"'schema'.*'json', 'openapi'"):
        toolwire.tools(TOOLSET, "gemini", schema="yaml")
    with pytest.raises(ConfigurationError, match="cache_control"):
        toolwire.tools(TOOLSET, "anthropic", cache_control="first")


def test_declaration_options_are_fixed_by_the_listing() -> None:
    listing = toolwire.tools(TOOLSET, "openai-chat")
    response = get_provider("openai-chat").response_for(CALLS)
    with pytest.raises(ConfigurationError, match="strict: fixed when the tools were declared"):
        anyio.run(lambda: toolwire.execute_tool_calls(listing, response, strict=False))
    outcome = anyio.run(
        lambda: toolwire.execute_tool_calls(listing, response, error_prefix="Failed: ")
    )
    assert outcome.results[1]["content"].startswith("Failed: ")


# -- the strict null contract ------------------------------------------------------------------


@toolwire.tool
def count(x: int = 5) -> int:
    """Echo x."""
    return x


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses"])
def test_a_null_is_left_out_only_where_strict_mode_made_the_argument_nullable(
    provider: str,
) -> None:
    adapter = get_provider(provider)
    response = adapter.response_for([("c1", "count", {"x": None})])
    strict = toolwire.tools([count], provider)
    assert strict.null_paths == {"count": (("x",),)}
    outcome = anyio.run(toolwire.execute_tool_calls, strict, response)
    assert outcome.calls[0].result.text == "5"
    loose = toolwire.tools([count], provider, strict=False)
    assert loose.null_paths == {}
    outcome = anyio.run(toolwire.execute_tool_calls, loose, response)
    assert outcome.calls[0].result.error_kind == "invalid_arguments"
    # The older form with the same option parses the same way.
    outcome = anyio.run(
        lambda: toolwire.execute_tool_calls([count], provider, response, strict=False)
    )
    assert outcome.calls[0].result.error_kind == "invalid_arguments"


# -- listings per principal --------------------------------------------------------------------


@toolwire.tool
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


@toolwire.tool
def delete_all() -> str:
    """Delete everything."""
    return "gone"


def test_a_listing_leaves_out_what_the_policy_denies_that_principal_outright() -> None:
    policy = Policy(
        Rule("deny", "delete_all"),
        Rule("deny", "refund", when=lambda c: c.principal != "admin"),
        Rule("deny", "search", when=tainted_by("web")),  # depends on the call: kept
        Rule("ask", "ping"),
    )
    toolset = ToolSet([search, refund, ping, delete_all])
    guest = toolwire.tools(toolset, "openai-chat", principal="guest", policy=policy)
    names = [entry["function"]["name"] for entry in guest.tools]
    assert names == ["search", "ping"]  # the toolset's order, and the asking tool stays
    assert set(guest.left_out) == {"refund", "delete_all"}
    admin = toolwire.tools(toolset, "openai-chat", principal="admin", policy=policy)
    assert [e["function"]["name"] for e in admin.tools] == ["search", "refund", "ping"]
    # A call to a tool left out is answered like any unknown tool, and never runs.
    response = get_provider("openai-chat").response_for([("c1", "refund", {"order": "o1"})])
    outcome = anyio.run(
        lambda: toolwire.execute_tool_calls(guest, response, principal="guest", policy=policy)
    )
    assert outcome.calls[0].result.error_kind == "not_found"
    assert "Available tools: search, ping." in outcome.calls[0].result.text
    # A listing's principal is the turn's when none is given.
    as_admin = anyio.run(lambda: toolwire.execute_tool_calls(admin, response, policy=policy))
    assert as_admin.calls[0].result.text == "refunded o1"


def test_a_condition_that_reads_the_call_never_leaves_a_tool_out() -> None:
    policy = Policy(
        Rule("deny", "refund", when=lambda c: c.arguments["order"] == "x"),
        Rule("allow", "search", when=lambda c: "web" in c.taint),
        Rule("deny", "ping", when=lambda c: 1 / 0),  # raises: not known before a call
        default="deny",
    )
    listing = toolwire.tools([search, refund, ping], "gemini", policy=policy)
    # refund: no allow rule can match and the default denies, so it is left out.
    assert set(listing.left_out) == {"refund", "ping"}
    assert [d["name"] for d in listing.tools[0]["functionDeclarations"]] == ["search"]


# -- limits and taint ---------------------------------------------------------------------------


def test_a_listing_above_the_providers_tool_limit_warns_and_check_reports_it() -> None:
    many = [Tool(name=f"t{i}", description="A tool.") for i in range(129)]
    with pytest.warns(ToolwireWarning, match="129 tools.*at most 128"):
        toolwire.tools(many, "openai-chat")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        toolwire.tools(many, "gemini")  # 512
    assert set(limits(many)) == {"openai-chat", "openai-responses"}
    assert limits(many[:128]) == {}


def test_the_outcome_carries_the_taint_of_the_sources_that_answered() -> None:
    web = Tool(name="fetch", description="Fetch.", handler=lambda: "page", taints=["web"])
    plain = Tool(name="add", description="Add.", handler=lambda: "2")
    listing = toolwire.tools([web, plain], "anthropic")
    provider = get_provider("anthropic")
    first = anyio.run(
        toolwire.execute_tool_calls, listing, provider.response_for([("a", "add", {})])
    )
    assert first.taint == frozenset()
    second = anyio.run(
        lambda: toolwire.execute_tool_calls(
            listing, provider.response_for([("b", "fetch", {}), ("c", "nope", {})]), taint={"x"}
        )
    )
    assert second.taint == {"x", "web"}


def test_a_function_tool_names_its_taints() -> None:
    @toolwire.tool(taints="web")
    def fetch(url: str) -> str:
        """Fetch a page."""
        return "page"

    assert fetch.taints == {"web"}
    listing = toolwire.tools([fetch], "gemini")
    response = get_provider("gemini").response_for([("g1", "fetch", {"url": "u"})])
    assert anyio.run(toolwire.execute_tool_calls, listing, response).taint == {"web"}


# -- a server that went down ---------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_tool_of_a_server_that_went_down_is_answered_unavailable(tmp_path: Path) -> None:
    flag = tmp_path / "down"
    # The server starts while the flag is absent: once it is there, it cannot come back.
    script = f'test -e "{flag}" && exit 1; exec "{sys.executable}" "{SERVERS}" crasher'
    server = StdioServer(command="sh", args=["-c", script], env=dict(os.environ))
    async with Hub({"crash": server}, max_backoff=60) as hub:
        assert hub.status == {"crash": None}
        before = toolwire.tools(hub, "anthropic")
        assert "crash__echo" in before.toolset
        flag.touch()
        provider = get_provider("anthropic")
        await toolwire.execute_tool_calls(before, provider.response_for([("t1", "crash__die", {})]))
        with anyio.fail_after(30):
            while hub.status["crash"] is None:
                await anyio.sleep(0.05)
        now = toolwire.tools(hub, "anthropic")
        assert now.tools is None  # nothing left to declare: absent, not []
        echo = provider.response_for([("t2", "crash__echo", {"text": "hi"})])
        outcome = await toolwire.execute_tool_calls(now, echo)
        legacy = await toolwire.execute_tool_calls(hub, "anthropic", echo)
        stale = await toolwire.execute_tool_calls(before, echo)  # the listing the model saw
    for result in (outcome, legacy, stale):
        assert result.calls[0].result.error_kind == "unavailable", result.calls[0].result.text
        assert result.results[0]["is_error"] is True
    assert "crash" in outcome.calls[0].result.text
    assert "Unknown tool" not in outcome.calls[0].result.text


def test_check_asks_every_registered_provider() -> None:
    (report, _) = check(TOOLSET)
    assert [v.provider for v in report.verdicts] == provider_names()


@pytest.mark.anyio
async def test_a_servers_tools_taint_with_the_server_and_its_declared_sources() -> None:
    from toolwire.mcp import InProcessServer

    sys.path.insert(0, str(SERVERS.parent))
    from mcp_servers import catalogue  # type: ignore[import-not-found]

    async with Hub({"shop": InProcessServer(server=catalogue(), taints="web")}) as hub:
        listing = toolwire.tools(hub, "gemini")
        response = get_provider("gemini").response_for([("g1", "shop__add", {"a": 1, "b": 2})])
        outcome = await toolwire.execute_tool_calls(listing, response)
    assert outcome.calls[0].result.text == "3"
    assert outcome.taint == {"shop", "web"}
