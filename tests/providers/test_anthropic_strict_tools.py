"""Strict tool use on the Messages API (``strict=True``): real tools declared strict in the SDK's
own type, the null a strict schema made the model send stripped before the call, tools that
cannot be strict sent without it and why, the request's budgets spent in toolset order, and
what ``assess`` (``toolwire check``) says."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

import toolwire
from corpus import TOOLS
from toolwire import ConfigurationError, SchemaConversionError, Tool, ToolSet
from toolwire.compat import check
from toolwire.providers import get_provider, make_options
from toolwire.providers.anthropic import AnthropicOptions
from toolwire.schema.checks import anthropic_strict_budget_violations, anthropic_violations

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
TOOL_PARAMS = pydantic.TypeAdapter(list[anthropic_types.ToolParam])
PROVIDER = get_provider("anthropic")


def not_strict(tools: Any, *, strict: bool = True) -> dict[str, str]:
    """Per exposed name, why a tool of ``tools`` is declared without strict."""
    return PROVIDER.declare(ToolSet.of(tools), AnthropicOptions(strict=strict)).not_strict


@toolwire.tool
def search(query: str, limit: int = 5, tag: str | None = None) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
        tag: Only items with this tag.
    """
    return f"{query}|{limit}|{tag}"


@toolwire.tool
def count(x: int = 5) -> int:
    """Echo x."""
    return x


RESERVE = Tool(
    name="reserve",
    description="Reserve a table.",
    input_schema={
        "type": "object",
        "properties": {
            "when": {"type": "string", "format": "date-time"},
            "party": {"type": "integer", "minimum": 1, "maximum": 12},
            "guest": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "phone": {"type": "string"}},
                "required": ["name"],
            },
        },
        "required": ["when", "party"],
    },
)
HEADERS = Tool(
    name="fetch",
    description="Fetch a page.",
    input_schema={
        "type": "object",
        "properties": {
            "url": {"type": "string"},
            "headers": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["url"],
    },
)


def optional_tool(name: str, optional: int, *, unions: int = 0) -> Tool:
    """A tool with ``optional`` optional string parameters and ``unions`` required union-typed
    ones (already closed: nothing else to convert)."""
    properties: dict[str, Any] = {f"o{i}": {"type": "string"} for i in range(optional)}
    properties |= {f"u{i}": {"type": ["string", "integer"]} for i in range(unions)}
    return Tool(
        name=name,
        description="A tool.",
        input_schema={
            "type": "object",
            "properties": properties,
            "required": [f"u{i}" for i in range(unions)],
            "additionalProperties": False,
        },
        handler=lambda **arguments: repr(sorted(arguments)),
    )


def strict_names(listing: Any) -> list[str]:
    return [t["name"] for t in listing.tools if t.get("strict") is True]


# -- declaring ----------------------------------------------------------------------------------


def test_real_tools_are_declared_strict_in_the_sdks_own_type() -> None:
    listing = toolwire.tools([search, RESERVE, HEADERS], "anthropic", strict=True)
    TOOL_PARAMS.validate_python(listing.tools)
    assert listing.tools == [
        {
            "name": "search",
            "description": "Search the catalogue.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "title": "Query",
                        "description": "What to look for.",
                    },
                    "limit": {
                        "type": "integer",
                        "default": 5,
                        "title": "Limit",
                        "description": "How many results.",
                    },
                    # The null of a null default: leaving the argument out says it.
                    "tag": {
                        "type": "string",
                        "title": "Tag",
                        "description": "Only items with this tag.",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "strict": True,
        },
        {
            "name": "reserve",
            "description": "Reserve a table.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "when": {"type": "string", "format": "date-time"},
                    "party": {"type": "integer", "description": "(minimum: 1; maximum: 12)"},
                    "guest": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}, "phone": {"type": "string"}},
                        "required": ["name"],
                        "additionalProperties": False,
                    },
                },
                "required": ["when", "party"],
                "additionalProperties": False,
            },
            "strict": True,
        },
        {  # an open map: sent as without strict, with no strict key
            "name": "fetch",
            "description": "Fetch a page.",
            "input_schema": HEADERS.input_schema,
        },
    ]
    assert anthropic_strict_budget_violations(listing.tools) == []
    for tool in listing.tools:
        assert anthropic_violations(tool["input_schema"], strict="strict" in tool) == []
    entries = listing.declaration.entries
    assert [entries[n].strict for n in entries] == [True, True, False]
    assert listing.null_paths == {}


