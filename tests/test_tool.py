from __future__ import annotations

import enum
import json
from collections.abc import Callable
from typing import Any, Literal

import jsonschema.validators
import pydantic
import pytest
import referencing
import referencing.exceptions
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from corpus import ALL_SCHEMAS, TOOLS, corpus_id
from toolwire import ConfigurationError, InvalidArguments, Tool, tool
from toolwire.schema._rewrite import for_validation


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Address(pydantic.BaseModel):
    street: str
    zip_code: str | None = None


@tool
def plan_trip(
    city: str,
    days: int = 3,
    mode: Literal["car", "train"] = "train",
    color: Color = Color.RED,
    stops: list[str] | None = None,
    home: Address | None = None,
) -> str:
    """Plan a trip.

    Longer explanation of the tool.

    Args:
        city: Where to go.
        days: How long to stay.
        mode: How to travel.
    """
    return f"{city} {days} {mode} {color.value} {stops} {home}"


def test_function_tool_schema_comes_from_type_hints_and_docstring() -> None:
    schema = plan_trip.input_schema
    assert plan_trip.name == "plan_trip"
    assert plan_trip.description == "Plan a trip.\n\nLonger explanation of the tool."
    assert schema["type"] == "object"
    assert schema["required"] == ["city"]
    props = schema["properties"]
    assert list(props) == ["city", "days", "mode", "color", "stops", "home"]
    assert props["city"]["description"] == "Where to go."
    assert props["days"] == {
        "default": 3,
        "description": "How long to stay.",
        "title": "Days",
        "type": "integer",
    }
    assert props["mode"]["enum"] == ["car", "train"]
    assert props["color"]["$ref"] == "#/$defs/Color"
    assert schema["$defs"]["Color"]["enum"] == ["red", "blue"]
    assert props["stops"]["anyOf"] == [
        {"items": {"type": "string"}, "type": "array"},
        {"type": "null"},
    ]
    assert "Address" in schema["$defs"]
    assert plan_trip.output_schema == {"type": "string"}


def test_function_tool_validation_converts_and_keeps_defaults() -> None:
    kwargs = plan_trip.validate_arguments(
        {"city": "Porto", "color": "blue", "home": {"street": "x"}}
    )
    assert kwargs["days"] == 3
    assert kwargs["color"] is Color.BLUE
    assert kwargs["home"] == Address(street="x")
    assert plan_trip.handler is not None
    assert plan_trip.handler(**kwargs).startswith("Porto 3 train blue")


def test_function_tool_validation_errors_name_each_field() -> None:
    with pytest.raises(InvalidArguments) as info:
        plan_trip.validate_arguments({"days": "many", "mode": "plane", "extra": 1})
    paths = {path for path, _ in info.value.errors}
    assert paths == {"$.city", "$.days", "$.mode", "$.extra"}
    assert info.value.tool == "plan_trip"


def test_async_function_becomes_a_tool() -> None:
    @tool(name="fetch", parallel_safe=False)
    async def fetch_url(url: str) -> str:
        """Fetch a URL."""
        return url

    assert fetch_url.name == "fetch"
    assert fetch_url.parallel_safe is False
    assert fetch_url.input_schema["required"] == ["url"]


def test_parameter_names_that_shadow_basemodel_attributes_work() -> None:
    @tool
    def odd(schema: str, model_config: int = 1, json: bool = False) -> str:
        """Echo the schema."""
        return schema

    assert set(odd.input_schema["properties"]) == {"schema", "model_config", "json"}
    assert odd.validate_arguments({"schema": "s"}) == {
        "schema": "s",
        "model_config": 1,
        "json": False,
    }


def test_function_without_parameters_has_an_empty_object_schema() -> None:
    @tool
    def ping() -> None:
        """Health check."""

    assert ping.input_schema == {"additionalProperties": False, "properties": {}, "type": "object"}
    assert ping.validate_arguments({}) == {}


def test_variadic_parameters_are_a_configuration_error() -> None:
    def bad(*args: int) -> None: ...

    with pytest.raises(ConfigurationError, match="keyword parameter"):
        tool(bad)


def test_raw_schema_tool_is_validated_by_json_schema() -> None:
    search = Tool(
        name="search",
        input_schema={
            "type": "object",
            "properties": {"q": {"type": "string", "minLength": 2}, "n": {"type": "integer"}},
            "required": ["q"],
        },
    )
    assert search.validate_arguments({"q": "ab", "n": 2}) == {"q": "ab", "n": 2}
    with pytest.raises(InvalidArguments) as info:
        search.validate_arguments({"q": "a", "n": "x"})
    assert [path for path, _ in info.value.errors] == ["$.n", "$.q"]


def test_tool_needs_a_name() -> None:
    with pytest.raises(ConfigurationError):
        Tool(name="")


def test_upper_case_gemini_style_types_are_validated_as_their_json_types() -> None:
    gemini_style = Tool(
        name="g", input_schema={"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}}
    )
    assert gemini_style.validate_arguments({"n": 2}) == {"n": 2}
    with pytest.raises(InvalidArguments) as info:
        gemini_style.validate_arguments({"n": "two"})
    assert info.value.errors[0][0] == "$.n"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}},
        {"type": "object", "properties": {"a": {"type": "string", "pattern": "("}}},
        {"type": "object", "properties": {"a": {"type": "nonsense"}}},
    ],
)
def test_a_schema_that_cannot_validate_is_a_configuration_error_naming_the_tool(
    schema: dict[str, object],
) -> None:
    broken = Tool(name="broken", server_id="srv", input_schema=schema)
    with pytest.raises(ConfigurationError, match="'srv/broken'"):
        broken.validate_arguments({"a": "x"})


