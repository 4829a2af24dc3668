"""A tool's example arguments (``input_examples``): checked against its own schema when the
tool is made, kept immutable and in its definition hash, sent as Anthropic's
``input_examples`` (in the SDK's own type, filled where strict made an argument nullable),
folded into the description for the other providers, and said so by ``toolwire check``."""

from __future__ import annotations

from typing import Any

import pytest

import toolwire
from toolwire import ConfigurationError, Tool
from toolwire.compat import check
from toolwire.tool import tool_from_definition

pydantic = pytest.importorskip("pydantic")
anthropic_types = pytest.importorskip("anthropic.types")
TOOL_PARAMS = pydantic.TypeAdapter(list[anthropic_types.ToolParam])

EXAMPLES = [{"city": "Oslo", "days": 3}, {"city": "Rome"}]


def forecast_tool(examples: Any = ()) -> Tool:
    @toolwire.tool(input_examples=examples)
    def forecast(city: str, days: int = 1) -> str:
        """Forecast the weather."""
        return f"{city}: sunny for {days} day(s)"

    return forecast


def test_examples_are_checked_against_the_tools_own_schema_and_kept_immutable() -> None:
    given = [dict(example) for example in EXAMPLES]
    tool = forecast_tool(given)
    given[0]["city"] = "changed"
    assert tool.input_examples == tuple(EXAMPLES)
    with pytest.raises(ConfigurationError, match="input example 1 does not fit its schema"):
        forecast_tool([{"city": 3}])
    with pytest.raises(ConfigurationError, match="input example 2 does not fit its schema"):
        forecast_tool([{"city": "Oslo"}, {"days": 2}])  # city is required
    with pytest.raises(ConfigurationError, match="input example 1 is not an object"):
        forecast_tool(["Oslo"])
    with pytest.raises(ConfigurationError, match="list of objects"):
        Tool(name="t", input_examples={"city": "Oslo"})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="takes no input_examples"):
        Tool(name="notes", kind="custom", input_examples=({"input": "x"},))
    raw = tool_from_definition(
        {
            "name": "lookup",
            "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
            "input_examples": [{"id": 7}],
        }
    )
    assert raw.input_examples == ({"id": 7},)
    with pytest.raises(ConfigurationError, match="does not fit"):
        tool_from_definition(
            {
                "name": "lookup",
                "input_schema": {"type": "object", "properties": {"id": {"type": "integer"}}},
                "input_examples": [{"id": "seven"}],
            }
        )


def test_examples_are_part_of_the_definition_a_decision_was_made_for() -> None:
    plain, shown = forecast_tool(), forecast_tool(EXAMPLES)
    assert plain.definition_hash != shown.definition_hash
    assert forecast_tool(EXAMPLES).definition_hash == shown.definition_hash


def test_anthropic_takes_them_in_its_own_field() -> None:
    (declared,) = toolwire.tools([forecast_tool(EXAMPLES)], "anthropic").tools
    TOOL_PARAMS.validate_python([declared])
    assert declared["input_examples"] == EXAMPLES
    assert declared["description"] == "Forecast the weather."


def optional_strings(name: str, count: int, **fields: Any) -> Tool:
    properties = {f"o{i}": {"type": "string"} for i in range(count)}
    schema = {"type": "object", "properties": properties, "additionalProperties": False}
    return Tool(name=name, description="A tool.", input_schema=schema, **fields)


def test_strict_fills_the_arguments_it_made_nullable() -> None:
    """Past the request's 24 optional parameters, strict makes the last tool's optional ones
    required and nullable: an example leaving one out would not fit, so it is given as null."""
    spent = [optional_strings(f"t{i}", 5) for i in range(4)]  # 20 optional
    last = optional_strings("last", 5, input_examples=({"o1": "x"},))
    listing = toolwire.tools([*spent, last], "anthropic", strict=True)
    assert listing.null_paths["last"] == tuple((f"o{i}",) for i in range(5))
    declared = listing.tools[-1]
    assert declared["strict"] is True
    assert declared["input_examples"] == [
        {"o0": None, "o1": "x", "o2": None, "o3": None, "o4": None}
    ]
    TOOL_PARAMS.validate_python(listing.tools)


@pytest.mark.parametrize(
    "provider", ["gemini", "gemini-interactions", "openai-chat", "openai-responses"]
)
def test_elsewhere_they_are_folded_into_the_description_and_check_says_so(provider: str) -> None:
    listing = toolwire.tools([forecast_tool(EXAMPLES)], provider)
    text = repr(listing.tools)
    assert "Example arguments:" in text
    assert '{"city":"Oslo","days":3}' in text
    (report,) = check([forecast_tool(EXAMPLES)])
    verdict = next(v for v in report.verdicts if v.provider == provider)
    assert verdict.notes[0] == (
        "its 2 input examples folded into the description (the API takes none of its own)"
    )
    anthropic = next(v for v in report.verdicts if v.provider == "anthropic")
    assert not any("example" in note for note in anthropic.notes)


def test_a_tool_without_examples_is_declared_as_before() -> None:
    for provider in ["anthropic", "gemini", "openai-chat"]:
        assert "xample" not in repr(toolwire.tools([forecast_tool()], provider).tools)