def test_without_strict_nothing_changes() -> None:
    strict = toolwire.tools([search, RESERVE], "anthropic", strict=True).tools
    plain = toolwire.tools([search, RESERVE], "anthropic").tools
    assert plain == toolwire.tools([search, RESERVE], "anthropic", strict=False).tools
    assert all("strict" not in t for t in plain)
    assert [t["name"] for t in plain] == [t["name"] for t in strict]
    assert plain[1]["input_schema"] == RESERVE.input_schema


def test_a_schema_strict_tool_use_cannot_express_is_sent_without_strict_saying_why() -> None:
    assert not_strict([search, HEADERS]) == {
        "fetch": "#/properties/headers: an open map (additionalProperties) cannot be strict"
    }
    assert not_strict([search, HEADERS], strict=False) == {}


def test_cache_control_and_strict_both_mark_the_last_tool() -> None:
    (tool,) = toolwire.tools([count], "anthropic", strict=True, cache_control="last").tools
    assert tool["strict"] is True
    assert tool["cache_control"] == {"type": "ephemeral"}


def test_strict_is_an_option_checked_and_fixed_by_the_listing() -> None:
    with pytest.raises(ConfigurationError, match=r"'strict'.*True or False"):
        toolwire.tools([count], "anthropic", strict="yes")
    listing = toolwire.tools([count], "anthropic", strict=True)
    response = PROVIDER.response_for([("t1", "count", {})])
    with pytest.raises(ConfigurationError, match="strict: fixed when the tools were declared"):
        anyio.run(lambda: toolwire.execute_tool_calls(listing, response, strict=False))


# -- the null contract ----------------------------------------------------------------------------


def test_a_null_sent_where_strict_made_the_argument_nullable_is_stripped_before_the_call() -> None:
    # The first tool spends the request's 24 optional parameters: count's optional x is made
    # required and nullable instead, so the model sends null for "left out".
    toolset = ToolSet([optional_tool("wide", 24), count])
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert strict_names(listing) == ["wide", "count"]
    assert listing.null_paths == {"count": (("x",),)}
    declared = listing.tools[1]["input_schema"]
    assert declared["properties"]["x"]["type"] == ["integer", "null"]
    assert declared["required"] == ["x"]
    assert anthropic_strict_budget_violations(listing.tools) == []
    response = PROVIDER.response_for([("t1", "count", {"x": None}), ("t2", "count", {"x": 2})])
    outcome = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert [c.result.text for c in outcome.calls] == ["5", "2"]
    # Parsing goes through the declaration: the call carries the paths to strip.
    calls = PROVIDER.parse(response, PROVIDER.declare(toolset, AnthropicOptions(strict=True)))
    assert all(isinstance(c, toolwire.ToolCall) for c in calls)
    assert [c.null_paths for c in calls] == [(("x",),), (("x",),)]
    # The older form, with the option, parses the same way.
    legacy = anyio.run(
        lambda: toolwire.execute_tool_calls(toolset, "anthropic", response, strict=True)
    )
    assert legacy.calls[0].result.text == "5"
    # Declared without strict, nothing is nullable: a null is an invalid argument.
    loose = toolwire.tools(toolset, "anthropic")
    assert loose.null_paths == {}
    refused = anyio.run(toolwire.execute_tool_calls, loose, response)
    assert refused.calls[0].result.error_kind == "invalid_arguments"


def test_an_argument_left_out_of_a_strict_call_gets_its_default() -> None:
    listing = toolwire.tools([search], "anthropic", strict=True)
    response = PROVIDER.response_for([("t1", "search", {"query": "lamps"})])
    outcome = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert outcome.calls[0].result.text == "lamps|5|None"


# -- the request's budgets, spent in toolset order ----------------------------------------------