# -- jsonschema-rs decides; on the rules both engines share, it agrees with the reference ------

_CORPUS_SAMPLE = [r for r in ALL_SCHEMAS if isinstance(r["inputSchema"], dict)][::12]
# Where the engines differ on purpose: formats are asserted, patterns are ECMA-262 (`$` is the
# very end, `\\d` is ASCII) and run in linear time.
_DIFFERENT_ON_PURPOSE = ('"pattern"', '"format"', '"patternProperties"')


def _refuse(uri: str) -> Any:
    raise referencing.exceptions.NoSuchResource(ref=uri)


def _reference_validator(schema: dict[str, Any]) -> Any:
    """The Python jsonschema validator for ``schema``, with retrieval refused."""
    cls: Any = jsonschema.validators.validator_for(
        schema, default=jsonschema.validators.Draft202012Validator
    )
    return cls(schema, registry=referencing.Registry(retrieve=_refuse))


def _arguments_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Objects over the schema's own property names with JSON values: mostly invalid, some
    valid, many near the boundary (wrong type, missing required, extra keys)."""
    names = sorted(schema.get("properties") or {}) or ["x"]
    scalars = (
        st.none()
        | st.booleans()
        | st.integers()
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text()
    )
    values = st.recursive(
        scalars,
        lambda inner: (
            st.lists(inner, max_size=3)
            | st.dictionaries(st.sampled_from(names) | st.text(max_size=4), inner, max_size=3)
        ),
        max_leaves=8,
    )
    return st.dictionaries(st.sampled_from(names) | st.text(max_size=4), values, max_size=6)


@pytest.mark.parametrize("record", _CORPUS_SAMPLE, ids=corpus_id)
def test_validation_agrees_with_the_reference_validator_on_the_rules_they_share(
    record: dict[str, Any], examples: Callable[[int], int]
) -> None:
    schema = record["inputSchema"]
    if for_validation(schema) is not schema or any(
        k in json.dumps(schema) for k in _DIFFERENT_ON_PURPOSE
    ):
        pytest.skip("validated by rules of its own (normalised, formats or patterns)")
    reference = _reference_validator(schema)
    subject = Tool(name="t", input_schema=schema)

    @settings(
        max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    @given(_arguments_for(schema))
    def check(arguments: dict[str, Any]) -> None:
        try:
            reference_errors = list(reference.iter_errors(arguments))
        except Exception:  # a schema the reference cannot use: not this test's question
            return
        if reference_errors:
            with pytest.raises(InvalidArguments):
                subject.validate_arguments(arguments)
        else:
            assert subject.validate_arguments(arguments) == arguments

    check()


def test_nearly_every_corpus_schema_can_validate_arguments() -> None:
    broken = []
    for record in TOOLS:
        try:
            Tool(name="t", input_schema=record["inputSchema"]).check_schema()
        except ConfigurationError as exc:
            broken.append(str(exc))
    # The few left have patterns the linear-time engine does not take (look-around).
    assert len(broken) / len(TOOLS) < 0.01, broken


def test_a_remote_reference_is_refused_unless_given_or_taken_as_unconstrained() -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}}
    # Taken as "anything", the reference would fail open: the tool is refused, naming it.
    with pytest.raises(
        ConfigurationError, match=r"references 'https://example.com/x.json' at #/properties/a"
    ):
        Tool(name="t", input_schema=schema)
    # Given, the document is what the reference names (never fetched).
    given = Tool(
        name="t", input_schema=schema, resources={"https://example.com/x.json": {"type": "integer"}}
    )
    assert given.validate_arguments({"a": 1}) == {"a": 1}
    with pytest.raises(InvalidArguments, match="is not of type"):
        given.validate_arguments({"a": [1]})
    # Asked for explicitly, the part it names takes any value (and is still never fetched).
    loose = Tool(name="t", input_schema=schema, external_refs="unconstrained")
    assert loose.validate_arguments({"a": [1]}) == {"a": [1]}


def test_the_json_schema_meta_schemas_are_known_documents() -> None:
    meta = "https://json-schema.org/draft/2020-12/schema"
    schema = {"type": "object", "properties": {"schema": {"$ref": meta}}}
    tool = Tool(name="t", input_schema=schema)  # the validator has them built in
    assert tool.validate_arguments({"schema": {"type": "string"}})
    with pytest.raises(InvalidArguments):
        tool.validate_arguments({"schema": {"type": 12}})


def test_a_reference_into_tuple_items_follows_them_to_prefix_items() -> None:
    schema = {
        "type": "object",
        "properties": {
            "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]},
            "first": {"$ref": "#/properties/pair/items/0"},
        },
    }
    made = Tool(name="t", input_schema=schema, handler=lambda **_: None)
    assert made.validate_arguments({"pair": ["a", 1], "first": "x"})
    with pytest.raises(InvalidArguments, match=r"\$\.first"):
        made.validate_arguments({"first": 3})
    import toolwire

    for provider in ("anthropic", "openai-chat", "openai-responses"):
        sent = json.dumps(toolwire.tools([made], provider).tools)
        assert "#/properties/pair/prefixItems/0" in sent
        assert "pair/items/0" not in sent