def test_past_twenty_strict_tools_the_rest_are_sent_without_strict() -> None:
    toolset = ToolSet([optional_tool(f"t{i}", 0) for i in range(21)])
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert strict_names(listing) == [f"t{i}" for i in range(20)]
    assert "strict" not in listing.tools[20]
    assert not_strict(toolset) == {
        "t20": "the request has 20 strict tools already, the most it takes"
    }
    assert anthropic_strict_budget_violations(listing.tools) == []


def test_past_twenty_four_optional_parameters_they_are_made_nullable_while_unions_last() -> None:
    toolset = ToolSet([optional_tool(f"t{i}", 5) for i in range(5)])  # 25 optional in all
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert strict_names(listing) == ["t0", "t1", "t2", "t3", "t4"]
    assert listing.null_paths == {"t4": tuple((f"o{i}",) for i in range(5))}
    assert anthropic_strict_budget_violations(listing.tools) == []
    response = PROVIDER.response_for([("c1", "t4", {f"o{i}": None for i in range(5)})])
    outcome = anyio.run(toolwire.execute_tool_calls, listing, response)
    assert outcome.calls[0].result.text == "[]"  # every null stripped: nothing was sent


def test_a_tool_past_both_budgets_alone_is_sent_without_strict() -> None:
    toolset = ToolSet([optional_tool("huge", 25), count])
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert strict_names(listing) == ["count"]
    assert not_strict(toolset) == {
        "huge": "past the request's budget for strict schemas: it needs 25 optional and 0 "
        "union-typed parameters (or 25 union-typed, its optional ones made nullable), and 24 "
        "of 24 optional and 16 of 16 union-typed are left"
    }


def test_past_sixteen_union_typed_parameters_the_rest_are_sent_without_strict() -> None:
    toolset = ToolSet([optional_tool(f"t{i}", 0, unions=1) for i in range(17)])
    listing = toolwire.tools(toolset, "anthropic", strict=True)
    assert strict_names(listing) == [f"t{i}" for i in range(16)]
    assert "past the request's budget" in not_strict(toolset)["t16"]
    assert anthropic_strict_budget_violations(listing.tools) == []
    # Toolset order decides: the same tools the other way round leave out the other one.
    backwards = ToolSet(list(reversed(list(toolset))))
    assert set(not_strict(backwards)) == {"t0"}


# -- what assess and toolwire check say ---------------------------------------------------------


def test_assess_says_whether_a_tool_is_strict_and_why_not() -> None:
    options = AnthropicOptions(strict=True)
    closed = PROVIDER.assess(optional_tool("closed", 2), options)
    assert closed.status == "accepted"  # strict as it is
    reserve = PROVIDER.assess(RESERVE, options)
    assert reserve.status == "converted"
    assert reserve.notes == (
        "strict: spends 2 of 24 optional and 0 of 16 union-typed parameters of a request",
        "dropped: maximum (1), minimum (1)",
        "added: additionalProperties (2), description (1)",  # the bounds, described
    )
    fetch = PROVIDER.assess(HEADERS, options)
    assert fetch.status == "converted"  # declared, without strict
    assert fetch.notes == (
        "sent without strict (#/properties/headers: an open map (additionalProperties) "
        "cannot be strict)",
    )
    huge = PROVIDER.assess(optional_tool("huge", 25), options)
    assert huge.notes[0].startswith("sent without strict (past the request's budget")


def test_check_shows_the_declaration_without_strict_by_default() -> None:
    (report,) = check([HEADERS], ["anthropic"])
    assert [v.status for v in report.verdicts] == ["accepted"]
    (report,) = check([RESERVE], ["anthropic"])
    assert report.verdicts[0].status == "accepted"


# -- the hub's declarations ----------------------------------------------------------------------


def test_every_corpus_tool_declarable_without_strict_is_declarable_with_it() -> None:
    # The MCP hub offers a tool only when it can be declared under each option set.
    assert {"strict": True} in PROVIDER.PROFILE.option_sets
    for record in TOOLS:
        tool = Tool(name="t", input_schema=record["inputSchema"])
        try:
            PROVIDER.declare(ToolSet([tool]), make_options(PROVIDER, {}))
        except SchemaConversionError:
            continue
        declared = PROVIDER.declare(ToolSet([tool]), make_options(PROVIDER, {"strict": True}))
        (entry,) = declared.tools
        assert anthropic_violations(entry["input_schema"], strict="strict" in entry) == []
